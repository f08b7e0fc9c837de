"""The ``contextmesh`` argument parser: every command, every option, each with a checked value type.

:class:`CliParser` turns argparse's print-usage-and-exit into a :class:`UsageError` (one line, exit
status 2, a JSON document under ``--json``). Options are spelled out in full (no abbreviations: an
abbreviation that works today becomes ambiguous when an option is added). ``--json`` is accepted
before or after the command.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any, NoReturn

from contextmesh.cli import (
    deploy_commands,
    extensions,
    ingest_command,
    ledger_commands,
    plan_rounds,
    project_commands,
    reads,
    rerun_command,
    writes,
)
from contextmesh.cli.failure import UsageError
from contextmesh.cli.options import (
    MAX_INTERVAL,
    MAX_ROUNDS,
    MAX_THREADS,
    MAX_WAIT,
    Count,
    EdgePolicy,
    EmbedderChoice,
    FilePath,
    IsoDate,
    Key,
    PathOption,
    Seconds,
    Text,
)
from contextmesh.project.config import PROJECT_FILE

__all__ = ["CliParser", "build_parser", "leaf_parsers"]

ROUNDS = Count("walk rounds", 0, MAX_ROUNDS)
THREADS = Count("threads", 1, MAX_THREADS)
WAIT = Seconds(MAX_WAIT)
INTERVAL = Seconds(MAX_INTERVAL)
SESSION_DIR = PathOption("an existing session directory", "existing-dir")
OUT_DIR = PathOption("the dashboard directory: absent, or a directory", "out-dir")
SERVE_DIR = PathOption("an existing project directory, or a checkout holding deployments/serve.py", "existing-dir")
PROJECT = PathOption(f"an existing project directory (one holding {PROJECT_FILE})", "existing-dir")
INIT_DIR = PathOption("the new project's directory: absent, empty, or a half-made project", "out-dir")
PORT = Count("the port", 1, 65535)
INGEST_SESSION = PathOption("a session directory: an existing session, or absent or empty for a new one", "out-dir")
DOCUMENT_PATH = FilePath("a document file or a folder of them, existing", "read-path")
ENTITIES_IN = FilePath("an existing entities file", "read-file")
ENTITIES_IN_DOC = FilePath("an existing Markdown or text file", "read-file")
ENTITIES_OUT = FilePath(
    "the entities file to write: a regular file, or a new name in an existing directory", "write-file"
)
INGEST_ROOT = PathOption("the folder document names are taken from: an existing directory", "existing-dir")
_ARGUMENT = re.compile(r"argument ([^:]+): ")


class CliParser(argparse.ArgumentParser):
    """An argparse parser whose errors are raised as :class:`UsageError` instead of printed with usage.

    A parser given a ``lazy_epilog`` callable builds its epilog only when its help is printed (the
    registered keys ``repair --help`` lists cost an import no other command should pay).
    """

    def format_help(self) -> str:
        lazy = getattr(self, "lazy_epilog", None)
        if callable(lazy):
            self.epilog = lazy()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        named = _ARGUMENT.match(message)
        path = named.group(1).split("/")[0] if named else None
        raise UsageError(f"{message} (see `{self.prog} --help`)", prog=self.prog, path=path)


if TYPE_CHECKING:
    Commands = argparse._SubParsersAction[CliParser]


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def leaf_parsers(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], CliParser]:
    """Every command that runs something, by its words (``("session", "save")``), found in the parser itself."""
    found: dict[tuple[str, ...], CliParser] = {}
    sub = _subparsers(parser)
    if prefix and parser.get_default("handler") is not None:
        assert isinstance(parser, CliParser)
        found[prefix] = parser
    if sub is not None:
        for name, child in sub.choices.items():
            found.update(leaf_parsers(child, (*prefix, name)))
    return found


def project_option(sub: argparse.ArgumentParser) -> None:
    """``--project DIR``: the project a command works on (default: the nearest contextmesh.toml above here)."""
    sub.add_argument(
        "--project",
        type=PROJECT,
        metavar="DIR",
        help=f"the project to work on (default: the nearest {PROJECT_FILE} at or above the working directory)",
    )


def embedder_option(sub: argparse.ArgumentParser) -> None:
    """``--embedder SPEC``: the embedder for this command (default: the project's ``[project] embedder``)."""
    sub.add_argument(
        "--embedder",
        type=EmbedderChoice(),
        metavar="SPEC",
        help="hashed, hashed-N, model:DIR or package:NAME (default: the project's embedder, else hashed);"
        " a session is asked and ingested with the embedder that built it",
    )


def _common(
    sub: argparse.ArgumentParser,
    *,
    rounds: int,
    with_session: str = "not with --session, its own",
    session_help: str = "the session to work on (default: the project's own)",
) -> None:
    project_option(sub)
    sub.add_argument("--session", type=SESSION_DIR, metavar="DIR", help=session_help)
    extensions.setting_options(sub, hidden=True)  # the bundled project's settings, with --session
    sub.add_argument(
        "--rounds",
        type=ROUNDS,
        metavar="N",
        help=f"walk rounds of the fixed question mix first, 0 to {MAX_ROUNDS} (default {rounds}; {with_session})",
    )


def _reading_commands(commands: Commands) -> None:
    commands.add_parser("schema", help="print the ontology GRAPH.md defines").set_defaults(handler=reads.schema)
    ask = commands.add_parser("ask", help="answer a question with the path the walk took, or name the dead end")
    ask.add_argument("question", type=Text("a question"), help="the question, in quotes")
    ask.add_argument("--as-of", type=IsoDate(), metavar="DATE", help="answer from the graph as it stood on YYYY-MM-DD")
    ask.add_argument("--policy", type=EdgePolicy(), metavar="TYPES", help="comma-separated edge types to follow")
    embedder_option(ask)
    _common(ask, rounds=0)
    ask.set_defaults(handler=reads.ask)
    health = commands.add_parser("health", help="what is quietly wrong with the graph")
    _common(health, rounds=8)
    health.set_defaults(handler=reads.health)
    exported = "write the dashboard's payload (and, with --inline, its page); commits nothing to a session"
    exp = commands.add_parser("export", help=exported, description=exported)
    exp.add_argument("--out", type=OUT_DIR, default="dashboard", metavar="DIR", help="the dashboard directory")
    exp.add_argument("--inline", action="store_true", help="embed the payload so index.html opens from file://")
    _common(
        exp,
        rounds=8,
        with_session="with --session, asked in memory only",
        session_help="the session to read (default: the project's own; read only: export never commits to it)",
    )
    exp.set_defaults(handler=reads.export)
    session = commands.add_parser("session", help="save, show or verify a session directory")
    actions = session.add_subparsers(dest="session_command", required=True, metavar="ACTION", parser_class=CliParser)
    show = actions.add_parser("show", help="describe a session directory")
    show.set_defaults(handler=reads.session_show)
    verify = actions.add_parser("verify", help="exit 0 only when the directory loads whole and its ledger verifies")
    verify.set_defaults(handler=reads.session_verify)
    for sub in (show, verify):
        sub.add_argument("dir", nargs="?", type=SESSION_DIR, help="the session directory (default: the project's own)")
        project_option(sub)
    for sub in (show, verify):
        extensions.setting_options(sub)


def _where_it_runs(sub: argparse.ArgumentParser, *, dispatches: bool = True) -> None:
    project_option(sub)
    sub.add_argument("--session", type=SESSION_DIR, metavar="DIR", help="the session (default: the project's own)")
    extensions.setting_options(sub, only_bundled=True)
    local_help = "run in this process, without Prefect"
    if not dispatches:
        sub.add_argument("--local", action="store_true", help=local_help)
        return
    where = sub.add_mutually_exclusive_group()
    where.add_argument("--local", action="store_true", help=local_help)
    where.add_argument(
        "--deployment",
        action="store_true",
        help="dispatch to the prefect.yaml deployments on PREFECT_API_URL (a work pool; no serve.py)",
    )
    sub.add_argument(
        "--wait",
        type=WAIT,
        metavar="SECONDS",
        help=f"how long to wait for a dispatched run (default 120, at most {MAX_WAIT:g})",
    )


def _threads(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--threads", type=THREADS, default=4, help=f"how many tasks of a layer run at once, 1 to {MAX_THREADS}"
    )


def _ingesting(commands: Commands) -> None:
    ing = commands.add_parser("ingest", help="read Markdown and text files into a session, incrementally")
    ing.add_argument(
        "paths", nargs="+", type=DOCUMENT_PATH, metavar="PATH", help="files and folders (folders are read recursively)"
    )
    ing.add_argument(
        "--session", type=INGEST_SESSION, metavar="DIR", help="the session to ingest into (created if new)"
    )
    ing.add_argument(
        "--entities", type=ENTITIES_IN, metavar="FILE", help="the entities file (default: the root's entities.json)"
    )
    ing.add_argument(
        "--root", type=INGEST_ROOT, metavar="DIR", help="name documents from here (default: the paths' folder)"
    )
    ing.add_argument("--dry-run", action="store_true", help="say what would be added, superseded and invalidated")
    embedder_option(ing)
    ing.add_argument(
        "--suggest-entities", type=ENTITIES_OUT, metavar="FILE", help="write an editable entities file instead"
    )
    extensions.setting_options(ing, hidden=True)  # a saved session's settings of the bundled project
    ing.set_defaults(handler=ingest_command.ingest)


def _dispatching(commands: Commands) -> None:
    served_help = "dispatched to the deployments serving the session, else one flow run here (--local: in-process)"
    ran = "one round of the project's plan, committed: a Prefect flow run (--local: in-process)"
    run = commands.add_parser("run", help=ran, description=ran)
    run.set_defaults(handler=plan_rounds.run)
    rechecked = (
        "run the standing auditors whose watched slice changed (and those that watch nothing) once and commit "
        "what they find (a disproof); " + served_help
    )
    rck = commands.add_parser("recheck", help=rechecked, description=rechecked)
    rck.add_argument("--full", action="store_true", help="run every standing auditor, whatever it watches")
    rck.set_defaults(handler=plan_rounds.recheck)
    resumed = "run only stale and pending work whose ground stands and commit it; " + served_help
    res = commands.add_parser("resume", help=resumed, description=resumed)
    res.set_defaults(handler=plan_rounds.resume)
    repaired = "ground a stale or failed task on new ground and a registered key, and commit it (runs no code)"
    rep = commands.add_parser(
        "repair",
        help=repaired,
        description=repaired,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the epilog is a list of keys and an example
    )
    rep.lazy_epilog = extensions.repair_epilog  # type: ignore[attr-defined]  # read by CliParser.format_help
    rep.add_argument("task", type=Key("a task name of the plan"), help="the task to repair: a task name of the plan")
    rep.add_argument(
        "--worker-key",
        type=Key("a registered worker key"),
        help="the key it runs from now on: a worker key of the project's registry (listed below)",
    )
    rep.add_argument(
        "--assumes",
        type=Text("the statement of its new ground"),
        required=True,
        help="the statement of its new ground, in quotes",
    )
    rep.set_defaults(handler=plan_rounds.repair)
    rerun = "re-run a task whose output is suspect and every done task downstream of it: " + served_help
    rer = commands.add_parser("rerun-from", help=rerun, description=rerun)
    rer.add_argument("task", type=Key("a task name of the plan"), help="the task whose output is suspect")
    rer.add_argument("--dry-run", action="store_true", help="say what would run (the closure), change nothing")
    rer.set_defaults(handler=rerun_command.rerun_from)
    _where_it_runs(run, dispatches=False)
    for sub in (rck, res, rep, rer):
        _where_it_runs(sub)
    for sub in (run, rck, res, rer):
        _threads(sub)
    _project_commands(commands)


def _serve_command(commands: Commands) -> None:
    srv = commands.add_parser("serve", help="serve a project's plan, recheck and repair deployments from this process")
    srv.add_argument("--session", type=SESSION_DIR, metavar="DIR", help="the session to serve (default: the project's)")
    extensions.setting_options(srv, only_bundled=True)
    srv.add_argument(
        "--interval",
        type=INTERVAL,
        metavar="SECONDS",
        help=f"recheck every (default: the project's recheck_interval, else 600; at most {MAX_INTERVAL:g})",
    )
    srv.add_argument(
        "--trigger",
        choices=("run-deployment", "automation"),
        help="with no project: deployments/serve.py's resume trigger",
    )
    srv.add_argument(
        "--project",
        type=SERVE_DIR,
        metavar="DIR",
        help=f"the project (a folder holding {PROJECT_FILE}); with none, a checkout holding deployments/serve.py",
    )
    srv.set_defaults(handler=writes.serve)
    dep = commands.add_parser("deploy", help="register a project's deployments on its process work pool")
    project_option(dep)
    dep.add_argument(
        "--session", type=SESSION_DIR, metavar="DIR", help="the session to deploy (default: the project's)"
    )
    dep.set_defaults(handler=deploy_commands.deploy)


def _project_commands(commands: Commands) -> None:
    init = commands.add_parser("init", help="make a runnable project: contextmesh.toml, a plan, documents, flows/")
    init.add_argument("dir", type=INIT_DIR, help="the project's directory (absent or empty)")
    init.add_argument("--name", type=Text("a project name", 63), help="the project's name (default: the folder's)")
    init.set_defaults(handler=project_commands.init)
    evidence = commands.add_parser("evidence", help="record what was observed, for the auditors' next recheck")
    actions = evidence.add_subparsers(dest="evidence_command", required=True, metavar="ACTION", parser_class=CliParser)
    add = actions.add_parser("add", help="record an observation from a source, or from the document it came from")
    add.add_argument("text", type=Text("the observation"), help="what was observed, in quotes")
    add.add_argument(
        "--source",
        type=Text("the source's origin or id"),
        help="where it lives: a URL, a path, mail:… (found, or recorded new), or a source node's id 'source:…'",
    )
    add.add_argument("--title", type=Text("the source's title"), help="with --source: a new source's title")
    add.add_argument("--document", type=ENTITIES_IN_DOC, metavar="FILE", help="instead: the document it came from")
    add.add_argument("--name", type=Text("a document name", 300), metavar="NAME", help="with --document: its name")
    add.set_defaults(handler=project_commands.evidence_add)
    blast = commands.add_parser("blast-radius", help="what an assumption's fall would take down; changes nothing")
    blast.add_argument(
        "assumption", type=Text("an assumption"), help="its id, its statement, a task of the plan, or part of one"
    )
    blast.set_defaults(handler=project_commands.blast_radius)
    for sub in (add, blast):
        project_option(sub)
        sub.add_argument("--session", type=SESSION_DIR, metavar="DIR", help="the session (default: the project's own)")


def _running_commands(commands: Commands) -> None:
    srv = commands.add_parser("server", help="start, check or stop the managed local Prefect server and its UI")
    srv.add_argument("action", choices=("start", "status", "stop"))
    srv.add_argument("--port", type=PORT, help="with start: the port to serve on (default: 4200, else a free one)")
    srv.set_defaults(handler=writes.server)


def build_parser() -> CliParser:
    """The whole command line."""
    parser = CliParser(prog="contextmesh", description="The contextmesh command line.", allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=CliParser)
    _reading_commands(commands)
    extensions.register_commands(commands)
    _running_commands(commands)
    _dispatching(commands)
    _serve_command(commands)
    ledger_commands.register(commands)
    _ingesting(commands)
    for each in _every_parser(parser):
        each.allow_abbrev = False
        each.add_argument(
            "--json", action="store_true", help="print one JSON document instead of text (also on failure)"
        )
    return parser


def _every_parser(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    sub = _subparsers(parser)
    children = [] if sub is None else list(sub.choices.values())
    return [parser, *(each for child in children for each in _every_parser(child))]

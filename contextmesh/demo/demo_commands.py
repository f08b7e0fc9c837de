"""The bundled demo's own commands, added to ``contextmesh`` through its project's extension hook.

``demo`` (the knowledge half, then the execution half: on Prefect by default), ``demo advisory``,
``execute``, ``invalidate`` and ``session save`` are this project's, not the engine's: the command
line calls :func:`register` as it would any project's ``[project] extension`` (ADR 0023), handing
in its :class:`Kit` — its option types, errors and renderers — so nothing here imports the command
line, and each handler returns ``(data for --json, text for a person)`` like every command's.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from statistics import median
from typing import Any, Protocol

from contextmesh import Assumptions, InProcessExecutor, InvalidationReport, Session, Walk
from contextmesh.demo.knowledge import DemoWorld, break_in_graph, break_sizing_assumption, build_world, load_demo

__all__ = ["FEED_RULE", "Kit", "register"]

FEED_RULE = "the advisory feed file: a regular file, or a new name in an existing directory tree"
SEEDS = (
    "Why did the Index Builder run out of memory?",
    "What made the sharding rule wrong?",
    "What is the refund policy for annual plans?",
)
CROSSING = "How does the Partitioned Rebuild split the work each night?"
Result = tuple[Any, str]


class Kit(Protocol):
    """What the command line hands a project's extension (``contextmesh.cli.kit.CliKit``)."""

    parser_class: type[argparse.ArgumentParser]
    rounds: Callable[[str], int]
    threads: Callable[[str], int]
    session_dir: Callable[[str], Path]
    new_session_dir: Callable[[str], Path]
    max_rounds: int
    progress: Callable[[str, int, int], None]

    def file(self, what: str) -> Callable[[str], Path]: ...
    def key(self, what: str) -> Callable[[str], str]: ...
    def text(self, what: str, limit: int) -> Callable[[str], str]: ...
    def project_option(self, sub: argparse.ArgumentParser) -> None: ...
    def usage_error(self, message: str, *, prog: str, path: str | None) -> Exception: ...
    def writing(self, what: str) -> AbstractContextManager[None]: ...
    def render(self, what: str, *args: Any, **options: Any) -> str: ...
    def health(self, graph: Any, resolver: Any, walker: Any) -> Any: ...
    def feed_next(self, feed: Path, since: float) -> tuple[list[dict[str, Any]], str]: ...


def register(commands: Any, kit: Kit) -> None:
    """Add the demo's commands to ``commands`` (an argparse sub-parser table)."""
    handlers = _Handlers(kit)
    feed = kit.file(FEED_RULE)
    demo = commands.add_parser("demo", help="the demo: a graph built, walked and broken, then its plan run on Prefect")
    demo.add_argument(
        "--rounds", type=kit.rounds, metavar="N", help=f"walk rounds first, 0 to {kit.max_rounds} (default 8)"
    )
    _execution_options(
        demo,
        kit,
        "where the execution half runs: Prefect flow runs (default; a local server is "
        "started and kept when none is configured) or this process",
    )
    demo.set_defaults(handler=handlers.demo)
    advisory = demo.add_subparsers(dest="demo_command", metavar="SUBCOMMAND", parser_class=kit.parser_class)
    adv = advisory.add_parser("advisory", help="publish or withdraw an advisory in the demo's feed file")
    adv.add_argument("action", choices=("publish", "withdraw"))
    adv.add_argument("package", type=kit.key("a package name"), help="the package the advisory is about")
    adv.add_argument("text", nargs="?", type=kit.text("the advisory's text", 4000), help="its text (publish only)")
    adv.add_argument("--feed", type=feed, required=True, help="the feed file the deployment names")
    adv.set_defaults(handler=handlers.advisory)
    _invalidate(commands, kit, handlers, feed)
    execute = commands.add_parser("execute", help="run the demo plan, break its ground, repair, rerun only what fell")
    execute.add_argument("--feed", type=feed, help="the advisory feed file (default: a fresh temporary one)")
    _execution_options(
        execute,
        kit,
        "run every round as a Prefect flow run (default; starts a local server when "
        "none is configured) or in this process without Prefect",
    )
    execute.add_argument(
        "--session", type=kit.session_dir, metavar="DIR", help="work on a saved session and commit through it"
    )
    execute.set_defaults(handler=handlers.execute)


def _execution_options(sub: argparse.ArgumentParser, kit: Kit, where: str) -> None:
    sub.add_argument("--threads", type=kit.threads, default=4, help="how many tasks of a layer run at once")
    sub.add_argument("--executor", choices=("prefect", "in-process"), default="prefect", help=where)


def _invalidate(commands: Any, kit: Kit, handlers: _Handlers, feed: Callable[[str], Path]) -> None:
    inv = commands.add_parser("invalidate", help="reject the demo's sizing assumption through evidence")
    inv.add_argument("--dry-run", action="store_true", help="report what would fall; change nothing")
    kit.project_option(inv)
    inv.add_argument("--session", type=kit.session_dir, metavar="DIR", help="a saved demo session to commit through")
    inv.add_argument("--feed", type=feed, help=argparse.SUPPRESS)  # a saved session's auditor feed
    inv.add_argument("--rounds", type=kit.rounds, metavar="N", help="walk rounds first (default 8; not with --session)")
    inv.set_defaults(handler=handlers.invalidate)
    session = commands.choices["session"]
    actions = next(a for a in session._actions if isinstance(a, argparse._SubParsersAction))
    save = actions.add_parser("save", help="save the demo, with its plan executed, as a new session")
    save.add_argument("dir", type=kit.new_session_dir, help="the new session directory (absent or empty)")
    save.add_argument("--rounds", type=kit.rounds, default=8, metavar="N", help="walk rounds before saving")
    save.add_argument("--feed", type=feed, help="the demo advisory feed (default under $CONTEXTMESH_HOME)")
    save.set_defaults(handler=handlers.session_save)


class _Handlers:
    """Each command's handler, over the kit the command line handed in."""

    def __init__(self, kit: Kit) -> None:
        self.kit = kit

    def _world(self, args: argparse.Namespace) -> DemoWorld:
        return build_world(8 if args.rounds is None else int(args.rounds), progress=self.kit.progress)

    def _refuse(self, message: str, prog: str, path: str) -> Exception:
        return self.kit.usage_error(message, prog=f"contextmesh {prog}", path=path)

    def demo(self, args: argparse.Namespace) -> Result:
        """``contextmesh demo``: build, walk, three questions, the break, health — then the plan on Prefect."""
        from contextmesh.demo.demo_story import ServerWarmup, execution_half  # noqa: PLC0415

        warmup = ServerWarmup()
        if args.executor == "prefect":
            warmup.start()  # the server starts while the graph builds
        data, text = self._knowledge_half(args)
        warmup.join()
        executed, more = execution_half(self.kit, executor=args.executor, threads=args.threads, warmed=warmup.started)
        return {**data, "execution": executed}, f"{text}\n\n{more}"

    def _knowledge_half(self, args: argparse.Namespace) -> Result:
        render, world = self.kit.render, self._world(args)
        walker = world.walker
        walks = [walker.ask(q) for q in SEEDS]
        ratios = walker.token_ratios()
        before = walker.ask(CROSSING)
        report = break_sizing_assumption(world)
        after = walker.ask(CROSSING)
        health = self.kit.health(world.graph, world.result.resolver, walker)  # no plan runs on this graph
        counts = world.graph.type_counts(live_only=False)
        middle = median(ratios) if ratios else 0.0
        data = {
            "build": world.result.report.to_dict(),
            "nodes": counts,
            "edges": world.graph.edge_counts(live_only=False),
            "rounds": world.walk_rounds,
            "walks": [w.to_dict() for w in walks],
            "token_ratio_median": middle,
            "invalidation": report.to_dict(),
            "before_break": before.to_dict(),
            "after_break": after.to_dict(),
            "health": health.to_dict(),
        }
        lines = [
            f"ContextMesh demo · {sum(counts.values())} nodes, {len(world.graph.edges)} edges · "
            f"{world.walk_rounds} walk rounds",
            "",
            render("build", world.result.report),
            "",
        ]
        lines += [part for walk in walks for part in (render("walk", walk), "")]
        lines.append(
            f"TOKENS median path/flat over {len(ratios)} answered walks: {middle:.2%} "
            "(path tokens against flat top-k of the same corpus, words × 1.3)"
        )
        lines += ["", "THE GROUND MOVED", render("invalidation", report), ""]
        lines += ["A QUESTION WHOSE PATH CROSSED WHAT FELL", "before:", _walk(render, before), "after:"]
        lines += [_walk(render, after), "", self._lineage(world, report), "", render("health", health)]
        return data, "\n".join(lines)

    def _lineage(self, world: DemoWorld, report: InvalidationReport) -> str:
        return self.kit.render("lineage", Assumptions(world.graph), report.assumption_id)

    def invalidate(self, args: argparse.Namespace) -> Result:
        """``contextmesh invalidate``: reject the demo's sizing assumption through evidence."""
        from contextmesh.demo.saved import open_demo_session  # noqa: PLC0415

        self._demo_only(args)
        render = self.kit.render
        if args.session is not None:
            session = open_demo_session(args.session, feed=args.feed)
            corpus, sidecar = load_demo()
            if args.dry_run:
                report = break_in_graph(session.graph, dry_run=True, corpus=corpus, sidecar=sidecar)
                return report.to_dict(), render("invalidation", report, dry_run=True)
            report = session.apply(lambda s: break_in_graph(s.graph, corpus=corpus, sidecar=sidecar))
            lineage = render("lineage", Assumptions(session.graph), report.assumption_id)
            text = f"{render('invalidation', report)}\n{lineage}\n(session generation {session.generation})"
            return report.to_dict(), text
        world = self._world(args)
        report = break_sizing_assumption(world, dry_run=args.dry_run)
        text = render("invalidation", report, dry_run=args.dry_run)
        return report.to_dict(), text if args.dry_run else f"{text}\n{self._lineage(world, report)}"

    def _demo_only(self, args: argparse.Namespace) -> None:
        """Refuse what ``invalidate`` would silently ignore: a project, --rounds with --session, --feed without it."""
        if args.project is not None:
            raise self._refuse(
                f"--project {str(args.project)!r}: `invalidate` breaks the bundled demo's own sizing assumption; "
                "on a project, record evidence (`contextmesh evidence add`) and let its auditors recheck",
                "invalidate",
                "--project",
            )
        if args.session is not None and args.rounds is not None:
            raise self._refuse(
                f"--rounds {args.rounds} builds the demo graph; with --session the session's own rounds are used",
                "invalidate",
                "--rounds",
            )
        if args.session is None and args.feed is not None:
            raise self._refuse(
                f"--feed {str(args.feed)!r} is the feed of a saved session's auditor; it goes with --session",
                "invalidate",
                "--feed",
            )

    def session_save(self, args: argparse.Namespace) -> Result:
        """``contextmesh session save DIR``: the demo, plan round 1 executed, as generation 1 of a new session."""
        from contextmesh.demo.saved import save_demo_session  # noqa: PLC0415

        with self.kit.writing(f"the new session {args.dir}"):
            session = save_demo_session(args.dir, rounds=args.rounds, feed=args.feed)
        data = session.describe()
        return data, f"saved the demo (plan round 1 executed) to {args.dir} as generation {session.generation}"

    def execute(self, args: argparse.Namespace) -> Result:
        """``contextmesh execute``: the demo plan, its ground broken, repaired, rerun — on Prefect or in-process."""
        from contextmesh.demo.transcript import render_walkthrough  # noqa: PLC0415

        round_text = self._round_text
        if args.executor == "prefect":
            from contextmesh.demo.on_prefect import execute_on_prefect  # noqa: PLC0415 - Prefect only there

            walk, note = execute_on_prefect(args.session, args.feed, threads=args.threads)
            text = render_walkthrough(walk, round_text, urls=walk.urls)
            if walk.session_dir is not None:
                text += f"\n(session {walk.session_dir})"
            return walk.to_dict(), text + (f"\n{note}" if note else "")
        from contextmesh.demo.execute import run_session_walkthrough, run_walkthrough  # noqa: PLC0415

        executor = InProcessExecutor(width=args.threads)
        if args.session is not None:
            session = self._session(args)
            done = run_session_walkthrough(session, feed=args.feed, executor=executor)
            text = render_walkthrough(done, round_text) + f"\n(session generation {session.generation})"
            return done.to_dict(), text
        done = run_walkthrough(feed=args.feed, executor=executor)
        return done.to_dict(), render_walkthrough(done, round_text)

    def _round_text(self, report: Any, **options: Any) -> str:
        return self.kit.render("round", report, **options)

    def _session(self, args: argparse.Namespace) -> Session:
        from contextmesh.demo.saved import open_demo_session  # noqa: PLC0415

        return open_demo_session(args.session, feed=args.feed)

    def advisory(self, args: argparse.Namespace) -> Result:
        """``contextmesh demo advisory publish|withdraw PACKAGE [TEXT] --feed FILE``."""
        from contextmesh.demo.auth import publish, withdraw  # noqa: PLC0415

        prog = "demo advisory"
        if getattr(args, "rounds", None) is not None:
            raise self._refuse(f"--rounds {args.rounds} is the demo's; an advisory builds no graph", prog, "--rounds")
        since = time.time()
        if args.action == "publish":
            if args.text is None:
                raise self._refuse("publish needs the advisory's text after the package", prog, "text")
            with self.kit.writing(f"the advisory feed {args.feed}"):
                advisories = publish(args.feed, args.package, args.text)
            text = f"published an advisory for {args.package} to {args.feed}"
        else:
            if args.text is not None:
                raise self._refuse("withdraw takes no text: it removes every advisory for the package", prog, "text")
            with self.kit.writing(f"the advisory feed {args.feed}"):
                advisories = withdraw(args.feed, args.package)
            text = f"withdrew every advisory for {args.package} from {args.feed}"
        found, said = self.kit.feed_next(args.feed, since)
        return {"feed": str(args.feed), "advisories": advisories, "next": found}, f"{text}\n{said}"


def _walk(render: Callable[..., str], walk: Walk) -> str:
    return render("walk", walk)

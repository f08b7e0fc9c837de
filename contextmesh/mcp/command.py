"""The ``contextmesh-mcp`` command line: its arguments, their usage rules, and the session they name.

:mod:`contextmesh.mcp.server` runs the command (``main``); this module holds what needs no MCP SDK.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextmesh.core.errors import ContextMeshError
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.mcp.connections import ConnectionLimits
from contextmesh.mcp.exposure import TOKEN_ENV
from contextmesh.mcp.served_session import ServedSession
from contextmesh.mcp.write_dispatch import Dispatcher
from contextmesh.project.binding import flat_baseline
from contextmesh.project.bundled import bundled_project, extension_of, setting_options
from contextmesh.session.session import POLICIES, Session

__all__ = ["DEFAULT_PORT", "PROG", "bundled_extension", "check", "given_settings", "open_served", "parser"]

PROG = "contextmesh-mcp"
DEFAULT_PORT = 8765


def parser() -> argparse.ArgumentParser:
    """The arguments of ``contextmesh-mcp``."""
    built = argparse.ArgumentParser(
        prog=PROG, description="Serve a ContextMesh graph over MCP (stdio, or HTTP: loopback unless --allow-remote)."
    )
    which = built.add_mutually_exclusive_group()
    which.add_argument(
        "--demo", action="store_true", help="build the bundled example project's graph for this process (ephemeral)"
    )
    built.add_argument(
        "--session", type=Path, metavar="DIR", help="serve a saved session directory (with --project: of that project)"
    )
    which.add_argument(
        "--project",
        type=Path,
        metavar="DIR",
        help="serve a project's session (its own, or --session DIR) with the project's registry",
    )
    built.add_argument(
        "--dispatch",
        choices=("auto", "never"),
        default="auto",
        help="with --project: send mesh_recheck and mesh_resume to `contextmesh serve` when it serves the session",
    )
    built.add_argument(
        "--dispatch-wait",
        type=float,
        metavar="SECONDS",
        help="with --project: how long a dispatched recheck or resume is waited for (default 60)",
    )
    built.add_argument("--save", type=Path, metavar="DIR", help="with --demo: write it as a session and exit")
    built.add_argument("--rounds", type=int, metavar="N", help="with --demo: walk rounds to run (default 8)")
    for name, what in setting_options().items():  # the bundled project's settings, for --demo --save
        built.add_argument(
            f"--{name}", type=Path, metavar="FILE", help=f"with --demo --save: the bundled example project's {what}"
        )
    built.add_argument(
        "--checkpoint", choices=POLICIES, help="with --session: when asks are committed (default every-ask)"
    )
    built.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    built.add_argument("--host", default="127.0.0.1", help="HTTP: the address to bind (default 127.0.0.1)")
    built.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"HTTP: the port (default {DEFAULT_PORT}; 0 = any)"
    )
    built.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST:PORT",
        help="HTTP: another Host header to accept (e.g. a published port); loopback at --port always is",
    )
    built.add_argument(
        "--allow-remote",
        action="store_true",
        help="HTTP: allow a --host beyond loopback (0.0.0.0, a LAN address); needs a bearer token",
    )
    built.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help=f"HTTP: the bearer token every request must carry (default: ${TOKEN_ENV}, if set)",
    )
    built.add_argument(
        "--read-timeout",
        type=float,
        default=ConnectionLimits().read_timeout,
        metavar="SECONDS",
        help="HTTP: how long a client has to send each whole request before it is cut off (default 10)",
    )
    return built


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Usage errors argparse cannot see (``parser.error`` exits 2 with one line)."""
    if not (args.demo or args.session is not None or args.project is not None):
        parser.error("say what is served: --demo, --session DIR or --project DIR")
    if args.demo and args.session is not None:
        parser.error("argument --session: not allowed with argument --demo")
    if args.project is None and (args.dispatch != "auto" or args.dispatch_wait is not None):
        parser.error("--dispatch and --dispatch-wait work with --project (a launcher passes its own dispatcher)")
    if args.dispatch_wait is not None and not (math.isfinite(args.dispatch_wait) and 0 < args.dispatch_wait <= 86400):
        parser.error(f"--dispatch-wait {args.dispatch_wait:g}: a number of seconds above 0, at most 86400")
    if args.session is not None or args.project is not None:
        for flag, value in (("--save", args.save), ("--rounds", args.rounds)):
            if value is not None:
                parser.error(f"{flag} works with --demo only")
    if args.demo:
        if args.checkpoint is not None:
            parser.error("--checkpoint works with --session only: a --demo graph is never written back")
        for name in given_settings(args):
            if args.save is None:
                parser.error(f"--{name} works with --demo --save (the ephemeral --demo graph holds no plan)")
        if args.rounds is not None and args.rounds < 0:
            parser.error("--rounds is a whole number from 0")
    if not 0 <= args.port <= 65535:
        parser.error("--port is 0..65535")
    if not (math.isfinite(args.read_timeout) and 0 < args.read_timeout <= 3600):
        parser.error(f"--read-timeout {args.read_timeout:g}: a number of seconds above 0, at most 3600")
    if args.transport != "http":
        for flag, given in (("--allow-remote", args.allow_remote), ("--token-file", args.token_file is not None)):
            if given:
                parser.error(f"{flag} works with --transport http only")


def _project_served(
    args: argparse.Namespace,
    *,
    registry: TaskRegistry | None,
    dispatcher: Dispatcher | None,
    say: Callable[[str], None],
) -> ServedSession:
    """``--project DIR``: its session (its own, made on first use, or ``--session``), its registry, and
    the deployments ``contextmesh serve`` serves it from — or, said loudly, this process."""
    from contextmesh.project.project import load_project  # noqa: PLC0415

    project = load_project(args.project)
    directory = args.session if args.session is not None else project.ensure_session()
    if registry is not None:
        raise ContextMeshError(f"--project {args.project}: the project's own registry is used; a launcher passes none")
    session = project.open_session(directory, policy=args.checkpoint or "every-ask")
    if dispatcher is None and args.dispatch == "auto" and session.runner is not None:
        dispatcher = _served_dispatcher(directory, args.dispatch_wait)
        if dispatcher is None:
            from contextmesh.core.home import contextmesh_home  # noqa: PLC0415

            say(
                f"no `contextmesh serve` serves {directory} (no live served record under "
                f"{contextmesh_home() / 'served'}; is CONTEXTMESH_HOME the one `serve` runs with?): mesh_recheck "
                "and mesh_resume run IN THIS PROCESS; pass --dispatch never to say that is meant"
            )
        else:
            say(f"`contextmesh serve` serves {directory}: mesh_recheck and mesh_resume dispatch to {dispatcher.name}")
    source = f"project {project.name} ({project.file}), session {directory}"
    return ServedSession(session, ephemeral=False, source=source, dispatcher=dispatcher)


def _served_dispatcher(directory: Path, wait: float | None) -> Dispatcher | None:
    try:
        from contextmesh.mcp.deployment_dispatcher import dispatcher_for  # noqa: PLC0415 - Prefect's client
    except ImportError:
        return None
    return dispatcher_for(directory, wait=wait)


def open_served(
    args: argparse.Namespace,
    *,
    registry: TaskRegistry | None = None,
    dispatcher: Dispatcher | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> ServedSession:
    """The served session the arguments name (``--demo``, ``--session`` or ``--project``)."""
    if args.demo:
        rounds = 8 if args.rounds is None else args.rounds
        session = bundled_extension("example_session")(rounds)  # only --demo pays for the build
        return ServedSession(session, ephemeral=True, source=f"the bundled demo corpus ({rounds} walk rounds)")
    if args.project is not None:
        return _project_served(args, registry=registry, dispatcher=dispatcher, say=say)
    directory: Path = args.session
    try:
        session = Session.load(directory, registry=registry, policy=args.checkpoint or "every-ask")
    except ContextMeshError as exc:
        if registry is None and "execution plan" in str(exc):
            raise ContextMeshError(
                f"{directory} holds an execution plan, whose keys only the deployment's registry gives meaning; "
                "serve it through a launcher that supplies it (deployments/serve_mcp.py), never a bare "
                f"{PROG}"
            ) from None
        raise
    return ServedSession(_with_flat(session), ephemeral=False, source=str(directory), dispatcher=dispatcher)


def _with_flat(session: Session) -> Session:
    """``session`` with the bundled project's flat baseline when it is one of its sessions (the rule the
    CLI's loader follows: without it a walk reports ``flat_tokens`` 0)."""
    if session.flat is None:
        flat = flat_baseline(bundled_project(), session)
        if flat is not None:
            session.flat = flat
            session.walker.flat = flat
    return session


def given_settings(args: argparse.Namespace) -> dict[str, Path]:
    """The bundled project's settings this command line set, by name."""
    return {name: value for name in setting_options() if (value := getattr(args, name, None)) is not None}


def bundled_extension(part: str) -> Any:
    """A part of the bundled example project's extension (ADR 0023), refused when it has none."""
    found = getattr(extension_of(bundled_project()), part, None)
    if not callable(found):
        raise ContextMeshError(f"the bundled example project's extension has no {part!r}; serve a --session DIR")
    return found

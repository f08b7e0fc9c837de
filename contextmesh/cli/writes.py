"""The commands that run the demo or Prefect itself: execute, server, serve, demo advisory.

The rounds of a project's plan (``run``, ``recheck``, ``resume``, ``repair``) are
:mod:`contextmesh.cli.plan_rounds`. A Prefect API is checked to answer before anything is
dispatched to it, so an unreachable one is one refusal naming the address, not a connection
traceback. Prefect is imported only here, lazily.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from contextmesh.cli.failure import UsageError, writing
from contextmesh.cli.projects import Using
from contextmesh.cli.reads import open_session
from contextmesh.core.errors import ExecutionError
from contextmesh.project.config import PROJECT_FILE
from contextmesh.project.project import INIT_HINT, Project, find_project, load_project, project_file

__all__ = ["advisory", "execute", "serve", "server"]


def execute(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh execute``: the demo plan, its ground broken, repaired, rerun — on Prefect or in-process."""
    from contextmesh.cli.render import render_walkthrough  # noqa: PLC0415

    if args.executor == "prefect":
        return _execute_on_prefect(args)
    from contextmesh.demo.execute import run_session_walkthrough, run_walkthrough  # noqa: PLC0415
    from contextmesh.execution.in_process import InProcessExecutor  # noqa: PLC0415

    executor = InProcessExecutor(width=args.threads)
    if args.session is not None:
        session = open_session(args)
        walk = run_session_walkthrough(session, feed=args.feed, executor=executor)
        return walk.to_dict(), render_walkthrough(walk) + f"\n(session generation {session.generation})"
    walk = run_walkthrough(feed=args.feed, executor=executor)
    return walk.to_dict(), render_walkthrough(walk)


def _execute_on_prefect(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.cli.render import render_walkthrough  # noqa: PLC0415
    from contextmesh.cli.walkthroughs import execute_on_prefect  # noqa: PLC0415 - Prefect only there

    walk, note = execute_on_prefect(args.session, args.feed, threads=args.threads)
    text = render_walkthrough(walk, urls=walk.urls)
    if walk.session_dir is not None:
        text += f"\n(session {walk.session_dir})"
    return walk.to_dict(), text + (f"\n{note}" if note else "")


def server(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh server start [--port N]|status|stop``."""
    from contextmesh.orchestration.commands import server_command  # noqa: PLC0415 - Prefect's side only here

    if args.port is not None and args.action != "start":
        raise UsageError(
            f"--port {args.port} chooses where `server start` listens; `server {args.action}` finds the running one",
            prog="contextmesh server",
            path="--port",
        )
    return server_command(args.action, port=args.port)


def _served_project(args: argparse.Namespace) -> Project | None:
    """The project ``serve`` serves: ``--project DIR`` holding a contextmesh.toml, else the nearest one above."""
    if args.project is None:
        return find_project()
    return load_project(args.project) if project_file(args.project).exists() else None


def serve(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh serve``: a project's deployments from this process; with no project, the bundled
    demo's ``deployments/serve.py`` (checked, then exec'd) in ``--project DIR`` or here."""
    import os  # noqa: PLC0415

    project = _served_project(args)
    if project is not None:
        from contextmesh.cli.deploy_commands import serve_project  # noqa: PLC0415

        return serve_project(args, Using(project, False))
    from contextmesh.orchestration.deployed import require_api  # noqa: PLC0415
    from contextmesh.orchestration.local_server import configured_api_url  # noqa: PLC0415
    from contextmesh.orchestration.served_record import peek  # noqa: PLC0415

    if args.session is None:
        raise UsageError(
            f"serving the bundled demo needs --session DIR (no {PROJECT_FILE} here or above; {INIT_HINT})",
            prog="contextmesh serve",
            path="--session",
        )
    script = (Path(args.project or ".") / "deployments" / "serve.py").resolve()
    if not script.is_file():
        raise ExecutionError(
            f"{script} does not exist: `contextmesh serve` runs the deployment's deployments/serve.py — run it "
            "from the project root or name it with --project DIR"
        )
    peek(str(args.session))  # a broken session is refused here, naming the file, before serve.py starts a server
    api_url = configured_api_url()
    if api_url:
        require_api(api_url)
    argv = [sys.executable, str(script), "--session", str(args.session.resolve())]
    argv += ["--interval", f"{args.interval or 600:g}", "--trigger", args.trigger or "run-deployment"]
    if args.feed is not None:
        argv += ["--feed", str(args.feed.resolve())]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)  # noqa: S606 - replaces this process: serve.py is the deployment's code, never imported


def advisory(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh demo advisory publish|withdraw PACKAGE [TEXT] --feed FILE``."""
    from contextmesh.demo.auth import publish, withdraw  # noqa: PLC0415

    prog = "contextmesh demo advisory"
    if getattr(args, "rounds", None) is not None:
        raise UsageError(
            f"--rounds {args.rounds} is the demo's; an advisory builds no graph", prog=prog, path="--rounds"
        )
    since = time.time()
    if args.action == "publish":
        if args.text is None:
            raise UsageError("publish needs the advisory's text after the package", prog=prog, path="text")
        with writing(f"the advisory feed {args.feed}"):
            advisories = publish(args.feed, args.package, args.text)
        text = f"published an advisory for {args.package} to {args.feed}"
    else:
        if args.text is not None:
            raise UsageError(
                "withdraw takes no text: it removes every advisory for the package", prog=prog, path="text"
            )
        with writing(f"the advisory feed {args.feed}"):
            advisories = withdraw(args.feed, args.package)
        text = f"withdrew every advisory for {args.package} from {args.feed}"
    found, said = _feed_next(args.feed, since)
    return {"feed": str(args.feed), "advisories": advisories, "next": found}, f"{text}\n{said}"


def _feed_next(feed: Path, since: float) -> tuple[list[dict[str, Any]], str]:
    """What follows a feed change: each serving process watching it started a recheck, or none watches it."""
    from contextmesh.orchestration.what_next import after_feed  # noqa: PLC0415 - no Prefect: files only

    found = after_feed(feed, since)
    if not found:
        return [], (
            "  next: no `contextmesh serve --feed` watches this feed, so nothing rechecks yet: run "
            f"`contextmesh recheck --session DIR --feed {feed}`, or serve the session with this --feed"
        )
    return [n.to_dict() for n in found], "\n".join(f"  next: session {n.session_id}: {n.text}" for n in found)

"""The commands that run Prefect itself: server, serve.

The rounds of a project's plan (``run``, ``recheck``, ``resume``, ``repair``) are
:mod:`contextmesh.cli.plan_rounds`. A Prefect API is checked to answer before anything is
dispatched to it, so an unreachable one is one refusal naming the address, not a connection
traceback. Prefect is imported only here, lazily.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from contextmesh.cli.extensions import given_settings
from contextmesh.cli.failure import UsageError
from contextmesh.cli.projects import Using
from contextmesh.core.errors import ExecutionError
from contextmesh.project.config import PROJECT_FILE
from contextmesh.project.project import INIT_HINT, Project, find_project, load_project, project_file

__all__ = ["serve", "server"]


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
    """``contextmesh serve``: a project's deployments from this process; with no project, the
    checkout's ``deployments/serve.py`` for the bundled project (checked, then exec'd) in ``--project DIR``
    or here, handed the bundled project's settings the command line set."""
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
            f"serving the bundled example project needs --session DIR (no {PROJECT_FILE} here or above; {INIT_HINT})",
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
    for name, value in given_settings(args).items():
        argv += [f"--{name}", str(value.resolve())]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)  # noqa: S606 - replaces this process: serve.py is the deployment's code, never imported

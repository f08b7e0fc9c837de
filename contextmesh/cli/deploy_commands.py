"""``contextmesh deploy`` and ``contextmesh serve`` on a project: its deployments, without copying a file.

Both name the deployments after the project and its session (ADR 0009 §4:
``contextmesh-plan/<prefix>-<8 hex of the session id>`` and the same for recheck and repair) and use
the project's own ``flows/`` entrypoints, which bind its registry from its ``contextmesh.toml``.

* ``deploy`` registers them on the project's process work pool (created when missing), the recheck
  on the project's schedule, and says how to start a worker;
* ``serve`` serves them from this process until Ctrl-C or SIGTERM — the laptop way — writing the
  session's served record so ``recheck``, ``repair``, ``resume`` and the MCP server dispatch there.

With no project, ``serve`` is the bundled demo's ``deployments/serve.py`` (``contextmesh.cli.writes``)
and ``deploy`` refuses, naming ``contextmesh init``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from contextmesh.cli.failure import UsageError
from contextmesh.cli.projects import Using, session_of, using
from contextmesh.project.project import Project

__all__ = ["deploy", "serve_project"]


def _with_interval(args: argparse.Namespace, project: Project) -> Project:
    interval = getattr(args, "interval", None)
    if interval is None:
        return project
    deploy = dataclasses.replace(project.deploy, recheck_interval=float(interval))
    return Project(dataclasses.replace(project.config, deploy=deploy), project.overrides)


def _refuse_demo_options(args: argparse.Namespace, where: Using) -> None:
    for option in ("feed", "trigger"):
        value = getattr(args, option, None)
        if value is not None:
            raise UsageError(
                f"--{option} {str(value)!r} is the bundled demo's serve.py option; project {where.project.name!r} "
                f"({where.project.file}) deploys from its own contextmesh.toml",
                prog=f"contextmesh {args.command}",
                path=f"--{option}",
            )


def deploy(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh deploy``: the project's three deployments on its process work pool."""
    where = using(args)
    if where.bundled:
        from contextmesh.project.config import ProjectError  # noqa: PLC0415
        from contextmesh.project.project import INIT_HINT  # noqa: PLC0415

        raise ProjectError(
            "--project", "no project here or above", f"`contextmesh deploy` deploys a project: {INIT_HINT}"
        )
    project = where.project
    directory = session_of(args, where)
    from contextmesh.orchestration.commands import prefect_for_command  # noqa: PLC0415
    from contextmesh.orchestration.project_deployments import deploy_to_pool, identify  # noqa: PLC0415

    named = identify(project, directory)
    with prefect_for_command() as handle:
        ids = deploy_to_pool(project, named)
        api_url = handle.api_url
    pool = project.deploy.work_pool
    data = {**named.to_dict(), "work_pool": pool, "deployment_ids": ids, "api_url": api_url}
    lines = [f"deployed project {project.name!r} session {named.session_id} on {api_url}, work pool {pool!r}:"]
    lines += [f"  {role:<8} {named.full(role)}" for role in ("plan", "recheck", "repair")]
    lines.append(f"  recheck every {project.deploy.recheck_interval:g} s; runs start when a worker polls the pool:")
    lines.append(f"  PREFECT_API_URL={api_url} prefect worker start --pool {pool} --type process")
    if handle.note:
        lines.append(f"  ({handle.note})")
    return data, "\n".join(lines)


def serve_project(args: argparse.Namespace, where: Using) -> tuple[Any, str]:
    """``contextmesh serve`` on a project: until Ctrl-C or SIGTERM, then what was served."""
    from contextmesh.orchestration.project_deployments import identify, serve_project  # noqa: PLC0415

    _refuse_demo_options(args, where)
    project = _with_interval(args, where.project)
    directory = session_of(args, where)
    named = identify(project, directory)

    def say(text: str) -> None:
        sys.stderr.write(f"contextmesh serve: {text}\n")
        sys.stderr.flush()

    serve_project(project, directory, say=say)
    return {**named.to_dict(), "stopped": True}, f"stopped serving {named.name}"

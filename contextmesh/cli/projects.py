"""Which project a command works on, and which session of it: ``--project DIR``, else the nearest
``contextmesh.toml`` at or above the working directory, else the bundled example project
(:mod:`contextmesh.project.bundled`).

Falling back to the bundled example project is said, as the first line on stderr after the command succeeds
(stdout stays the command's answer, and a failure stays one line): see :func:`note` and
``contextmesh.cli.run``. The bundled project names no session of its own, so a command that works on a
session and was given none refuses there, naming ``contextmesh init``.

Sessions are opened through the project (:mod:`contextmesh.project`): for writing with its registry
(:func:`writer`), or for reading with no registry at all (:func:`reader`), which is how ``session
show|verify``, ``health``, ``export`` and ``blast-radius`` read a session whose keys this project
cannot resolve.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextmesh.cli.failure import UsageError
from contextmesh.core.errors import SnapshotError
from contextmesh.project.config import PROJECT_FILE, ProjectError
from contextmesh.project.project import INIT_HINT, Project, find_project, load_project

if TYPE_CHECKING:
    from contextmesh.session.session import Session

__all__ = ["Using", "note", "notes", "reader", "session_of", "using", "writer"]


@dataclass(frozen=True)
class Using:
    """The project a command works on; ``bundled`` when it is the bundled example because none was found."""

    project: Project
    bundled: bool

    def describe(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {**self.project.describe(), "bundled": self.bundled}


def note(args: argparse.Namespace, text: str) -> None:
    """A line for stderr once the command has succeeded (never on a failure, which is one line)."""
    if not hasattr(args, "notes"):
        args.notes = []
    if text not in args.notes:
        args.notes.append(text)


def notes(args: argparse.Namespace) -> list[str]:
    """The lines :func:`note` collected."""
    return list(getattr(args, "notes", []))


def _prog(args: argparse.Namespace) -> str:
    subcommands = ("session_command", "evidence_command")
    words = [args.command] + [getattr(args, name) for name in subcommands if getattr(args, name, None)]
    return "contextmesh " + " ".join(words)


def using(args: argparse.Namespace) -> Using:
    """The project of ``--project DIR`` or the working directory, else the bundled example project (said)."""
    from contextmesh.cli.extensions import given_settings  # noqa: PLC0415
    from contextmesh.project.bundled import bundled_project  # noqa: PLC0415 - only when there is no project

    named = getattr(args, "project", None)
    found = load_project(named) if named is not None else find_project()
    given = given_settings(args)
    if found is not None:
        for name, value in given.items():
            raise UsageError(
                f"--{name} {str(value)!r} is a setting of the bundled example project; project {found.name!r} "
                f"({found.file}) reads its own [settings]",
                prog=_prog(args),
                path=f"--{name}",
            )
        return Using(found, False)
    bundled = bundled_project(given)
    note(
        args,
        f"contextmesh: no {PROJECT_FILE} in {Path.cwd()} or above it: the bundled demo project ({bundled.name}); "
        f"{INIT_HINT} to make your own",
    )
    return Using(bundled, True)


def session_of(args: argparse.Namespace, where: Using) -> Path:
    """The session directory a command works on: ``--session``, else the project's own (made on first use)."""
    named: Path | None = getattr(args, "session", None)
    if named is not None:
        return named
    if where.bundled:
        raise ProjectError(
            str(Path.cwd()),
            f"no {PROJECT_FILE} here or above, and no --session DIR",
            f"`{_prog(args)}` works on a project's session: {INIT_HINT}, or name a session with --session DIR",
        )
    return where.project.ensure_session()


def writer(args: argparse.Namespace, where: Using, *, policy: str = "every-ask") -> Session:
    """The session, loaded for writing with the project's registry."""
    directory = session_of(args, where)
    return where.project.open_session(directory, policy=policy)


def reader(args: argparse.Namespace, where: Using) -> Session:
    """The session, loaded to read only, with no registry (its keys need not resolve here)."""
    return where.project.open_readonly(session_of(args, where))


def unresolvable(exc: SnapshotError) -> bool:
    """True when a load was refused only because a key of the plan is not in the registry."""
    return exc.path.endswith(("worker_key", "auditor_key")) and "every key must be registered here" in exc.rule

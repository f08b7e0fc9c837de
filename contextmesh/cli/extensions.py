"""Where the command line meets projects' extensions (ADR 0023): their commands, their setting options.

Everything here goes through :mod:`contextmesh.project.bundled`, the one seam to the bundled example
project, and through the extension hook any project may name:

* :func:`register_commands` — the bundled project's own commands, then the found project's
  (``register(commands, kit)``, handed :data:`~contextmesh.cli.kit.KIT`);
* :func:`setting_options` — ``--NAME FILE`` for each setting the bundled project lets a command line
  set, and :func:`given_settings`, what a parsed command line set;
* :func:`repair_epilog` — ``repair --help``'s list: the worker keys of the project found here, or
  of the bundled project when there is none, and an example built from them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from contextmesh.cli.options import FilePath
from contextmesh.project.bundled import bundled_project, extension_of
from contextmesh.project.bundled import setting_options as bundled_options
from contextmesh.project.config import PROJECT_FILE, ProjectError
from contextmesh.project.project import Project

__all__ = ["given_settings", "register_commands", "repair_epilog", "setting_options"]


def register_commands(commands: Any) -> None:
    """Add the bundled project's own commands, then those of the project found here (its extension's
    ``register``). A command word already taken is refused, naming the project's extension."""
    from contextmesh.cli.kit import KIT  # noqa: PLC0415
    from contextmesh.project.project import find_project  # noqa: PLC0415

    projects = [bundled_project()]
    try:
        found = find_project()
    except ProjectError:
        found = None  # a broken contextmesh.toml: the command itself reports it, in one line
    if found is not None and found.config.extension is not None:
        projects.append(found)
    for project in projects:
        register = getattr(extension_of(project), "register", None)
        if not callable(register):
            continue
        try:
            register(commands, KIT)
        except argparse.ArgumentError as exc:
            raise ProjectError(
                f"{project.file}:project.extension", str(exc), "a project's commands use words no other command has"
            ) from None


def setting_options(sub: argparse.ArgumentParser, *, hidden: bool = False, only_bundled: bool = False) -> None:
    """``--NAME FILE`` for each setting of the bundled project a command line may set."""
    for name, what in bundled_options().items():
        shown = f"the bundled example project's {name}: {what}" + (" (only with no project)" if only_bundled else "")
        sub.add_argument(f"--{name}", type=FilePath(what, "write-file"), help=argparse.SUPPRESS if hidden else shown)


def given_settings(args: argparse.Namespace) -> dict[str, Path]:
    """The settings of the bundled project this command line set, by name."""
    return {name: value for name in bundled_options() if (value := getattr(args, name, None)) is not None}


def _example(project: Project, workers: list[str]) -> tuple[str, str]:
    """A task of the plan and a registered key to repair it onto: preferably a key no task runs yet,
    onto the task whose key it is most like (a sibling implementation); else the first task's own."""
    from contextmesh.core.graph import ContextGraph  # noqa: PLC0415

    tasks = [(t.name, t.worker_key) for t in project.new_plan(ContextGraph()).tasks.values() if t.worker_key]
    if not tasks:
        return "TASK", workers[0] if workers else "KEY"
    unused = [key for key in workers if key not in {key for _, key in tasks}]
    if not unused:
        return tasks[0][0], str(tasks[0][1])
    likeness = [(_shared(key, str(own)), -i, name, key) for key in unused for i, (name, own) in enumerate(tasks)]
    _, _, name, key = max(likeness)
    return name, key


def _shared(one: str, other: str) -> int:
    """How many leading characters two keys share."""
    return next((i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other)))


def repair_epilog() -> str:
    """The worker keys of the project here (the bundled one when there is none) and an example from them."""
    from contextmesh.project.project import find_project  # noqa: PLC0415

    try:
        found = find_project()
    except Exception:  # help must print; the command itself reports a broken project
        found = None
    project = found or bundled_project()
    workers = list(project.registry().describe()["workers"])
    whose = f"project {project.name!r}" if found is not None else f"the bundled example project ({project.name})"
    task, example = _example(project, workers)
    return "\n".join(
        [
            f"worker keys the registry of {whose} holds:",
            *(f"  {key}" for key in workers),
            f"(a project's keys are those its {PROJECT_FILE} [project] registry registers; a served session",
            " resolves keys in the registry of the deployments serving it)",
            "",
            "example:",
            f"  contextmesh repair {task} --worker-key {example} \\",
            "      --assumes 'the statement of its new ground' --session DIR",
            "  contextmesh resume --session DIR     # runs the repaired task and what needs it",
        ]
    )

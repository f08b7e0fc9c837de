"""The bundled example project, and any project's extension: the one seam the surfaces reach it through.

ContextMesh ships one project inside the package, in the folder :data:`BUNDLED_DIR` (it holds a
``contextmesh.toml`` like any user's). A command that finds no project of the user's works on it
(:func:`bundled_project`), loaded by the same loader, its registry and plan bound from its own
file. Nothing outside that folder imports its code or spells its plan, keys, settings or corpus
(``tests/demo/test_demo_off_every_surface.py``): this module names the folder, and the rest is
what the project's file says.

A project's ``[project] extension`` (ADR 0023) names an object of its own code that adds to the
surfaces, each part optional:

* ``options`` — ``{setting: what its file is}``: settings a command line may set for one process
  (``--NAME FILE``), on commands that work with no project of the user's;
* ``settings(given)`` — the overrides for those given (``{name: Path}``), with the project's defaults;
* ``register(commands, kit)`` — the project's own commands, added to ``contextmesh``'s command table;
* ``example(rounds, progress)`` — a graph built in memory, for reading commands run with no session;
* ``save_example(directory, rounds, project)``, ``showcase(rounds, project)``, ``questions()`` —
  a saved session, the dashboard's whole story, its walk mix.

:func:`extension_of` imports it (ADR 0009 §2's rules: the project's own code only).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextmesh.project import binding
from contextmesh.project.project import Project, load_project

__all__ = ["BUNDLED_DIR", "bundled_project", "extension_of", "setting_options"]

BUNDLED_DIR = Path(__file__).resolve().parents[1] / "demo"


def extension_of(project: Project) -> Any | None:
    """The object ``[project] extension`` names, or None when the project names none."""
    if project.config.extension is None:
        return None
    where = f"{project.file}:project.extension"
    return binding.import_reference(project.root, project.config.extension, where)


def _bundled() -> Project:
    return load_project(BUNDLED_DIR)


def setting_options() -> dict[str, str]:
    """The settings of the bundled project a command line may set (``--NAME FILE``), with what each is."""
    return dict(_setting_options())


# Read once per process: the bundled project is a folder of the installed package, so its options
# cannot change while the process runs, and the command line's parser asks for them on a dozen
# commands each time it is built (loading the project file and importing its extension each time was
# a third of building the parser, which every in-process ``main()`` call does).
@functools.cache
def _setting_options() -> tuple[tuple[str, str], ...]:
    found = getattr(extension_of(_bundled()), "options", None)
    return tuple((str(name), str(what)) for name, what in (found or {}).items())


def bundled_project(given: Mapping[str, Path] | None = None) -> Project:
    """The bundled example project, with the settings the command line gave (and its defaults)."""
    project = _bundled()
    make = getattr(extension_of(project), "settings", None)
    overrides = make(dict(given or {})) if callable(make) else {k: str(v) for k, v in (given or {}).items()}
    return project.with_settings(**overrides) if overrides else project

"""A project: a folder with a ``contextmesh.toml``, found from ``--project DIR`` or the working directory.

:func:`find_project` looks at the folder given and each one above it for a ``contextmesh.toml``, as
git looks for ``.git``; :func:`load_project` reads one (a folder holding the file, or the file
itself). A :class:`Project` is the checked configuration plus what the operator's code makes of it:
its registry (:meth:`Project.registry`, built once per project object and carrying its recipe), the
plan it declares (:meth:`Project.new_plan`), a setting read as a path inside the root
(:meth:`Project.path`).

:meth:`Project.with_settings` overrides settings for one process (a command-line option that sets one);
the overrides travel with the registry's recipe, so a Dask worker rebuilds the same table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.project import binding, sessions
from contextmesh.project.config import PROJECT_FILE, DeploySettings, ProjectConfig, ProjectError, load_config

if TYPE_CHECKING:
    from contextmesh.core.graph import ContextGraph
    from contextmesh.execution.calls import Executor
    from contextmesh.knowledge.embed import Embedder
    from contextmesh.session.session import Session

__all__ = ["INIT_HINT", "Project", "find_project", "load_project", "project_file"]

INIT_HINT = "create one with `contextmesh init DIR`"


@dataclass(frozen=True, eq=False)
class Project:
    """A checked ``contextmesh.toml`` and the project's code behind it."""

    config: ProjectConfig
    overrides: tuple[tuple[str, str], ...] = ()
    _made: dict[str, TaskRegistry] = field(default_factory=dict, repr=False)
    _embedders: dict[str, Embedder] = field(default_factory=dict, repr=False)

    @property
    def root(self) -> Path:
        """The folder holding ``contextmesh.toml`` (resolved); every path of the project is inside it."""
        return self.config.root

    @property
    def file(self) -> Path:
        """The ``contextmesh.toml`` itself."""
        return self.config.file

    @property
    def name(self) -> str:
        """The project's name, which is also its plan's name."""
        return self.config.name

    @property
    def session(self) -> Path | None:
        """The project's own session directory, or None when it names none."""
        return self.config.session

    @property
    def documents(self) -> tuple[Path, ...]:
        """The document folders, resolved."""
        return self.config.documents

    @property
    def deploy(self) -> DeploySettings:
        """Deployment prefix, work pool and recheck interval."""
        return self.config.deploy

    @property
    def executor(self) -> str:
        """Where a round runs when no deployment serves the session: ``prefect`` or ``in-process``."""
        return self.config.executor

    @property
    def embedder_spec(self) -> str:
        """The embedder choice every graph of this project is built and walked with (ADR 0031)."""
        return self.config.embedder

    def with_embedder(self, spec: str) -> Project:
        """This project with another embedder choice for this process (``--embedder``, checked already)."""
        return Project(replace(self.config, embedder=spec), self.overrides)

    def embedder(self) -> Embedder:
        """The chosen embedder (a model is read on first use, then the same object)."""
        if "embedder" not in self._embedders:
            spec = self.embedder_spec
            if spec == "hashed":  # the default imports no model code (a CLI ask's start-up)
                from contextmesh.knowledge.embed import HashedEmbedder  # noqa: PLC0415

                self._embedders["embedder"] = HashedEmbedder()
            else:
                from contextmesh.knowledge.sentence_model import embedder_for  # noqa: PLC0415

                self._embedders["embedder"] = embedder_for(spec)
        return self._embedders["embedder"]

    @property
    def settings(self) -> Mapping[str, Any]:
        """``[settings]``, with this process's overrides on top."""
        return MappingProxyType({**self.config.settings, **dict(self.overrides)})

    def with_settings(self, **values: str) -> Project:
        """This project with some settings overridden for this process (text values only)."""
        for name, value in values.items():
            if type(value) is not str:
                raise ProjectError(f"settings.{name}", f"a {type(value).__name__}", "an override is text")
        merged = {**dict(self.overrides), **values}
        return Project(self.config, tuple(sorted(merged.items())), _embedders=self._embedders)

    def path(self, setting: str) -> Path:
        """The text setting ``setting`` as a path resolved against the root, refused if it leaves it."""
        where = f"{self.file}:settings.{setting}"
        value = self.settings.get(setting)
        if type(value) is not str:
            raise ProjectError(
                where, "nothing" if value is None else f"a {type(value).__name__}", "the setting is a path"
            )
        relative = Path(value)
        resolved = (self.root / relative).resolve()
        if relative.is_absolute() or not resolved.is_relative_to(self.root):
            raise ProjectError(
                where, f"{value!r} resolves to {resolved}", f"a path stays inside the project root {self.root}"
            )
        return resolved

    def registry(self) -> TaskRegistry:
        """The project's registry (built on first use, then the same object)."""
        if "registry" not in self._made:
            self._made["registry"] = binding.build_registry(self)
        return self._made["registry"]

    def declare(self, plan: Plan) -> None:
        """Declare the project's tasks on ``plan``."""
        binding.declare_plan(self, plan)

    def new_plan(self, graph: ContextGraph, *, executor: Executor | None = None) -> Plan:
        """A plan named after the project, on ``graph``, with the project's registry and tasks declared."""
        plan = Plan(self.name, graph, registry=self.registry(), executor=executor)
        self.declare(plan)
        return plan

    def session_dir(self, explicit: Path | None = None) -> Path:
        """The session a command works on: ``explicit``, else the project's own, else a refusal."""
        return sessions.session_dir(self, explicit)

    def ensure_session(self) -> Path:
        """The project's own session directory, made first (documents read, plan declared) if it is new."""
        return sessions.ensure_session(self)

    def open_session(
        self, directory: Path | None = None, *, policy: str = "every-ask", executor: Executor | None = None
    ) -> Session:
        """The session (``directory``, else the project's own, created on first use), loaded with this
        project's registry and its flat baseline."""
        return sessions.open_session(self, directory, policy=policy, executor=executor)

    def open_readonly(self, directory: Path | None = None) -> Session:
        """The session loaded to read only, with no registry (its keys need not resolve here)."""
        return sessions.open_readonly(self.session_dir(directory), self)

    def unresolved_keys(self, session: Session) -> list[str]:
        """The keys of ``session``'s plan this project's registry does not hold."""
        return sessions.unresolved_keys(self, session)

    def describe(self) -> dict[str, Any]:
        """Plain data for ``--json``: where the project is and what it names."""
        return {
            "name": self.name,
            "root": str(self.root),
            "file": str(self.file),
            "session": None if self.session is None else str(self.session),
            "executor": self.executor,
            "embedder": self.embedder_spec,
        }


def project_file(directory: Path) -> Path:
    """``directory/contextmesh.toml``."""
    return Path(directory) / PROJECT_FILE


def load_project(path: Path) -> Project:
    """The project in ``path``: a folder holding ``contextmesh.toml``, or the file itself."""
    path = Path(path)
    if path.exists() and not path.is_dir() and path.name != PROJECT_FILE:
        raise ProjectError(str(path), "a file, not a folder", f"a project is a folder holding {PROJECT_FILE}")
    file = path if path.name == PROJECT_FILE and not path.is_dir() else project_file(path)
    if not file.exists() and path.is_dir():
        raise ProjectError(
            str(path), f"no {PROJECT_FILE}", f"a project is a folder holding {PROJECT_FILE}; {INIT_HINT}"
        )
    return Project(load_config(file))


def find_project(start: Path | None = None) -> Project | None:
    """The project of the nearest ``contextmesh.toml`` at or above ``start`` (default: the working
    directory), or None when there is none up to the file system's root."""
    here = (Path.cwd() if start is None else Path(start)).absolute()
    for folder in (here, *here.parents):
        candidate = project_file(folder)
        if candidate.exists() or candidate.is_symlink():
            return load_project(candidate)
    return None

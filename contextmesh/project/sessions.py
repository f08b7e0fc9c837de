"""A project's session: opened with the project's registry, created on first use, or read with none.

* :func:`session_dir` — the directory a command works on: the one named (``--session DIR``), else the
  project's own ``[project] session``, else a refusal saying how to name one.
* :func:`open_session` — loaded for writing with the project's registry, its flat baseline attached.
  The project's own session is created on first use (:func:`create_session`): a graph built from
  the project's document folders when they hold any, the plan declared on it, nothing run.
* :func:`open_readonly` — loaded with no registry (``Session.open_readonly``), so a session whose
  keys this project cannot resolve can still be shown, verified, checked and exported.
* :func:`unresolved_keys` — which of a plan's keys the project's registry does not hold.

The project's embedder (``[project] embedder``, ADR 0031) builds the session and walks and ingests
into it; :func:`open_session` refuses a session whose record (``embedder.json``) names another.

Two processes opening a new project at once both try to create the session; the one that loses
finds the directory taken and loads what the other wrote.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from contextmesh.core.errors import SessionError
from contextmesh.core.graph import ContextGraph
from contextmesh.execution.calls import Executor
from contextmesh.execution.plan import Plan
from contextmesh.knowledge.flat_baseline import FlatBaseline
from contextmesh.knowledge.folder import read_folder
from contextmesh.knowledge.pipeline import build
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.traverse import Walker
from contextmesh.project import binding, embedding
from contextmesh.project.config import ProjectError
from contextmesh.session.commit import latest_generation
from contextmesh.session.layout import LOCK_NAME
from contextmesh.session.session import Session

if TYPE_CHECKING:
    from contextmesh.project.project import Project

__all__ = [
    "corpus_label",
    "create_session",
    "ensure_session",
    "open_readonly",
    "open_session",
    "session_dir",
    "unresolved_keys",
]


def corpus_label(project: Project) -> str:
    """The manifest's corpus label of a session a project creates: ``project:<name>``."""
    return f"project:{project.name}"


def session_dir(project: Project, explicit: Path | None = None) -> Path:
    """The session a command works on: ``explicit``, else the project's own, else a refusal."""
    if explicit is not None:
        return explicit
    if project.session is None:
        raise ProjectError(
            f"{project.file}:project.session",
            "nothing",
            f"project {project.name!r} names no session of its own: name one with --session DIR, or add "
            'session = ".contextmesh/session" to [project]',
        )
    return project.session


def _documents(project: Project) -> list[Path]:
    return [folder for folder in project.documents if folder.is_dir() and any(folder.iterdir())]


def _built(project: Project) -> tuple[ContextGraph, Resolver, FlatBaseline | None]:
    folders = _documents(project)
    if not folders:
        return ContextGraph(), Resolver(), None
    corpus, _ = read_folder(folders, root=project.root)
    embedder = project.embedder()
    result = build(corpus, embedder=embedder)
    return result.graph, result.resolver, FlatBaseline(result.chunks, embedder)


def create_session(project: Project, directory: Path) -> Session:
    """A new session in ``directory``: the project's documents built, its plan declared, nothing run."""
    graph, resolver, flat = _built(project)
    plan: Plan = project.new_plan(graph)
    session = Session(
        graph,
        resolver,
        corpus=corpus_label(project),
        runner=plan,
        registry=plan.registry,
        flat=flat,
        embedder=project.embedder(),
    )
    created = Session.create(directory, session)
    embedding.record(directory, project.embedder(), project.embedder_spec)
    return created


def _attach_flat(project: Project | None, session: Session) -> Session:
    flat = None
    if project is not None:
        flat = binding.flat_baseline(project, session)
        if flat is None and session.corpus == corpus_label(project):
            flat = _built(project)[2]
    if flat is not None:
        session.flat = flat
        session.walker.flat = flat
    return session


def ensure_session(project: Project, *, patience: float = 30.0) -> Path:
    """The project's own session directory, created first if it holds no generation yet.

    When another process is creating it at the same moment (its lock file is there, its first
    manifest not yet), this waits up to ``patience`` seconds for that generation instead of failing.
    """
    target = session_dir(project)
    if target.exists() and latest_generation(target) > 0:
        return target
    try:
        create_session(project, target)
    except SessionError:
        if not (target / LOCK_NAME).exists():
            raise  # a folder holding something else: a real refusal, said by Session.create
        deadline = time.monotonic() + patience
        # The winner records its embedder just after its first generation: wait for both.
        while time.monotonic() < deadline and not (
            latest_generation(target) > 0 and (target / embedding.EMBEDDER_FILE).exists()
        ):
            time.sleep(0.05)
        if latest_generation(target) == 0:
            raise
    return target


def _embedding(session: Session, project: Project) -> Session:
    """``session`` walking and ingesting with the project's embedder (a reload keeps it: ``Session._adopt``)."""
    session.embedder = project.embedder()
    session.walker = Walker(
        session.graph, session.resolver, embedder=session.embedder, settings=session.settings, flat=session.flat
    )
    return session


def open_session(
    project: Project,
    directory: Path | None = None,
    *,
    policy: str = "every-ask",
    executor: Executor | None = None,
) -> Session:
    """Load the session (``directory``, else the project's own, created on first use) with the
    project's registry."""
    target = ensure_session(project) if directory is None else directory
    embedding.check_session(target, project.embedder(), project.embedder_spec)
    session = _embedding(Session.load(target, registry=project.registry(), policy=policy), project)
    if executor is not None and session.runner is not None:
        session.runner.executor = executor
    return _attach_flat(project, session)


def open_readonly(directory: Path, project: Project | None = None) -> Session:
    """Load ``directory`` to read only, with no registry; the project's flat baseline when it has one.

    Nothing read-only embeds (show, verify, health, export), so the project's embedder is neither
    loaded nor checked here; :func:`open_session`, which every ask and ingest goes through, does both."""
    return _attach_flat(project, Session.open_readonly(directory))


def unresolved_keys(project: Project, session: Session) -> list[str]:
    """The keys of the session's plan that the project's registry does not hold, sorted."""
    if session.runner is None:
        return []
    registry = project.registry()
    missing = set()
    for task in session.runner.tasks.values():
        if task.worker_key is not None and not registry.has_worker(task.worker_key):
            missing.add(task.worker_key)
        if task.auditor_key is not None and not registry.has_auditor(task.auditor_key):
            missing.add(task.auditor_key)
    return sorted(missing)

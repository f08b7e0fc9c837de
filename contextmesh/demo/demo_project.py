"""The bundled demo as a project: the attributes its ``contextmesh.toml`` names, and the project itself.

``contextmesh/demo/contextmesh.toml`` names :func:`build_registry` (the demo's workers and advisory
auditor, bound to the advisory feed), :func:`declare` (the five tasks of the secure-authentication
plan) and :func:`flat` (the bundled corpus's flat baseline, for sessions built from it). The command
line reaches the demo through :func:`demo_project` and the project layer, exactly as it reaches a
user's project, so the demo's path uses nothing a user's project cannot.

The feed is the setting ``feed``: the command line's ``--feed``, else the demo's default under
``$CONTEXTMESH_HOME``, always made absolute before it is set, so a registry rebuilt on a Dask worker
reads the same file whatever that process's working directory or environment says.
"""

from __future__ import annotations

from pathlib import Path

from contextmesh import FlatBaseline, Plan, Project, Session, TaskRegistry, load_project
from contextmesh.demo.auth import declare_plan, default_feed, register_demo
from contextmesh.demo.knowledge import DEMO_CORPUS, demo_flat

__all__ = ["PROJECT_DIR", "build_registry", "declare", "demo_project", "flat"]

PROJECT_DIR = Path(__file__).resolve().parent


def build_registry(project: Project) -> TaskRegistry:
    """The demo's workers and auditor, the auditor reading the project's ``feed`` setting."""
    named = project.settings.get("feed")
    registry = TaskRegistry()
    register_demo(registry, feed=Path(named) if isinstance(named, str) else default_feed())
    return registry


def declare(plan: Plan) -> None:
    """The secure-authentication plan's five tasks."""
    declare_plan(plan)


def flat(project: Project, session: Session) -> FlatBaseline | None:
    """The bundled corpus's flat baseline for a session built from it; none for any other."""
    return demo_flat() if session.corpus == DEMO_CORPUS else None


def demo_project(feed: Path | None = None) -> Project:
    """The bundled demo project, its auditor reading ``feed`` (default: the demo's feed)."""
    return load_project(PROJECT_DIR).with_settings(feed=str((feed or default_feed()).absolute()))

"""The demo as a durable session: build it, save it, open it again through the demo project.

``save_demo_session`` builds the demo world, runs the walk rounds, declares the secure-auth plan on
the same graph and runs its first round, then writes generation 1; ``create_demo_session`` writes
the same session with the plan declared and nothing run (the Prefect walk-through runs round 1 as a
flow run). ``open_demo_session`` loads a directory through the bundled demo project
(:func:`contextmesh.demo.demo_project.demo_project`): keys resolved against the demo's workers, bound to
the given advisory feed, and, for a session labelled :data:`DEMO_CORPUS`, the flat baseline of the
bundled corpus — the path every command takes for a user's project too.
"""

from __future__ import annotations

from pathlib import Path

from contextmesh import Executor, Plan, Session, TaskRegistry
from contextmesh.demo.auth import default_feed
from contextmesh.demo.demo_project import demo_project
from contextmesh.demo.knowledge import DEMO_CORPUS, DemoWorld, build_world, demo_flat

__all__ = [
    "DEMO_CORPUS",
    "create_demo_session",
    "default_feed",
    "demo_flat",
    "demo_registry",
    "open_demo_session",
    "save_demo_session",
    "with_corpus_flat",
]


def demo_registry(feed: Path) -> TaskRegistry:
    """A registry holding the demo's workers and auditor, bound to ``feed`` (it carries its recipe)."""
    return demo_project(feed).registry()


def with_corpus_flat(session: Session) -> Session:
    """``session`` with the flat baseline of its corpus, when that corpus ships with ContextMesh.

    A session's files do not hold the corpus, so whoever loads one (the CLI, the MCP server)
    attaches it here; without it a walk reports ``flat_tokens`` 0.
    """
    if session.corpus == DEMO_CORPUS and session.flat is None:
        session.flat = demo_flat()
        session.walker.flat = session.flat
    return session


def _session(world: DemoWorld, runner: Plan) -> Session:
    """The demo world and its plan as a session not yet saved, labelled :data:`DEMO_CORPUS`."""
    return Session(
        world.graph,
        world.result.resolver,
        walk_rounds=world.walk_rounds,
        corpus=DEMO_CORPUS,
        runner=runner,
        registry=runner.registry,
        flat=world.walker.flat,
    )


def _declared(world: DemoWorld, feed: Path, executor: Executor | None) -> Plan:
    return demo_project(feed).new_plan(world.graph, executor=executor)


def save_demo_session(
    directory: Path, *, rounds: int = 8, feed: Path | None = None, executor: Executor | None = None
) -> Session:
    """Build the demo (walk rounds, plan round 1 executed) and save it as a new session."""
    world = build_world(rounds)
    runner = _declared(world, feed or default_feed(), executor)
    runner.run()
    return Session.create(directory, _session(world, runner))


def create_demo_session(directory: Path, *, feed: Path, rounds: int = 8) -> Session:
    """The demo as a new session: walk rounds, the plan declared, no plan round run yet."""
    world = build_world(rounds)
    return Session.create(directory, _session(world, _declared(world, feed, None)))


def open_demo_session(
    directory: Path, *, feed: Path | None = None, policy: str = "every-ask", executor: Executor | None = None
) -> Session:
    """Load a session through the demo project; the flat baseline comes with a demo corpus."""
    return demo_project(feed).open_session(directory, policy=policy, executor=executor)

"""The demo as a durable session: build it, save it, open it again with the demo's registry.

``save_demo_session`` builds the demo world, runs the walk rounds, declares the secure-auth plan on
the same graph and runs its first round, then writes generation 1; ``create_demo_session`` writes
the same session with the plan declared and nothing run (the Prefect walk-through runs round 1 as a
flow run). ``open_demo_session`` loads a directory with the demo registry (keys resolved against
this installation's demo workers, bound to the given advisory feed) and, for a session labelled
:data:`DEMO_CORPUS`, the flat baseline of the bundled corpus.
"""

from __future__ import annotations

from pathlib import Path

from contextmesh import Chunk, Executor, FlatBaseline, HashedEmbedder, Plan, Session, TaskRegistry, contextmesh_home
from contextmesh.demo.auth import PLAN_NAME, declare_plan, register_demo
from contextmesh.demo.knowledge import DemoWorld, build_world, load_demo

__all__ = [
    "DEMO_CORPUS",
    "create_demo_session",
    "default_feed",
    "demo_flat",
    "demo_registry",
    "open_demo_session",
    "save_demo_session",
]

DEMO_CORPUS = "contextmesh.demo"


def default_feed() -> Path:
    """The demo's advisory feed when none is named: under ``$CONTEXTMESH_HOME`` (XDG state by default)."""
    return contextmesh_home() / "demo-feed.json"


def demo_registry(feed: Path) -> TaskRegistry:
    """A registry holding the demo's workers and auditor, bound to ``feed``."""
    registry = TaskRegistry()
    register_demo(registry, feed=feed)
    return registry


def demo_flat() -> FlatBaseline:
    """Flat top-k over the bundled corpus's paragraphs (the walk's comparison figure)."""
    corpus, _ = load_demo()
    chunks = [Chunk(span.key, source.key, span.chunk) for source, span in corpus.spans()]
    return FlatBaseline(chunks, HashedEmbedder())


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
    runner = Plan(PLAN_NAME, world.graph, registry=demo_registry(feed), executor=executor)
    declare_plan(runner)
    return runner


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
    """Load a session with the demo registry; the flat baseline comes with a demo corpus."""
    feed = feed or default_feed()
    session = Session.load(directory, registry=demo_registry(feed), policy=policy)
    if session.corpus == DEMO_CORPUS:
        session.flat = demo_flat()
        session.walker.flat = session.flat
    if executor is not None and session.runner is not None:
        session.runner.executor = executor
    return session

"""The demo as a durable session: build it, save it, open it again with the demo's registry.

``save_demo_session`` builds the demo world, runs the walk rounds, declares the secure-auth plan on
the same graph and runs its first round, then writes generation 1. ``open_demo_session`` loads a
directory with the demo registry (keys resolved against this installation's demo workers, bound to
the given advisory feed) and the flat baseline of the bundled corpus.
"""

from __future__ import annotations

from pathlib import Path

from contextmesh.core.home import contextmesh_home
from contextmesh.demo.auth import PLAN_NAME, declare_plan, register_demo
from contextmesh.demo.knowledge import build_world, load_demo
from contextmesh.execution.in_process import Executor
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.knowledge.embed import HashedEmbedder
from contextmesh.knowledge.pipeline import Chunk
from contextmesh.knowledge.traverse import FlatBaseline
from contextmesh.session.session import Session

__all__ = ["DEMO_CORPUS", "default_feed", "demo_flat", "demo_registry", "open_demo_session", "save_demo_session"]

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


def save_demo_session(
    directory: Path, *, rounds: int = 8, feed: Path | None = None, executor: Executor | None = None
) -> Session:
    """Build the demo (walk rounds, plan round 1 executed) and save it as a new session."""
    feed = feed or default_feed()
    world = build_world(rounds)
    runner = Plan(PLAN_NAME, world.graph, registry=demo_registry(feed), executor=executor)
    declare_plan(runner)
    runner.run()
    session = Session(
        world.graph,
        world.result.resolver,
        walk_rounds=world.walk_rounds,
        corpus=DEMO_CORPUS,
        runner=runner,
        registry=runner.registry,
        flat=world.walker.flat,
    )
    return Session.create(directory, session)


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

"""Documents into a session: one belief-aware increment on its graph, and the plan's fallen tasks made stale.

:func:`ingest_into` runs :func:`~contextmesh.belief.ingestion.ingest` on a session's graph and
resolver and, when the session holds a plan, makes stale every done task whose decision fell with
a superseded claim (:func:`~contextmesh.execution.grounding.absorb_fallout`), so the next
``resume`` re-runs exactly that closure. It does not commit: the caller commits when
``Ingestion.wrote`` (an unchanged folder commits nothing). In a dry run nothing changes and the
tasks that *would* go stale are named.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from contextmesh.belief.ingestion import Ingestion, ingest, ingest_text
from contextmesh.execution.grounding import absorb_fallout
from contextmesh.execution.task import TaskState
from contextmesh.session.session import Session

__all__ = ["ingest_into", "ingest_text_into"]


def ingest_into(
    session: Session,
    paths: Sequence[Path | str],
    *,
    root: Path | str | None = None,
    entities: Path | str | None = None,
    dry_run: bool = False,
) -> tuple[Ingestion, list[str]]:
    """The increment, and the plan's tasks it made (or, in a dry run, would make) stale, in declaration order."""
    result = ingest(
        session.graph, session.resolver, paths, root=root, entities=entities, embedder=session.embedder, dry_run=dry_run
    )
    runner = session.runner
    if runner is None or not result.fallout.invalidated:
        return result, []
    if dry_run:
        fallen = result.fallout.invalidated
        return result, [t.name for t in runner.tasks.values() if t.decision_id in fallen and t.state is TaskState.DONE]
    return result, absorb_fallout(runner, result.fallout.invalidated)


def ingest_text_into(session: Session, name: str, text: str) -> tuple[Ingestion, list[str]]:
    """One document that arrived with evidence (:func:`~contextmesh.belief.ingestion.ingest_text`) into
    a session, and the plan's tasks it made stale. Not committed: the caller commits when it wrote."""
    result = ingest_text(session.graph, session.resolver, name, text, embedder=session.embedder)
    if session.runner is None or not result.fallout.invalidated:
        return result, []
    return result, absorb_fallout(session.runner, result.fallout.invalidated)

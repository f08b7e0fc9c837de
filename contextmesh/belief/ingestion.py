"""A folder of documents into a graph, incrementally and belief-aware: :func:`ingest`.

One call is one increment: :func:`~contextmesh.knowledge.survey.survey` compares the files under
the paths with the revisions the graph holds, :func:`~contextmesh.knowledge.increment.apply_increment`
writes what the new, revised and deleted documents add (a new revision each, their new claims, the
catalogue's new entities and aliases, their mentions and links), and
:func:`~contextmesh.belief.revision.supersede` lets every claim a revision no longer makes be
superseded — kept, flagged out of walks — with what rested on it falling, each with its reason chain.

* An unchanged folder is a no-op: nothing is written (``Ingestion.wrote`` is false), so a session
  commits nothing.
* ``dry_run=True`` runs the same increment on a copy of the graph and resolver and returns the same
  report; the graph and resolver given are not touched.
* A graph's build counter is moved from 0 to 1 by its first ingestion and never again by another
  one, so the provenance a claim records does not depend on how many increments came before it
  (see :mod:`~contextmesh.knowledge.increment` for what "the same graph" means across orders of arrival).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from contextmesh.belief.revision import RevisionReport, revision_fallout, supersede
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.embed import Embedder, HashedEmbedder
from contextmesh.knowledge.increment import Increment, apply_increment
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.survey import survey

__all__ = ["Ingestion", "ingest"]


@dataclass
class Ingestion:
    """What one ingestion did (or, in a dry run, would do)."""

    increment: Increment
    fallout: RevisionReport
    dry_run: bool

    @property
    def wrote(self) -> bool:
        """True when the graph or the resolver changed (in a dry run: would change)."""
        return self.increment.wrote

    def to_dict(self) -> dict[str, object]:
        """Plain data for ``--json``: the documents by status, the stage report and the fallout."""
        increment = self.increment
        return {
            "dry_run": self.dry_run,
            "wrote": self.wrote,
            "documents": [{"name": change.name, "status": change.status} for change in increment.survey.changes],
            "revisions": dict(increment.revisions),
            "new_claims": len(increment.new_claims),
            "carried_claims": len(increment.carried_claims),
            "new_entities": list(increment.entities.new_entities),
            "new_aliases": {k: list(v) for k, v in increment.entities.new_aliases.items()},
            "divergences": list(increment.divergences),
            "stages": [
                {**stage.to_dict(), "drops": [{"item": d.item, "reason": d.reason} for d in stage.drops]}
                for stage in increment.report.stages
            ],
            "warnings": [str(w) for w in increment.warnings],
            **self.fallout.to_dict(),
        }


def ingest(
    graph: ContextGraph,
    resolver: Resolver,
    paths: Sequence[Path | str],
    *,
    root: Path | str | None = None,
    entities: Path | str | None = None,
    embedder: Embedder | None = None,
    dry_run: bool = False,
) -> Ingestion:
    """Bring ``graph`` and ``resolver`` up to the documents under ``paths`` (see the module docstring).

    Every file is read and checked before anything is written, so a refused document
    (:class:`~contextmesh.knowledge.decoding.DocumentError`) changes nothing.
    """
    found = survey(graph, paths, root=root, entities=entities)
    if dry_run:
        # The ontology is immutable (and holds mapping proxies, which do not copy): shared, not copied.
        graph = copy.deepcopy(graph, {id(graph.ontology): graph.ontology})
        resolver = copy.deepcopy(resolver)
    if graph.build == 0:
        graph.next_build()
    increment = apply_increment(graph, resolver, found, embedder or HashedEmbedder())
    if dry_run:
        fallout = revision_fallout(graph, increment.removed, increment.revisions)
    else:
        fallout = supersede(graph, increment.removed, increment.revisions, increment.previous)
    return Ingestion(increment, fallout, dry_run)

"""A document's new revision supersedes the claims it no longer makes, and what rested on them falls.

GRAPH.md rule 11: a revision ``supersedes`` the revision before it and every claim of it the new
text no longer makes (a deletion's empty revision: all of them). Supersession never deletes: the
claim stays in the graph, flagged out of walks. What rests on it falls through the same closure
an assumption's rejection uses (:func:`~contextmesh.belief.invalidation.closure_from`), started at
the superseded claims, so every fallen node's reason chain begins at the revision and passes
through the claim::

    revision 2 of plans/capacity-2026.md -supersedes-> claim(STS-04 and STS-07 together sustain 58…)
        <-derived_from- berth-3-crane-plan (terminal)

:func:`revision_fallout` computes all of it and writes nothing (a dry run); :func:`supersede`
writes the edges and flags and returns the same report.

Invariants (``tests/belief/test_revision.py``): a superseded claim is never removed; a node falls
only if a chain of propagating edges leads to it from a superseded claim; a claim the new revision
still makes never falls, because no revision is ever invalidated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from contextmesh.belief.invalidation import closure_from, doomed_edges, render_chain
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.revisions import revision_of

__all__ = ["RevisionReport", "Superseded", "revision_fallout", "supersede"]

_LABEL_LIMIT = 48


def _short(text: str) -> str:
    return text if len(text) <= _LABEL_LIMIT else text[: _LABEL_LIMIT - 1] + "…"


@dataclass(frozen=True)
class Superseded:
    """A claim a document no longer makes, and the revision that supersedes it."""

    claim_id: str
    text: str
    document: str
    revision: str


@dataclass
class RevisionReport:
    """What new revisions supersede, and everything that falls with it, each with its reason chain."""

    superseded: list[Superseded] = field(default_factory=list)
    invalidated: dict[str, list[str]] = field(default_factory=dict)
    invalidated_edges: list[str] = field(default_factory=list)

    def why(self, node_id: str) -> str:
        """The reason chain of a fallen node, or a sentence saying it did not fall."""
        chain = self.invalidated.get(node_id)
        return render_chain(chain) if chain else f"{node_id} was not invalidated"

    def to_dict(self) -> dict[str, object]:
        """Plain data for ``--json``."""
        return {
            "superseded": [
                {"claim_id": s.claim_id, "text": s.text, "document": s.document, "revision": s.revision}
                for s in self.superseded
            ],
            "invalidated": [{"id": nid, "chain": render_chain(chain)} for nid, chain in self.invalidated.items()],
            "invalidated_edges": list(self.invalidated_edges),
        }


def _seeds(
    graph: ContextGraph, removed: Mapping[str, Sequence[str]], revisions: Mapping[str, str]
) -> dict[str, list[str]]:
    seeds: dict[str, list[str]] = {}
    for document in sorted(removed):
        node = graph.node(revisions[document])
        revision = revision_of(node)
        number = revision.number if revision is not None else 0
        start = f"revision {number} of {document}" + (" (deleted)" if revision is not None and revision.deleted else "")
        for claim in removed[document]:
            seeds.setdefault(claim, [start, "-supersedes->", f"claim({_short(graph.node(claim).label)})"])
    return seeds


def revision_fallout(
    graph: ContextGraph, removed: Mapping[str, Sequence[str]], revisions: Mapping[str, str]
) -> RevisionReport:
    """What superseding ``removed`` (document → claim ids) by ``revisions`` (document → revision id) takes down.

    Pure: computed on the graph as it stands, before any flag is set.
    """
    seeds = _seeds(graph, removed, revisions)
    fallen = closure_from(graph, seeds)
    report = RevisionReport(invalidated=fallen, invalidated_edges=doomed_edges(graph, seeds, fallen))
    for document in sorted(removed):
        for claim in removed[document]:
            report.superseded.append(Superseded(claim, graph.node(claim).label, document, revisions[document]))
    return report


def supersede(
    graph: ContextGraph,
    removed: Mapping[str, Sequence[str]],
    revisions: Mapping[str, str],
    previous: Mapping[str, str],
) -> RevisionReport:
    """Write the supersessions of new revisions and let what rested on the removed claims fall.

    ``previous`` maps each revised or deleted document to the revision its new one follows; each
    new revision supersedes it, and every claim ``removed`` lists for that document.
    """
    report = revision_fallout(graph, removed, revisions)
    for document in sorted(previous):
        if graph.find_edge(revisions[document], "supersedes", previous[document]) is None:
            graph.add_edge(revisions[document], "supersedes", previous[document])
    for superseded in report.superseded:
        if graph.find_edge(superseded.revision, "supersedes", superseded.claim_id) is None:
            graph.add_edge(superseded.revision, "supersedes", superseded.claim_id)
    graph.invalidate([s.claim_id for s in report.superseded], [])
    graph.invalidate(report.invalidated, report.invalidated_edges)
    return report

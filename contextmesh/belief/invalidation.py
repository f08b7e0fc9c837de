"""Invalidation: exactly what falls when an assumption is rejected, why, and what stands.

The closure starts at the rejected assumption and follows only the edge types the graph's own
ontology marks as propagating: along a ``backward`` edge the *source* falls when its target has
fallen (a decision ``depends_on`` a fallen assumption), along a ``forward`` edge the *target* falls
when its source has fallen (a fallen decision's ``produces`` artefact). Grounds are conjunctive: a
node falls as soon as any one propagating ground falls, even while another still stands.

Every fallen node comes with its shortest reason chain, e.g.
``assumption(Shard count grows…) <-depends_on- Rebuild the index in partitions -produces-> Partitioned Rebuild``.
Edges bound to the assumption (``justifies``) fall with it even though their endpoints stand; so does
every edge whose two endpoints both fell.

Invariants (property-tested over generated graphs in ``tests/test_invalidation.py``):

1. fallen ∪ preserved ∪ {assumption} = the live nodes before the rejection, pairwise disjoint;
2. every chain starts at the assumption and follows only propagating edges in their direction;
3. ``blast_radius`` writes nothing; :func:`apply_invalidation` writes only flags.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from contextmesh.core.canonical import digest
from contextmesh.core.graph import ContextGraph

__all__ = [
    "PRESERVED_LIST_LIMIT",
    "InvalidationReport",
    "apply_invalidation",
    "blast_radius",
    "closure",
    "closure_from",
    "doomed_edges",
    "render_chain",
]

PRESERVED_LIST_LIMIT = 10_000
_LABEL_LIMIT = 48


def _short(text: str) -> str:
    return text if len(text) <= _LABEL_LIMIT else text[: _LABEL_LIMIT - 1] + "…"


def closure(graph: ContextGraph, assumption_id: str) -> dict[str, list[str]]:
    """Fallen node id → its shortest reason chain (tokens), in discovery order. Pure."""
    start = graph.node(assumption_id)
    if not start.live:
        return {}
    return closure_from(graph, {assumption_id: [f"assumption({_short(start.label)})"]})


def closure_from(graph: ContextGraph, seeds: dict[str, list[str]]) -> dict[str, list[str]]:
    """What falls when the ``seeds`` (node id → the chain that took it down) fall. Pure.

    The breadth-first walk of :func:`closure` from several starting nodes at once, in the order
    given: each fallen node gets the shortest chain from the nearest seed. A seed is not part of the
    result, an assumption never falls by propagation (rule 8: only evidence rejects one), and
    forward edges are followed out of fallen nodes only, never out of a seed — a rejected
    assumption produces nothing, and a superseded claim is the end of a chain, not a producer.
    """
    backward, forward = graph.ontology.backward, graph.ontology.forward
    reached: dict[str, list[str]] = {}
    queue: deque[tuple[str, list[str]]] = deque(seeds.items())
    while queue:
        node_id, chain = queue.popleft()
        for edge in graph.in_edges(node_id, backward):
            source = edge.src
            if source in reached or source in seeds or graph.node(source).type == "assumption":
                continue
            reached[source] = [*chain, f"<-{edge.type}-", graph.node(source).label]
            queue.append((source, reached[source]))
        if node_id in seeds:
            continue
        for edge in graph.out_edges(node_id, forward):
            target = edge.dst
            if target in reached or target in seeds:
                continue
            reached[target] = [*chain, f"-{edge.type}->", graph.node(target).label]
            queue.append((target, reached[target]))
    return reached


def render_chain(chain: list[str]) -> str:
    """A chain as one line."""
    return " ".join(chain)


@dataclass
class InvalidationReport:
    """What a rejection takes down, why, and what it leaves standing."""

    assumption_id: str
    statement: str
    invalidated: dict[str, list[str]]
    invalidated_edges: list[str]
    preserved_ids: list[str] = field(repr=False)
    replacement_id: str | None = None
    evidence_id: str | None = None

    @property
    def blast_radius(self) -> int:
        """How many nodes fall."""
        return len(self.invalidated)

    @property
    def preserved_count(self) -> int:
        """How many live nodes stand."""
        return len(self.preserved_ids)

    @property
    def preserved_digest(self) -> str:
        """SHA-256 over the RFC 8785 bytes of the sorted preserved id list."""
        return digest(sorted(self.preserved_ids))

    def why(self, node_id: str) -> str:
        """The reason chain of a fallen node, or a sentence saying it did not fall."""
        chain = self.invalidated.get(node_id)
        return render_chain(chain) if chain else f"{node_id} was not invalidated"

    def to_dict(self) -> dict[str, object]:
        """The receipt as plain data; the preserved list is inlined up to 10,000 ids."""
        preserved = sorted(self.preserved_ids)
        return {
            "assumption_id": self.assumption_id,
            "statement": self.statement,
            "evidence_id": self.evidence_id,
            "blast_radius": self.blast_radius,
            "invalidated": [{"id": nid, "chain": render_chain(chain)} for nid, chain in self.invalidated.items()],
            "invalidated_edges": list(self.invalidated_edges),
            "preserved_count": len(preserved),
            "preserved": preserved if len(preserved) <= PRESERVED_LIST_LIMIT else None,
            "preserved_digest": digest(preserved),
            "replacement_id": self.replacement_id,
        }


def doomed_edges(graph: ContextGraph, seeds: Iterable[str], fallen: dict[str, list[str]]) -> list[str]:
    """Edges that fall with ``seeds`` and ``fallen``: those whose two endpoints both fell, and those
    bound to a seed (only an assumption has bound edges), in insertion order."""
    starts = list(seeds)
    down = set(fallen) | set(starts)
    doomed: dict[str, None] = {}
    for node_id in down:
        for edge in graph.out_edges(node_id, live_only=False):
            if not edge.invalidated and edge.dst in down:
                doomed[edge.id] = None
    for seed in starts:
        for edge in graph.bound_edges(seed):
            if not edge.invalidated:
                doomed[edge.id] = None
    return sorted(doomed, key=graph.seq)


def blast_radius(graph: ContextGraph, assumption_id: str) -> InvalidationReport:
    """What would fall if ``assumption_id`` were rejected now. Changes nothing."""
    fallen = closure(graph, assumption_id)
    preserved = [n.id for n in graph if n.live and n.id != assumption_id and n.id not in fallen]
    return InvalidationReport(
        assumption_id,
        graph.node(assumption_id).label,
        fallen,
        doomed_edges(graph, [assumption_id], fallen),
        preserved,
    )


def apply_invalidation(graph: ContextGraph, assumption_id: str, report: InvalidationReport) -> None:
    """Flag the assumption node, every fallen node and every doomed edge invalidated."""
    graph.invalidate([assumption_id, *report.invalidated], report.invalidated_edges)

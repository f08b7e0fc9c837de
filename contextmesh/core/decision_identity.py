"""The content fingerprint of an explicit-id decision.

A decision recorded under an explicit id treats that id as an idempotency key: recording the same
content again returns the same decision, different content under the same id is refused. The
content is the fingerprint below, stored on the node as ``attrs.decision_digest`` and recomputed
whenever a graph file is loaded, so an edited file cannot keep a decision's id while changing what
it stood on.

The fingerprint is SHA-256 over the RFC 8785 bytes of::

    {"label": ..., "rationale": ..., "provenance": {...} | null,
     "edges": [[edge type, target id], ...]}   # digest-covered out-edges, sorted

Edges out of the decision of the types in :data:`contextmesh.core.graph_rules.DIGEST_COVERED`, and
``depends_on`` into an assumption, are covered; ``depends_on`` between decisions and
``justified_by`` are not, because a plan adds those after the decision exists.
"""

from __future__ import annotations

from contextmesh.core.canonical import digest
from contextmesh.core.graph import ContextGraph
from contextmesh.core.graph_rules import is_digest_covered

__all__ = ["covered_edges", "decision_fingerprint"]


def covered_edges(graph: ContextGraph, decision_id: str) -> list[list[str]]:
    """The decision's digest-covered out-edges as sorted ``[type, target]`` pairs."""
    pairs = {
        (edge.type, edge.dst)
        for edge in graph.out_edges(decision_id, live_only=False)
        if is_digest_covered(edge.type, graph.node(edge.dst).type)
    }
    return [list(pair) for pair in sorted(pairs)]


def decision_fingerprint(graph: ContextGraph, decision_id: str) -> str:
    """The digest an explicit-id decision's ``attrs.decision_digest`` must equal."""
    node = graph.node(decision_id)
    provenance = None if node.provenance is None else node.provenance.model_dump(mode="json")
    return digest(
        {
            "label": node.label,
            "rationale": node.attrs.get("rationale"),
            "provenance": provenance,
            "edges": covered_edges(graph, decision_id),
        }
    )

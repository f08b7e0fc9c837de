"""The graph file's cross-references, checked once every record exists (graph-v3.md 8.5, G48-G51).

Two-sided supersession, evidence ids naming evidence nodes, bound edges falling with a rejected
assumption, provenance naming a source node of the graph, and every explicit-id decision's
fingerprint recomputed from its content.
"""

from __future__ import annotations

from contextmesh.core.decision_identity import decision_fingerprint
from contextmesh.core.errors import SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import is_auto_decision_id

__all__ = ["check_cross_references"]


def check_cross_references(graph: ContextGraph) -> None:
    """Refuse the first cross-reference of a fully restored graph that does not hold."""
    index_of = {aid: i for i, aid in enumerate(graph.assumptions)}
    for aid, record in graph.assumptions.items():
        path = f"assumptions[{index_of[aid]}]"
        if record.supersedes is not None:
            older = graph.assumptions.get(record.supersedes)
            if older is None or older.superseded_by != aid:
                raise SnapshotError(
                    f"{path}.supersedes",
                    repr(record.supersedes),
                    "supersession is two-sided: the older record's superseded_by names this one",
                )
        if record.superseded_by is not None:
            newer = graph.assumptions.get(record.superseded_by)
            if newer is None or newer.supersedes != aid:
                raise SnapshotError(
                    f"{path}.superseded_by",
                    repr(record.superseded_by),
                    "supersession is two-sided: the newer record's supersedes names this one",
                )
        for position, evidence in enumerate(record.evidence_ids):
            node = graph.nodes.get(evidence)
            if node is None or node.type != "evidence":
                raise SnapshotError(
                    f"{path}.evidence_ids[{position}]", repr(evidence), "evidence ids name evidence nodes"
                )
    for index, edge in enumerate(graph.edges.values()):
        bound = graph.assumptions.get(edge.assumption_id) if edge.assumption_id else None
        if bound is not None and bound.status == "rejected" and not edge.invalidated:
            raise SnapshotError(
                f"edges[{index}].invalidated",
                "false on an edge bound to the rejected assumption " + repr(bound.id),
                "an edge bound to a rejected assumption has fallen with it",
            )
    for index, node in enumerate(graph.nodes.values()):
        if node.provenance is not None:
            cited = graph.nodes.get(node.provenance.source_id)
            if cited is None or cited.type != "source":
                raise SnapshotError(
                    f"nodes[{index}].provenance.source_id",
                    repr(node.provenance.source_id),
                    "provenance names a source node of this graph",
                )
    for index, node in enumerate(graph.nodes.values()):
        if node.type != "decision":
            continue
        path = f"nodes[{index}]"
        identity = node.attrs.get("decision_identity")
        if identity == "auto":
            if not is_auto_decision_id(node.id):
                raise SnapshotError(f"{path}.id", repr(node.id), "an auto-minted decision lives under 'decision:auto:'")
        elif identity == "explicit":
            if is_auto_decision_id(node.id):
                raise SnapshotError(
                    f"{path}.id", repr(node.id), "an explicit decision id may not use the auto-minted namespace"
                )
            if node.attrs.get("decision_digest") != decision_fingerprint(graph, node.id):
                raise SnapshotError(
                    f"{path}.attrs.decision_digest",
                    repr(node.attrs.get("decision_digest")),
                    "the stored digest does not match the fingerprint recomputed from the decision's content",
                )
        else:
            raise SnapshotError(
                f"{path}.attrs.decision_identity", repr(identity), "a decision is either 'explicit' or 'auto'"
            )

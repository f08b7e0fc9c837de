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
    _check_fallen(graph)
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


def _check_fallen(graph: ContextGraph) -> None:
    """An edge bound to a rejected assumption has fallen with it; only bound edges are read, so a
    loaded graph's other edges stay columns (ADR 0038). The first in file order is named."""
    standing = [
        (edge_id, aid)
        for aid, record in graph.assumptions.items()
        if record.status == "rejected"
        for edge_id in graph._bound.get(aid, ())
        if not graph.edges[edge_id].invalidated
    ]
    if not standing:
        return
    position = {edge_id: index for index, edge_id in enumerate(graph.edges)}  # the error path only
    edge_id, aid = min(standing, key=lambda pair: position[pair[0]])
    raise SnapshotError(
        f"edges[{position[edge_id]}].invalidated",
        "false on an edge bound to the rejected assumption " + repr(aid),
        "an edge bound to a rejected assumption has fallen with it",
    )

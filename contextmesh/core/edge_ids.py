"""Edge ids derived from each endpoint's part, computed once per node (ADR 0021).

An edge's id is ``edge:<body>-<S><T><D>`` (:mod:`contextmesh.core.ids`): every part is a function
of one node id or of the edge type. :class:`EdgeIds` derives a graph's edge ids from each node's
fold and tail, kept on the node record the first time a write asks for them, so a node that is
the endpoint of thousands of edges is folded and hashed once, not once per edge.
"""

from __future__ import annotations

from collections.abc import Iterable

from contextmesh.core.errors import OntologyError
from contextmesh.core.ids import TYPE_TAIL, edge_body, edge_id_from_parts, fold, name_tail
from contextmesh.core.model import NodeRecord

__all__ = ["EdgeIds", "node_part"]


class EdgeIds:
    """A graph's edge ids (``ids.edge_id``), from each node's fold and tail kept on its record."""

    __slots__ = ("_last", "type_parts")

    def __init__(self, edge_types: Iterable[str]) -> None:
        # Each type's fold and id tail (ADR 0021); two types sharing a tail could give two edges
        # one id, so such tables are refused here, before any edge exists.
        self.type_parts = {t: (fold(t), name_tail(t, TYPE_TAIL)) for t in edge_types}
        tails = [tail for _, tail in self.type_parts.values()]
        if len(set(tails)) != len(tails):
            raise OntologyError(
                f"two edge types of these tables share the {TYPE_TAIL}-hex-digit tail of their edge ids; "
                "rename one (ADR 0021)"
            )
        self._last: tuple[object, str, object, str] = (None, "", None, "")

    def of(self, source: NodeRecord, edge_type: str, target: NodeRecord) -> str:
        """The id of the edge of this type between these nodes."""
        last = self._last
        if last[0] is source and last[1] == edge_type and last[2] is target:
            return last[3]  # a write asks twice in a row: find_edge, then add_edge
        src_fold, src_tail = node_part(source)
        type_fold, type_tail = self.type_parts[edge_type]
        dst_fold, dst_tail = node_part(target)
        edge_id = edge_id_from_parts(edge_body(src_fold, type_fold, dst_fold), src_tail, type_tail, dst_tail)
        self._last = (source, edge_type, target, edge_id)
        return edge_id


def node_part(node: NodeRecord) -> tuple[str, str]:
    """A node's fold and edge-id tail, computed once and kept on the record."""
    part = node._part
    if part is None:
        part = node._part = (fold(node.id), name_tail(node.id))
    return part

"""Edge ids derived from each endpoint's part, computed once per node (ADR 0021).

An edge's id is ``edge:<body>-<S><T><D>`` (:mod:`contextmesh.core.ids`): every part is a function
of one node id or of the edge type. :class:`EdgeIds` derives a graph's edge ids from each node's
fold and tail, kept on the node record the first time a write asks for them, so a node that is
the endpoint of thousands of edges is folded and hashed once, not once per edge.
"""

from __future__ import annotations

from collections.abc import Iterable

from contextmesh.core.errors import OntologyError
from contextmesh.core.ids import EDGE_ID, TYPE_TAIL, edge_body, fold, long_body, name_tail
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
        src_fold, src_tail, prefix = source._part or node_part(source)
        type_fold, type_tail = self.type_parts[edge_type]
        dst_fold, dst_tail, _ = target._part or node_part(target)
        if prefix is None:  # a short source: the type and the target decide the rest of the body
            prefix = EDGE_ID.format(edge_body(src_fold, type_fold, dst_fold), src_tail, "", "")
        edge_id = prefix + type_tail + dst_tail
        self._last = (source, edge_type, target, edge_id)
        return edge_id


def node_part(node: NodeRecord) -> tuple[str, str, str | None]:
    """A node's fold, its edge-id tail and, when its id alone decides the body of every edge id out
    of it, that id's head ``edge:<body>-<tail>``; computed once and kept on the record."""
    part = node._part
    if part is None:
        node_fold, tail = fold(node.id), name_tail(node.id)
        body = long_body(node_fold)
        part = node._part = (node_fold, tail, None if body is None else EDGE_ID.format(body, tail, "", ""))
    return part

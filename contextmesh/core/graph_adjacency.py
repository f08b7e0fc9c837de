"""A graph's adjacency: each node's edges out and in, in insertion order (``ContextGraph``'s mixin).

A node record keeps its edges in two lists. A node of a loaded file starts with ``None`` there:
its loaded edges are columns in the graph's :class:`~contextmesh.core.edge_table.EdgeTable`, and the
lists are gathered from it (records built as they are) the first time that node's edges are
asked for (ADR 0038); every later edge is appended, so the order is the order of insertion.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from contextmesh.core.edge_table import EdgeTable
from contextmesh.core.model import EdgeRecord, NodeRecord

__all__ = ["Adjacency"]


class Adjacency:
    """``out_edges``, ``in_edges`` and ``degree`` over the node records' adjacency lists."""

    nodes: dict[str, NodeRecord]
    edges: EdgeTable

    if TYPE_CHECKING:  # ContextGraph's

        def edge_is_live(self, edge: EdgeRecord) -> bool: ...

    def out_edges(
        self, node_id: str, types: Iterable[str] | None = None, *, live_only: bool = True
    ) -> list[EdgeRecord]:
        """Edges leaving ``node_id`` in insertion order, optionally only of ``types`` and live."""
        node = self.nodes.get(node_id)
        return [] if node is None else self._adjacent(self._outs(node), types, live_only)

    def in_edges(self, node_id: str, types: Iterable[str] | None = None, *, live_only: bool = True) -> list[EdgeRecord]:
        """Edges entering ``node_id`` in insertion order, optionally only of ``types`` and live."""
        node = self.nodes.get(node_id)
        return [] if node is None else self._adjacent(self._ins(node), types, live_only)

    def _adjacent(self, edges: list[EdgeRecord], types: Iterable[str] | None, live_only: bool) -> list[EdgeRecord]:
        wanted = None if types is None else frozenset(types)
        if wanted is None and not live_only:
            return list(edges)
        result = []
        for edge in edges:
            if wanted is not None and edge.type not in wanted:
                continue
            if live_only and not self.edge_is_live(edge):
                continue
            result.append(edge)
        return result

    def degree(self, node_id: str) -> int:
        """Raw number of edges touching the node, live or not."""
        node = self.nodes.get(node_id)
        return 0 if node is None else len(self._outs(node)) + len(self._ins(node))

    def _outs(self, node: NodeRecord) -> list[EdgeRecord]:
        """A node's edges out; a loaded node's gathered from the edge table when first asked."""
        if node._out is None:
            node._out = self.edges.loaded_out(node._seq)
        return node._out

    def _ins(self, node: NodeRecord) -> list[EdgeRecord]:
        """A node's edges in; a loaded node's gathered from the edge table when first asked."""
        if node._in is None:
            node._in = self.edges.loaded_in(node._seq)
        return node._in

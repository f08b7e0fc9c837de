"""What a graph changed since it was last asked: the ids a commit must journal (ADR 0020).

A session commits the records a mutation touched, not the graph. To know them without
serialising everything, a :class:`GraphChanges` is attached to the graph
(:func:`track`), and :class:`~contextmesh.core.graph.ContextGraph` notes an id in it at each
write that stores or alters a record: a node or edge stored or merged, a flag set or cleared, an
edge bound, an assumption record synced, a walk counter moved. Code that assigns a stored
record's field itself says so with :meth:`ContextGraph.touch`. A graph with no tracker attached
pays one attribute test per write.

The tracker holds ids only, as insertion-ordered sets (dicts): the records themselves are read
from the graph when the commit writes them, so a record changed ten times since the last commit
is written once, as it is now. An id the graph no longer holds (a failed operation's rollback)
is skipped by the reader of the sets, never journalled.

Ordering: a journal lists new records in the graph's insertion order, so :func:`in_graph_order`
sorts ids by the graph's sequence numbers — the cost is the changed ids', not the graph's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextmesh.core.graph import ContextGraph

__all__ = ["GraphChanges", "in_graph_order", "track", "untrack"]


@dataclass
class GraphChanges:
    """Ids changed since the last :meth:`take`, by what changed."""

    nodes: dict[str, None] = field(default_factory=dict)
    edges: dict[str, None] = field(default_factory=dict)
    assumptions: dict[str, None] = field(default_factory=dict)
    walks: dict[str, None] = field(default_factory=dict)  # nodes whose ``walks`` moved
    traversals: dict[str, None] = field(default_factory=dict)  # edges whose ``traversals`` moved

    def __bool__(self) -> bool:
        return bool(self.nodes or self.edges or self.assumptions or self.walks or self.traversals)

    @property
    def structural(self) -> bool:
        """True when a record itself changed (not only a walk counter)."""
        return bool(self.nodes or self.edges or self.assumptions)

    def touched(self, graph: ContextGraph, item_id: str) -> None:
        """``item_id`` changed in ``graph``: note it under each table that holds it."""
        if item_id in graph.nodes:
            self.nodes[item_id] = None
        if item_id in graph.edges:
            self.edges[item_id] = None
        if item_id in graph.assumptions:
            self.assumptions[item_id] = None

    def counted(self, node_ids: Iterable[str], edge_ids: Iterable[str]) -> None:
        """Walk counters of these nodes and edges moved."""
        self.walks.update(dict.fromkeys(node_ids))
        self.traversals.update(dict.fromkeys(edge_ids))

    def take(self) -> GraphChanges:
        """The changes so far, handed over; this tracker starts again empty."""
        taken = GraphChanges(self.nodes, self.edges, self.assumptions, self.walks, self.traversals)
        self.nodes, self.edges, self.assumptions, self.walks, self.traversals = {}, {}, {}, {}, {}
        return taken

    def absorb(self, other: GraphChanges) -> None:
        """Add ``other``'s ids to these (a union that keeps first-seen order)."""
        self.nodes.update(other.nodes)
        self.edges.update(other.edges)
        self.assumptions.update(other.assumptions)
        self.walks.update(other.walks)
        self.traversals.update(other.traversals)

    def copy(self) -> GraphChanges:
        """An independent copy."""
        return GraphChanges(
            dict(self.nodes), dict(self.edges), dict(self.assumptions), dict(self.walks), dict(self.traversals)
        )


def track(graph: ContextGraph) -> GraphChanges:
    """Attach a fresh tracker to ``graph`` (replacing any) and return it."""
    changes = GraphChanges()
    graph._changes = changes
    return changes


def untrack(graph: ContextGraph) -> None:
    """Detach the graph's tracker, if any."""
    graph._changes = None


def in_graph_order(graph: ContextGraph, ids: Iterable[str], table: str) -> list[str]:
    """The ids still held in ``graph.<table>`` (``nodes``, ``edges``), in the graph's insertion order."""
    held = getattr(graph, table)
    present = [item for item in ids if item in held]
    present.sort(key=lambda item: held[item]._seq)
    return present

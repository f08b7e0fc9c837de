"""A graph's edges as columns, and the record views it hands out (ADR 0021).

A graph of 500,000 edges held 500,000 ``EdgeRecord`` objects: building them was the largest part
of a load after the checks, and each cost a hundred bytes besides its fields. Here every field is
one column — ids, endpoints and types as lists of the graph's own shared strings, weights and
counters as typed arrays, flags as bytes — and an edge is a row number. A caller still gets an
``EdgeRecord``: :class:`StoredEdge` is a view of one row (a subclass, so ``isinstance`` and every
field read are unchanged) whose field writes go to the columns, so ``edge.invalidated = True``
changes the graph exactly as it did.

Invariants (``tests/core/test_edge_table.py``):

1. Rows keep insertion order; a removed row is skipped by every listing and never reused while a
   later row exists (only trailing removed rows are dropped).
2. A view reads and writes its row; two views of one row are equal, and equal to a standalone
   ``EdgeRecord`` with the same fields.
3. ``model_copy`` of a view is a standalone ``EdgeRecord`` that belongs to no graph.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, Literal

from contextmesh.core.errors import OntologyError
from contextmesh.core.ids import TYPE_TAIL, edge_body, edge_id_from_parts, fold, name_tail
from contextmesh.core.model import EdgeRecord, NodeRecord

__all__ = ["EdgeIds", "EdgeMap", "EdgeTable", "StoredEdge", "node_part"]


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


class EdgeTable:
    """Every edge field as a column; ``row_of`` maps an edge id to its row."""

    __slots__ = (
        "assumption",
        "build",
        "dead",
        "dst",
        "evidence",
        "ids",
        "invalidated",
        "row_of",
        "seq",
        "src",
        "traversals",
        "type",
        "weight",
    )

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.src: list[str] = []
        self.dst: list[str] = []
        self.type: list[str] = []
        self.evidence: list[tuple[str, ...]] = []
        self.weight = array("d")
        self.build = array("q")
        self.assumption: list[str | None] = []
        self.traversals = array("q")
        self.invalidated = bytearray()
        self.seq = array("q")
        self.row_of: dict[str, int] = {}
        self.dead: set[int] = set()  # rows removed by a rollback, until they are trailing

    def __len__(self) -> int:
        return len(self.row_of)

    def append(self, record: EdgeRecord, seq: int) -> int:
        """Store a record's fields as a new row; its row number."""
        row = self.append_new(record.id, record.src, record.dst, record.type, record.evidence_ids, record.weight, seq)
        self.build[row] = record.build
        self.assumption[row] = record.assumption_id
        self.traversals[row] = record.traversals
        self.invalidated[row] = 1 if record.invalidated else 0
        return row

    def append_new(
        self, edge_id: str, src: str, dst: str, edge_type: str, evidence: tuple[str, ...], weight: float, seq: int
    ) -> int:
        """Store a new edge as a row (its build, binding, counter and flag as a new edge's); its row."""
        row = len(self.ids)
        self.ids.append(edge_id)
        self.src.append(src)
        self.dst.append(dst)
        self.type.append(edge_type)
        self.evidence.append(evidence)
        self.weight.append(weight)
        self.build.append(0)
        self.assumption.append(None)
        self.traversals.append(0)
        self.invalidated.append(0)
        self.seq.append(seq)
        self.row_of[edge_id] = row
        return row

    def extend(self, columns: tuple[Any, ...], seq_start: int, row_of: dict[str, int]) -> range:
        """Store already-checked columns (in :class:`EdgeRecord` field order) as new rows, in bulk;
        ``row_of`` is the new ids' rows, already built by the caller to see that they are unique."""
        ids, srcs, dsts, types, evidence, weights, builds, bound, traversals, invalidated = columns
        start = len(self.ids)
        self.ids.extend(ids)
        self.src.extend(srcs)
        self.dst.extend(dsts)
        self.type.extend(types)
        self.evidence.extend(evidence)
        self.weight.extend(weights)
        self.build.extend(builds)
        self.assumption.extend(bound)
        self.traversals.extend(traversals)
        self.invalidated.extend(invalidated)  # bools are 0 and 1
        self.seq.extend(range(seq_start, seq_start + len(ids)))
        rows = range(start, start + len(ids))
        self.row_of.update(row_of)
        return rows

    def remove(self, row: int) -> None:
        """Take a row out (a rollback's); trailing removed rows are dropped from the columns."""
        del self.row_of[self.ids[row]]
        self.dead.add(row)
        while self.ids and len(self.ids) - 1 in self.dead:
            last = len(self.ids) - 1
            self.dead.discard(last)
            for column in (self.ids, self.src, self.dst, self.type, self.evidence, self.assumption):
                column.pop()
            for numbers in (self.weight, self.build, self.traversals, self.seq):
                numbers.pop()
            self.invalidated.pop()

    def rows(self) -> Iterator[int]:
        """Every live row, in insertion order."""
        if not self.dead:
            return iter(range(len(self.ids)))
        return (row for row in range(len(self.ids)) if row not in self.dead)

    def view(self, row: int) -> StoredEdge:
        """The record view of a row."""
        edge = StoredEdge.__new__(StoredEdge)
        edge._table = self
        edge._row = row
        return edge


class StoredEdge(EdgeRecord, schema=EdgeRecord._schema):
    """An ``EdgeRecord`` that is a view of one row of an :class:`EdgeTable`."""

    __slots__ = ("_row", "_table")
    _table: EdgeTable
    _row: int

    # Spelled out per field, not made by a factory: a walk reads these millions of times, and a
    # direct attribute read is the cheapest a property can be.
    @property
    def id(self) -> str:  # type: ignore[override]
        """The edge's id."""
        return self._table.ids[self._row]

    @property
    def src(self) -> str:  # type: ignore[override]
        """The source node's id."""
        return self._table.src[self._row]

    @property
    def dst(self) -> str:  # type: ignore[override]
        """The target node's id."""
        return self._table.dst[self._row]

    @property
    def type(self) -> str:  # type: ignore[override]
        """The edge type."""
        return self._table.type[self._row]

    @property
    def evidence_ids(self) -> tuple[str, ...]:
        """The evidence node ids, each once."""
        return self._table.evidence[self._row]

    @evidence_ids.setter
    def evidence_ids(self, value: tuple[str, ...]) -> None:
        self._table.evidence[self._row] = value

    @property
    def weight(self) -> float:
        """The accumulated weight."""
        return self._table.weight[self._row]

    @weight.setter
    def weight(self, value: float) -> None:
        self._table.weight[self._row] = value

    @property
    def build(self) -> int:
        """The build that added the edge."""
        return self._table.build[self._row]

    @build.setter
    def build(self, value: int) -> None:
        self._table.build[self._row] = value

    @property
    def assumption_id(self) -> str | None:
        """The assumption the edge is bound to, if any."""
        return self._table.assumption[self._row]

    @assumption_id.setter
    def assumption_id(self, value: str | None) -> None:
        self._table.assumption[self._row] = value

    @property
    def traversals(self) -> int:
        """Telemetry: how many walks crossed the edge."""
        return self._table.traversals[self._row]

    @traversals.setter
    def traversals(self, value: int) -> None:
        self._table.traversals[self._row] = value

    @property
    def _seq(self) -> int:  # type: ignore[override]
        return self._table.seq[self._row]

    @property
    def invalidated(self) -> bool:
        """Whether the edge was invalidated (its row's flag)."""
        return self._table.invalidated[self._row] == 1

    @invalidated.setter
    def invalidated(self, value: bool) -> None:
        self._table.invalidated[self._row] = 1 if value else 0

    @property
    def live(self) -> bool:
        """Not invalidated (its endpoints are checked by the graph)."""
        return self._table.invalidated[self._row] == 0

    def model_copy(  # type: ignore[override]  # a copy belongs to no graph, so it is a plain record
        self, *, update: Mapping[str, Any] | None = None, deep: bool = False
    ) -> EdgeRecord:
        """A standalone copy of the row's fields (every field is immutable or a scalar)."""
        values = {name: getattr(self, name) for name in self._fields}
        values.update(update or {})
        return EdgeRecord.model_construct(**values)

    def model_dump(
        self, *, mode: Literal["python", "json"] = "python", exclude: Collection[str] = ()
    ) -> dict[str, Any]:
        """The row's fields as plain data, as a standalone record dumps them."""
        return self.model_copy().model_dump(mode=mode, exclude=exclude)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EdgeRecord):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n, None) for n in self._fields)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.model_copy())  # what the record is, not how the graph holds it


class EdgeMap(Mapping[str, EdgeRecord]):
    """``graph.edges``: the graph's edges by id, in insertion order, as record views (read-only)."""

    __slots__ = ("_table",)

    def __init__(self, table: EdgeTable) -> None:
        self._table = table

    def __getitem__(self, edge_id: str) -> EdgeRecord:
        return self._table.view(self._table.row_of[edge_id])

    def __contains__(self, edge_id: object) -> bool:
        return edge_id in self._table.row_of

    def __iter__(self) -> Iterator[str]:
        return iter(self._table.row_of)

    def __len__(self) -> int:
        return len(self._table.row_of)

    def get(self, edge_id: str, default: Any = None) -> Any:
        """The edge with this id, or ``default``."""
        row = self._table.row_of.get(edge_id)
        return default if row is None else self._table.view(row)

    def values(self) -> Iterator[EdgeRecord]:  # type: ignore[override]
        """Every edge, in insertion order."""
        view = self._table.view
        return (view(row) for row in self._table.rows())

    def items(self) -> Iterator[tuple[str, EdgeRecord]]:  # type: ignore[override]
        """Every ``(id, edge)``, in insertion order."""
        table = self._table
        return ((table.ids[row], table.view(row)) for row in table.rows())

"""``ContextGraph.edges``: the mapping from edge id to record, a loaded file's edges kept as columns.

A loader that has checked a file's edge columns hands them over with :meth:`EdgeTable.adopt`
instead of building half a million records (ADR 0038). An edge's :class:`EdgeRecord` is built the
first time someone asks for it and kept, so it is the same object on every read and a write to one
of its fields stays written; edges stored afterwards are records from the start. The id → row
index and the loaded edges' adjacency (sorted row orders, CSR) are built in bulk on first use.

The mapping behaves as the ``dict`` it replaces: insertion order (the loaded rows, then every later
edge), ``get``, ``in``, assignment, ``pop``, ``update``, ``clear``; ``values()`` and ``items()``
build every unbuilt record in one pass first, since a scan reads them all.
"""

from __future__ import annotations

import operator
from array import array
from bisect import bisect_left
from collections.abc import ItemsView, Iterator, KeysView, MutableMapping, Sequence, ValuesView
from itertools import chain, compress, repeat
from typing import Any

from contextmesh.core.model import EdgeRecord

__all__ = ["EdgeColumnsKept", "EdgeTable"]


class EdgeColumnsKept:
    """A loaded file's checked edges, one column per field (ADR 0038); endpoints as node positions."""

    __slots__ = (
        "assumptions",
        "builds",
        "dsts",
        "evidence",
        "first_seq",
        "ids",
        "invalidated",
        "node_ids",
        "srcs",
        "traversals",
        "types",
        "weights",
    )

    def __init__(
        self,
        node_ids: list[str],
        ids: list[str],
        srcs: Sequence[int],
        dsts: Sequence[int],
        types: list[str],
        evidence: list[tuple[str, ...]],
        weights: Sequence[float],
        builds: Sequence[int],
        assumptions: list[str | None] | None,
        traversals: Sequence[int],
        invalidated: Sequence[bool],
        first_seq: int,
    ) -> None:
        self.node_ids = node_ids  # the nodes' own id strings, in load order (a node's position)
        self.ids = ids
        # Compact copies: the parsed file's number objects would pin its freed memory (and cost 28
        # bytes each where these cost 4 or 8).
        self.srcs = array("i", srcs)
        self.dsts = array("i", dsts)
        self.types = types
        self.evidence = evidence
        self.weights = array("d", weights)
        self.builds = array("q", builds)
        self.assumptions = assumptions  # None when no edge is bound
        self.traversals = array("q", traversals)
        self.invalidated = bytes(map(int, invalidated))
        self.first_seq = first_seq

    def record(self, row: int) -> EdgeRecord:
        """The record of one row, built from the columns."""
        node_ids = self.node_ids
        return EdgeRecord(
            self.ids[row],
            node_ids[self.srcs[row]],
            node_ids[self.dsts[row]],
            self.types[row],
            self.evidence[row],
            self.weights[row],
            self.builds[row],
            None if self.assumptions is None else self.assumptions[row],
            self.traversals[row],
            self.invalidated[row] == 1,
            self.first_seq + row,
        )

    def records(self) -> list[EdgeRecord]:
        """Every row's record, in one C-level pass."""
        count = len(self.ids)
        node_id = self.node_ids.__getitem__
        return list(
            map(
                EdgeRecord,
                self.ids,
                map(node_id, self.srcs),
                map(node_id, self.dsts),
                self.types,
                self.evidence,
                self.weights,
                self.builds,
                repeat(None, count) if self.assumptions is None else self.assumptions,
                self.traversals,
                map(operator.eq, self.invalidated, repeat(1)),
                range(self.first_seq, self.first_seq + count),
            )
        )


def _csr(keys: Sequence[int], nodes: int) -> tuple[array[int], array[int]]:
    """Rows grouped by node (``keys[row]``), file order kept within a node, and each node's start."""
    order = array("i", sorted(range(len(keys)), key=keys.__getitem__))  # a stable sort
    ordered = sorted(keys)
    starts = array("i", map(bisect_left, repeat(ordered, nodes + 1), range(nodes + 1)))
    return order, starts


class EdgeTable(MutableMapping[str, EdgeRecord]):
    """The graph's edges by id, in insertion order (see the module)."""

    __slots__ = ("_built", "_columns", "_gone", "_in", "_index", "_later", "_out")

    def __init__(self) -> None:
        self._later: dict[str, EdgeRecord] = {}  # every edge stored as a record, in insertion order
        self._columns: EdgeColumnsKept | None = None
        self._built: list[EdgeRecord | None] = []  # a loaded row's record once built
        self._index: dict[str, int] | None = None  # a loaded edge's id -> its row, on first look-up
        self._gone: set[int] = set()  # loaded rows removed since
        self._out: tuple[array[int], array[int]] | None = None
        self._in: tuple[array[int], array[int]] | None = None

    # -- the loader's side ----------------------------------------------------------------

    def adopt(self, columns: EdgeColumnsKept) -> None:
        """Take a checked file's edges in as columns; only into an empty table."""
        if self or self._columns is not None:
            raise ValueError("an edge table adopts columns only while it is empty")
        self._columns = columns
        self._built = [None] * len(columns.ids)

    @property
    def has_columns(self) -> bool:
        """True when the table holds a loaded file's columns (its nodes' adjacency may be unbuilt)."""
        return self._columns is not None

    @property
    def lazy(self) -> bool:
        """True when some loaded edges have no record yet."""
        # ``is``, not ``None in``: a record's ``__eq__`` is Python, called once an element.
        return self._columns is not None and any(map(operator.is_, self._built, repeat(None)))

    def loaded_out(self, position: int) -> list[EdgeRecord]:
        """The loaded edges leaving the node at ``position`` (its place in the load), in file order."""
        columns = self._columns
        if columns is None or position >= len(columns.node_ids):
            return []
        if self._out is None:
            self._out = _csr(columns.srcs, len(columns.node_ids))
        return self._rows(self._out, position)

    def loaded_in(self, position: int) -> list[EdgeRecord]:
        """The loaded edges entering the node at ``position``, in file order."""
        columns = self._columns
        if columns is None or position >= len(columns.node_ids):
            return []
        if self._in is None:
            self._in = _csr(columns.dsts, len(columns.node_ids))
        return self._rows(self._in, position)

    def _rows(self, csr: tuple[array[int], array[int]], position: int) -> list[EdgeRecord]:
        order, starts = csr
        gone = self._gone
        rows = order[starts[position] : starts[position + 1]]
        return [self._record(row) for row in rows if row not in gone]

    def _record(self, row: int) -> EdgeRecord:
        record = self._built[row]
        if record is None:
            assert self._columns is not None  # a row exists only beside its columns
            record = self._built[row] = self._columns.record(row)
        return record

    def _row_of(self, key: str) -> int | None:
        if self._columns is None:
            return None
        if self._index is None:
            self._index = dict(zip(self._columns.ids, range(len(self._columns.ids)), strict=True))
        row = self._index.get(key)
        return None if row is None or row in self._gone else row

    def _build_all(self) -> None:
        if not self.lazy:
            return
        assert self._columns is not None
        if not any(map(operator.is_not, self._built, repeat(None))):
            self._built = list(self._columns.records())
            return
        for row in [row for row, record in enumerate(self._built) if record is None]:
            self._record(row)

    # -- the mapping ------------------------------------------------------------------------

    def __getitem__(self, key: str) -> EdgeRecord:
        record = self._later.get(key)
        if record is not None:
            return record
        row = self._row_of(key)
        if row is None:
            raise KeyError(key)
        return self._record(row)

    def __contains__(self, key: object) -> bool:
        if key in self._later:
            return True
        return isinstance(key, str) and self._row_of(key) is not None

    def __setitem__(self, key: str, record: EdgeRecord) -> None:
        row = None if key in self._later else self._row_of(key)
        if row is None:
            self._later[key] = record
        else:
            self._built[row] = record

    def __delitem__(self, key: str) -> None:
        if key in self._later:
            del self._later[key]
            return
        row = self._row_of(key)
        if row is None:
            raise KeyError(key)
        self._record(row)  # built, so that no row stays unbuilt for ever (``lazy``)
        self._gone.add(row)

    def __len__(self) -> int:
        loaded = 0 if self._columns is None else len(self._columns.ids) - len(self._gone)
        return loaded + len(self._later)

    def __iter__(self) -> Iterator[str]:
        return chain(self._loaded_ids(), self._later)

    def _loaded_ids(self) -> Iterator[str]:
        if self._columns is None:
            return iter(())
        ids = self._columns.ids
        if not self._gone:
            return iter(ids)
        return compress(ids, (row not in self._gone for row in range(len(ids))))

    def keys(self) -> KeysView[str]:
        # No loaded columns: the record dict's own view, whose set operations run at C speed.
        return self._later.keys() if self._columns is None else KeysView(self)

    def values(self) -> _Values:
        return _Values(self)

    def items(self) -> _Items:
        return _Items(self)

    def _all_records(self) -> Iterator[EdgeRecord]:
        self._build_all()
        if self._columns is None:
            return iter(self._later.values())
        built: Iterator[Any] = iter(self._built)
        if self._gone:
            built = compress(self._built, (row not in self._gone for row in range(len(self._built))))
        return chain(built, self._later.values())

    def popitem(self) -> tuple[str, EdgeRecord]:
        """As ``dict.popitem``: the last edge inserted, removed and returned."""
        if self._later:
            return self._later.popitem()
        for key in reversed(self):
            return key, self.pop(key)
        raise KeyError("popitem(): the edge table is empty")

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self))

    def copy(self) -> EdgeTable:
        """A shallow copy, as ``dict.copy``: its own table, the same record objects."""
        self._build_all()  # so that both tables hold one record per edge, as two dicts would
        twin = EdgeTable()
        twin._later = dict(self._later)
        twin._columns, twin._built, twin._gone = self._columns, list(self._built), set(self._gone)
        twin._index, twin._out, twin._in = self._index, self._out, self._in  # read-only once built
        return twin

    __copy__ = copy

    def clear(self) -> None:
        self._later.clear()
        self._columns, self._built, self._index, self._gone = None, [], None, set()
        self._out = self._in = None

    def update(self, *args: Any, **kwargs: EdgeRecord) -> None:
        """As ``dict.update``; with no loaded columns, at the dict's own speed (the bulk writers)."""
        if self._columns is None:
            self._later.update(*args, **kwargs)
            return
        super().update(*args, **kwargs)

    def __repr__(self) -> str:
        return f"EdgeTable({len(self)} edges)"


class _Values(ValuesView[EdgeRecord]):
    """``EdgeTable.values()``: a re-iterable view of the records in insertion order."""

    __slots__ = ("_table",)

    def __init__(self, table: EdgeTable) -> None:
        super().__init__(table)
        self._table = table

    def __iter__(self) -> Iterator[EdgeRecord]:
        return self._table._all_records()

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, record: object) -> bool:
        return any(record == value for value in self)


class _Items(ItemsView[str, EdgeRecord]):
    """``EdgeTable.items()``: ``(id, record)`` pairs in insertion order; compares as a set, as a dict's."""

    __slots__ = ("_table",)

    def __init__(self, table: EdgeTable) -> None:
        super().__init__(table)
        self._table = table

    def __iter__(self) -> Iterator[tuple[str, EdgeRecord]]:
        records = list(self._table._all_records())
        return zip(self._table, records, strict=True)

    def __len__(self) -> int:
        return len(self._table)

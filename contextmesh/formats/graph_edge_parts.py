"""Edge parts written as columns (``graph-v3.md`` section 13.1, rules G58-G60; ADR 0034).

A parted graph file whose header says ``"layout": "columns"`` writes each edge part as one object
of ten arrays, one per field of the edge record, instead of an array of ten-field records; the
endpoints, the evidence ids and the bound assumption name nodes by their index in the file's node
list. The parser then makes ten lists a part, not 50,000 dicts, and the loader checks and builds
edges column by column without looking an endpoint's id up in a table of strings.

Every column is untrusted: :func:`check_edge_part` holds a part to G58-G60 (the ten names, arrays
of one length, node indices within the node list) before anything is made of it, and
:meth:`EdgeColumns.records` turns checked columns back into the records of section 5.4, the
assembled object every other rule is applied to. :func:`edge_columns` is the writer's side.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any

from contextmesh.core.errors import SnapshotError
from contextmesh.core.model import EdgeSchema
from contextmesh.formats.records import exact_keys, expect_dict

__all__ = ["COLUMNS_LAYOUT", "EDGE_FIELDS", "EdgeColumns", "check_edge_part", "edge_columns"]

COLUMNS_LAYOUT = "columns"
EDGE_FIELDS = tuple(EdgeSchema.model_fields)  # id, src, dst, type, evidence_ids, weight, build, ...
_NODE_REFERENCES = ("src", "dst")


def edge_columns(records: Sequence[dict[str, Any]], index: dict[str, int]) -> dict[str, list[Any]]:
    """One edge part's columns from its records; ``index`` maps a node id to its place in the file."""
    columns = {name: list(map(operator.itemgetter(name), records)) for name in EDGE_FIELDS}
    for name in _NODE_REFERENCES:
        columns[name] = list(map(index.__getitem__, columns[name]))
    columns["evidence_ids"] = [[index[e] for e in ids] if ids else [] for ids in columns["evidence_ids"]]
    columns["assumption_id"] = [None if a is None else index[a] for a in columns["assumption_id"]]
    return columns


def _first_bad(column: Sequence[Any], nodes: int, nullable: bool = False) -> int | None:
    """The position of the first value that is not a node index (``0..nodes-1``), or ``None``."""
    values: Sequence[Any] = [v for v in column if v is not None] if nullable else column
    if set(map(type, values)) <= {int} and (not values or (min(values) >= 0 and max(values) < nodes)):
        return None
    for position, value in enumerate(column):  # the error path only: name the first one
        if not (nullable and value is None) and not (type(value) is int and 0 <= value < nodes):
            return position
    return None  # unreachable: the fast test found one


def _index_rule(nodes: int, rule: str, what: str = "a node") -> str:
    return f"{rule}: {what} named by its index in the file, an integer from 0 to {nodes - 1}"


def check_edge_part(value: Any, where: str, nodes: int) -> tuple[dict[str, list[Any]], int]:
    """G58-G60 for one edge part's columns (``where`` is ``part[k].edges``); the columns and their length."""
    columns = expect_dict(value, where)  # G58: an object of columns
    exact_keys(columns, EDGE_FIELDS, where)
    length = -1
    for name in EDGE_FIELDS:
        column = columns[name]
        if type(column) is not list:
            raise SnapshotError(f"{where}.{name}", type(column).__name__, "G58: a column is an array")
        if length == -1:
            length = len(column)
        elif len(column) != length:
            raise SnapshotError(
                f"{where}.{name}", f"{len(column)} values", f"G58: every column holds as many values as id ({length})"
            )
    for name in _NODE_REFERENCES:
        bad = _first_bad(columns[name], nodes)
        if bad is not None:
            raise SnapshotError(f"{where}.{name}[{bad}]", repr(columns[name][bad])[:60], _index_rule(nodes, "G59"))
    bad = _first_bad(columns["assumption_id"], nodes, nullable=True)
    if bad is not None:
        found = repr(columns["assumption_id"][bad])[:60]
        raise SnapshotError(f"{where}.assumption_id[{bad}]", found, _index_rule(nodes, "G59", "null or a node"))
    _check_evidence(columns["evidence_ids"], f"{where}.evidence_ids", nodes)
    return columns, length


def _check_evidence(column: list[Any], where: str, nodes: int) -> None:
    """G60: each edge's evidence is an array of node indices."""
    if set(map(type, column)) <= {list} and _first_bad(list(chain.from_iterable(column)), nodes) is None:
        return
    for position, ids in enumerate(column):
        if type(ids) is not list:
            raise SnapshotError(f"{where}[{position}]", type(ids).__name__, "G60: an edge's evidence is an array")
        bad = _first_bad(ids, nodes)
        if bad is not None:
            raise SnapshotError(f"{where}[{position}][{bad}]", repr(ids[bad])[:60], _index_rule(nodes, "G60"))


class EdgeColumns:
    """A parted file's checked edge columns, part by part, in file order.

    The parser leaves this in the document's ``edges``: the loader builds edges from the columns,
    and :meth:`records` gives the records of section 5.4 to anything that needs the assembled
    object (the per-record pass that names a problem, a session's journal replay).
    """

    __slots__ = ("nodes", "parts")

    def __init__(self, parts: list[dict[str, list[Any]]], nodes: int) -> None:
        self.parts = parts
        self.nodes = nodes  # the file's node count, which every index was checked against

    def __len__(self) -> int:
        return sum(len(part["id"]) for part in self.parts)

    def column(self, name: str) -> list[Any]:
        """One field's values over every part."""
        return list(chain.from_iterable(part[name] for part in self.parts))

    def records(self, nodes: Sequence[Any]) -> list[dict[str, Any]]:
        """The edge records the columns stand for; an index names ``nodes[i]["id"]`` (``None`` when
        that record holds no id: the node rules, applied first, refuse that record anyway)."""
        ids: list[Any] = [n.get("id") if type(n) is dict else None for n in nodes]
        return list(self._records(ids))

    def _records(self, ids: list[Any]) -> Iterator[dict[str, Any]]:
        name_of = ids.__getitem__
        for part in self.parts:
            values = dict(part)
            for name in _NODE_REFERENCES:
                values[name] = list(map(name_of, part[name]))
            values["evidence_ids"] = [list(map(name_of, e)) for e in part["evidence_ids"]]
            values["assumption_id"] = [None if a is None else ids[a] for a in part["assumption_id"]]
            for row in zip(*(values[name] for name in EDGE_FIELDS), strict=True):
                yield dict(zip(EDGE_FIELDS, row, strict=True))

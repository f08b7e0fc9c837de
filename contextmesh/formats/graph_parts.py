"""A graph file in bounded parts: one JSON document per line (``graph-v3.md`` section 13).

A graph file was one JSON document, and orjson (the strict parser's first pass) refuses a document
near 2 GiB: the 10⁶-node graph with v3's edge ids is about 2.2 GB. A graph whose node, edge or
assumption list is longer than ``records`` is therefore written as a *parted* file: a header line
(the top-level fields, with ``parts`` in place of the three lists) followed by one line per part,
``{"nodes": [...]}`` then ``{"edges": [...]}`` then ``{"assumptions": [...]}``, each list cut into
parts of exactly ``records`` records (the last of each list shorter). Each line is canonical
JSON ending in a newline, so the file's bytes are a function of the graph and ``records`` alone.
A graph that fits is written as one document, as before.

Since ADR 0034 the header's ``parts`` says ``"layout": "columns"`` and each edge part is ten
columns, nodes named by their index in the file (:mod:`contextmesh.formats.graph_edge_parts`);
files with record parts and no ``layout`` are still read.

Reading: :func:`graph_document` returns the one document either shape describes, every list as
records; :func:`parse_graph` the same with a parted file's edge columns left as columns (what the
loader builds from). Every part is untrusted input of its own (G52-G60): its byte length is
bounded before it is parsed, it is parsed strictly (``canonical.loads``, G1-G4 with paths under
``part[k]``), and it must be exactly the part the header announces at that place. The assembled
document then meets every other rule.
"""

from __future__ import annotations

from typing import Any

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import CanonicalError, SnapshotError
from contextmesh.formats.graph_edge_parts import COLUMNS_LAYOUT, EdgeColumns, check_edge_part, edge_columns
from contextmesh.formats.records import exact_keys, expect_dict

__all__ = ["MAX_PART_BYTES", "MAX_PART_RECORDS", "PART_RECORDS", "graph_bytes", "graph_document", "parse_graph"]

PART_RECORDS = 50_000  # the writer's part size: about 100 MB of nodes with embeddings, 13 MB of edges
MAX_PART_RECORDS = 1_000_000  # the most records a reader takes in one part (G53)
MAX_PART_BYTES = 1 << 30  # the longest line a reader parses (G55): half of what orjson refuses
_LISTS = ("nodes", "edges", "assumptions")
_HEADER = ("schema", "version", "ontology", "build", "parts")
_PARTS = (*_LISTS, "records")


def graph_bytes(document: dict[str, Any], records: int | None = None) -> bytes:
    """The file bytes of a graph document: one document, or parts of ``records`` records
    (:data:`PART_RECORDS`, read when called), the edge parts as columns (ADR 0034)."""
    records = PART_RECORDS if records is None else records
    if all(len(document[name]) <= records for name in _LISTS):
        return file_bytes(document)
    header = {key: value for key, value in document.items() if key not in _LISTS}
    header["parts"] = {name: -(-len(document[name]) // records) for name in _LISTS}
    header["parts"] |= {"records": records, "layout": COLUMNS_LAYOUT}
    lines = [file_bytes(header)]
    index = {node["id"]: position for position, node in enumerate(document["nodes"])}
    for name in _LISTS:
        items = document[name]
        for at in range(0, len(items), records):
            part = items[at : at + records]
            lines.append(file_bytes({name: edge_columns(part, index) if name == "edges" else part}))
    return b"".join(lines)


def graph_document(data: bytes) -> Any:
    """The parsed graph document ``data`` holds, in either shape, every list as records (see the module)."""
    document = parse_graph(data)
    if type(document) is dict and type(document.get("edges")) is EdgeColumns:
        document["edges"] = document["edges"].records(document["nodes"])
    return document


def parse_graph(data: bytes) -> Any:
    """What :func:`graph_document` returns, but a parted file's edge columns left as
    :class:`~contextmesh.formats.graph_edge_parts.EdgeColumns`: the strict parse the loader runs first."""
    end = data.find(b"\n")
    if end in (-1, len(data) - 1):
        return loads(data)  # one line: one document (G1-G4)
    try:
        head = loads(data[: end + 1])
    except CanonicalError:
        return loads(data)  # not a header line: the whole file is one document, or refused as one
    if type(head) is not dict or "parts" not in head:
        return loads(data)
    return _assembled(head, data, end + 1)


def _count(value: Any, path: str, rule: str) -> int:
    if type(value) is not int or value < 0:
        raise SnapshotError(path, repr(value)[:60], rule)
    return value


def _plan(head: dict[str, Any], lines: int) -> tuple[int, list[str]]:
    """G52-G54: the header's fields and ``parts``; the part size and each line's list name (the
    counts checked against the ``lines`` the file holds before any list is made of them)."""
    exact_keys(head, _HEADER, "$")
    parts = expect_dict(head["parts"], "parts")
    exact_keys(parts, (*_PARTS, "layout") if "layout" in parts else _PARTS, "parts")
    if "layout" in parts and parts["layout"] != COLUMNS_LAYOUT:
        raise SnapshotError("parts.layout", repr(parts["layout"])[:60], f"G52: the one layout is {COLUMNS_LAYOUT!r}")
    records = _count(parts["records"], "parts.records", "G53: a part size of 1 or more records")
    if not 1 <= records <= MAX_PART_RECORDS:
        raise SnapshotError("parts.records", str(records), f"G53: a part holds 1 to {MAX_PART_RECORDS} records")
    counts = [_count(parts[name], f"parts.{name}", "G53: a count of parts, 0 or more") for name in _LISTS]
    if sum(counts) != lines:  # before a list of that many names is made: a forged count cannot cost memory
        raise SnapshotError("parts", f"{sum(counts)} parts for {lines} lines", "G54: one line after the header a part")
    return records, [name for name, count in zip(_LISTS, counts, strict=True) for _ in range(count)]


def _lines(data: bytes, start: int, expected: int) -> list[bytes]:
    """G54-G55: exactly ``expected`` newline-ended lines after the header, each within the bound."""
    lines: list[bytes] = []
    while start < len(data):
        end = data.find(b"\n", start)
        stop = len(data) if end == -1 else end + 1
        if stop - start > MAX_PART_BYTES:
            raise SnapshotError(
                f"part[{len(lines)}]", f"{stop - start} bytes", f"G55: a part is at most {MAX_PART_BYTES} bytes"
            )
        if end == -1:
            raise SnapshotError(f"part[{len(lines)}]", "a last line without a newline", "G54: every line ends in one")
        if len(lines) == expected:
            raise SnapshotError(f"part[{expected}]", "a line after the last part", f"G54: the header names {expected}")
        lines.append(data[start:stop])
        start = stop
    if len(lines) != expected:
        raise SnapshotError(f"part[{len(lines)}]", "the end of the file", f"G54: the header names {expected} parts")
    return lines


def _assembled(head: dict[str, Any], data: bytes, start: int) -> dict[str, Any]:
    records, kinds = _plan(head, data.count(b"\n", start))
    columns = head["parts"].get("layout") == COLUMNS_LAYOUT
    document = {key: value for key, value in head.items() if key != "parts"}
    lists: dict[str, list[Any]] = {name: [] for name in _LISTS}
    counts = dict.fromkeys(_LISTS, 0)
    lines = _lines(data, start, len(kinds))
    for index, (kind, line) in enumerate(zip(kinds, lines, strict=True)):
        where = f"part[{index}]"
        part = expect_dict(loads(line, where), where)  # G56: strict JSON, an object
        exact_keys(part, (kind,), where)  # G57: the list the header puts here, and nothing else
        items = part[kind]
        if columns and kind == "edges":  # G58-G60: ten columns, endpoints as node indices
            items, length = check_edge_part(items, f"{where}.edges", counts["nodes"])
        elif type(items) is not list:
            raise SnapshotError(f"{where}.{kind}", type(items).__name__, "G57: a part's records are an array")
        else:
            length = len(items)
        last = index + 1 == len(kinds) or kinds[index + 1] != kind
        if not (1 <= length <= records) or (not last and length != records):
            rule = f"G57: every part holds {records} records but the last of its list, which holds 1 to {records}"
            raise SnapshotError(f"{where}.{kind}", f"{length} records", rule)
        counts[kind] += length
        if columns and kind == "edges":
            lists[kind].append(items)
        else:
            lists[kind].extend(items)
    if all(count <= records for count in counts.values()):  # one graph, one encoding
        raise SnapshotError("parts", f"every list within {records} records", "G53: a graph that fits is one document")
    document.update(lists)
    if columns:
        document["edges"] = EdgeColumns(lists["edges"], counts["nodes"])
    return document

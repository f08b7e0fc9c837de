"""A graph file in bounded parts: one JSON document per line (``graph-v3.md`` section 13).

A graph file was one JSON document, and orjson (the strict parser's first pass) refuses a document
near 2 GiB: the 10⁶-node graph with v3's edge ids is about 2.2 GB. A graph whose node, edge or
assumption list is longer than ``records`` is therefore written as a *parted* file: a header line
(the top-level fields, with ``parts`` in place of the three lists) followed by one line per part,
``{"nodes": [...]}`` then ``{"edges": [...]}`` then ``{"assumptions": [...]}``, each list cut into
parts of exactly ``records`` records (the last of each list shorter). Each line is canonical
JSON ending in a newline, so the file's bytes are a function of the graph and ``records`` alone.
A graph that fits is written as one document, as before.

Reading: :func:`graph_document` returns the one document either shape describes. Every part is
untrusted input of its own (G52-G57): its byte length is bounded before it is parsed, it is parsed
strictly (``canonical.loads``, G1-G4 with paths under ``part[k]``), and it must be exactly the part
the header announces at that place. The assembled document then meets every other rule.
"""

from __future__ import annotations

from typing import Any

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import CanonicalError, SnapshotError
from contextmesh.formats.records import exact_keys, expect_dict

__all__ = ["MAX_PART_BYTES", "MAX_PART_RECORDS", "PART_RECORDS", "graph_bytes", "graph_document"]

PART_RECORDS = 50_000  # the writer's part size: about 100 MB of nodes with embeddings, 13 MB of edges
MAX_PART_RECORDS = 1_000_000  # the most records a reader takes in one part (G53)
MAX_PART_BYTES = 1 << 30  # the longest line a reader parses (G55): half of what orjson refuses
_LISTS = ("nodes", "edges", "assumptions")
_HEADER = ("schema", "version", "ontology", "build", "parts")
_PARTS = (*_LISTS, "records")


def graph_bytes(document: dict[str, Any], records: int | None = None) -> bytes:
    """The file bytes of a graph document: one document, or parts of ``records`` records
    (:data:`PART_RECORDS`, read when called)."""
    records = PART_RECORDS if records is None else records
    if all(len(document[name]) <= records for name in _LISTS):
        return file_bytes(document)
    header = {key: value for key, value in document.items() if key not in _LISTS}
    header["parts"] = {name: -(-len(document[name]) // records) for name in _LISTS} | {"records": records}
    lines = [file_bytes(header)]
    for name in _LISTS:
        items = document[name]
        lines.extend(file_bytes({name: items[at : at + records]}) for at in range(0, len(items), records))
    return b"".join(lines)


def graph_document(data: bytes) -> Any:
    """The parsed graph document ``data`` holds, in either shape (see the module)."""
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
    exact_keys(parts, _PARTS, "parts")
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
    document = {key: value for key, value in head.items() if key != "parts"}
    lists: dict[str, list[Any]] = {name: [] for name in _LISTS}
    lines = _lines(data, start, len(kinds))
    for index, (kind, line) in enumerate(zip(kinds, lines, strict=True)):
        where = f"part[{index}]"
        part = expect_dict(loads(line, where), where)  # G56: strict JSON, an object
        exact_keys(part, (kind,), where)  # G57: the list the header puts here, and nothing else
        items = part[kind]
        if type(items) is not list:
            raise SnapshotError(f"{where}.{kind}", type(items).__name__, "G57: a part's records are an array")
        last = index + 1 == len(kinds) or kinds[index + 1] != kind
        if not (1 <= len(items) <= records) or (not last and len(items) != records):
            rule = f"G57: every part holds {records} records but the last of its list, which holds 1 to {records}"
            raise SnapshotError(f"{where}.{kind}", f"{len(items)} records", rule)
        lists[kind].extend(items)
    if all(len(items) <= records for items in lists.values()):  # one graph, one encoding
        raise SnapshotError("parts", f"every list within {records} records", "G53: a graph that fits is one document")
    document.update(lists)
    return document

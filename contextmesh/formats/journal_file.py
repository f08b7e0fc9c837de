"""The journal segment format ``contextmesh.journal`` v1: a generation's mutations, and their replay.

``docs/formats/journal-v1.md`` specifies it for an independent reader; ADR 0020 says why. A
segment holds what changed since the generation before it, whole records in the graph file's own
form (so replaying one is replacing records, never re-running operations)::

    {"schema": "contextmesh.journal", "version": 1,
     "base": {"graph": sha, "telemetry": sha, "resolver": sha},   # the snapshot it applies to
     "sequence": 3, "previous": sha-of-segment-2,                  # its place in the chain
     "build": 41,                                                  # the graph's build after it
     "nodes": [...], "edges": [...], "assumptions": [...],         # graph-v2 records, counters 0
     "walks": [[node_id, n]], "traversals": [[edge_id, n]],        # counters that moved, their value
     "aliases": [[surface, entity_id]], "log": [{...}]}            # resolver: appended since

:func:`parse_segment` checks a segment's own rules (J5-J17 of the format page) without the
snapshot; :func:`replay_graph` and :func:`replay_resolver` apply checked segments to the snapshot's
parsed documents, in place and in order. The caller then runs the strict graph and resolver
loaders on the replayed documents, so every rule of those formats holds for the state a reader
ends with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import EdgeRecord, NodeRecord
from contextmesh.formats.graph_file import assumption_data, provenance_data
from contextmesh.formats.records import check_header, exact_keys, expect_dict, expect_list
from contextmesh.knowledge.resolve import LOG_LIMIT, ResolutionRecord

__all__ = [
    "JOURNAL_SCHEMA",
    "JOURNAL_VERSION",
    "Segment",
    "assumption_data",
    "dump_segment",
    "edge_data",
    "log_data",
    "node_data",
    "parse_segment",
    "replay_graph",
    "replay_resolver",
]

JOURNAL_SCHEMA = "contextmesh.journal"
JOURNAL_VERSION = 1
_FIELDS = (
    "schema",
    "version",
    "base",
    "sequence",
    "previous",
    "build",
    "nodes",
    "edges",
    "assumptions",
    "walks",
    "traversals",
    "aliases",
    "log",
)
BASE_KINDS = ("graph", "telemetry", "resolver")
_HEX = re.compile(r"^[0-9a-f]{64}$")
_LOG_FIELDS = tuple(f.name for f in fields(ResolutionRecord))


# -- records in the graph file's form (graph_file.graph_to_dict's, record by record) ----------


def node_data(n: NodeRecord) -> dict[str, Any]:
    """A node as the graph file writes it, ``walks`` 0 (counters live in telemetry)."""
    return {
        "id": n.id,
        "type": n.type,
        "label": n.label,
        "attrs": n.attrs,
        "provenance": provenance_data(n.provenance),
        "embedding": n.embedding,
        "build": n.build,
        "walks": 0,
        "pruned": n.pruned,
        "invalidated": n.invalidated,
    }


def edge_data(e: EdgeRecord) -> dict[str, Any]:
    """An edge as the graph file writes it, ``traversals`` 0."""
    return {
        "id": e.id,
        "src": e.src,
        "dst": e.dst,
        "type": e.type,
        "evidence_ids": list(e.evidence_ids),
        "weight": e.weight,
        "build": e.build,
        "assumption_id": e.assumption_id,
        "traversals": 0,
        "invalidated": e.invalidated,
    }


def log_data(record: ResolutionRecord) -> dict[str, Any]:
    """A resolution-log record as the resolver file writes it."""
    return {name: getattr(record, name) for name in _LOG_FIELDS}


# -- writing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """One checked segment (its records still plain data, checked again once replayed)."""

    base: dict[str, str]
    sequence: int
    previous: str | None
    build: int
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    assumptions: list[dict[str, Any]]
    walks: list[tuple[str, int]]
    traversals: list[tuple[str, int]]
    aliases: list[tuple[str, str]]
    log: list[dict[str, Any]]


def dump_segment(
    graph: ContextGraph,
    *,
    base: dict[str, str],
    sequence: int,
    previous: str | None,
    records: tuple[Sequence[str], Sequence[str], Sequence[str]],
    counters: tuple[Iterable[str], Iterable[str]],
    aliases: Sequence[tuple[str, str]],
    log: Sequence[ResolutionRecord],
) -> bytes:
    """A segment's bytes: ``records`` are (node, edge, assumption) ids in insertion order, read
    from ``graph`` as they are now; ``counters`` the node and edge ids whose walk counters moved."""
    node_ids, edge_ids, assumption_ids = records
    walked, traversed = counters
    document = {
        "schema": JOURNAL_SCHEMA,
        "version": JOURNAL_VERSION,
        "base": dict(base),
        "sequence": sequence,
        "previous": previous,
        "build": graph.build,
        "nodes": [node_data(graph.nodes[i]) for i in node_ids],
        "edges": [edge_data(graph.edges[i]) for i in edge_ids],
        "assumptions": [assumption_data(graph.assumptions[i]) for i in assumption_ids],
        "walks": [[i, graph.nodes[i].walks] for i in walked],
        "traversals": [[i, graph.edges[i].traversals] for i in traversed],
        "aliases": [list(pair) for pair in aliases],
        "log": [log_data(record) for record in log],
    }
    return file_bytes(document)


# -- reading -----------------------------------------------------------------------------


def _count(value: Any, path: str) -> int:
    if type(value) is not int or value < 0:
        raise SnapshotError(path, repr(value)[:60], "an integer of at least 0")
    return value


def _records(value: Any, path: str) -> list[dict[str, Any]]:
    """J12-J14: objects whose ``id`` is a string, no id twice in the list."""
    seen: set[str] = set()
    out = []
    for index, item in enumerate(expect_list(value, path)):
        record = expect_dict(item, f"{path}[{index}]")
        record_id = record.get("id")
        if type(record_id) is not str:
            raise SnapshotError(f"{path}[{index}].id", repr(record_id)[:60], "a record's id is a string")
        if record_id in seen:
            raise SnapshotError(f"{path}[{index}].id", repr(record_id)[:60], "a segment lists each record once")
        seen.add(record_id)
        out.append(record)
    return out


def _pairs(value: Any, path: str, second: type) -> list[tuple[Any, Any]]:
    """J15-J17: ``[string, value]`` pairs, no first element twice."""
    seen: set[str] = set()
    out = []
    for index, item in enumerate(expect_list(value, path)):
        where = f"{path}[{index}]"
        if type(item) is not list or len(item) != 2:
            raise SnapshotError(where, repr(item)[:60], "a pair of two elements")
        key, other = item
        if type(key) is not str:
            raise SnapshotError(f"{where}[0]", repr(key)[:60], "an id or surface is a string")
        if key in seen:
            raise SnapshotError(f"{where}[0]", repr(key)[:60], "a segment lists each id or surface once")
        if second is int:
            _count(other, f"{where}[1]")
        elif type(other) is not second:
            raise SnapshotError(f"{where}[1]", repr(other)[:60], "an entity id is a string")
        seen.add(key)
        out.append((key, other))
    return out


def parse_segment(data: bytes, *, sequence: int, previous: str | None, base: dict[str, str]) -> Segment:
    """Check one segment's own rules; it must sit at ``sequence`` after ``previous`` on ``base``."""
    top = expect_dict(loads(data), "$")
    check_header(top, JOURNAL_SCHEMA, JOURNAL_VERSION, original_versions=())
    exact_keys(top, _FIELDS, "$")
    found_base = expect_dict(top["base"], "base")
    exact_keys(found_base, BASE_KINDS, "base")
    for kind in BASE_KINDS:
        value = found_base[kind]
        if type(value) is not str or not _HEX.match(value):
            raise SnapshotError(f"base.{kind}", repr(value)[:80], "a SHA-256 is 64 lower-case hex digits")
        if value != base[kind]:
            raise SnapshotError(
                f"base.{kind}", value, f"a segment applies to its generation's snapshot, whose {kind} is {base[kind]}"
            )
    if top["sequence"] != sequence or type(top["sequence"]) is not int:
        raise SnapshotError(
            "sequence", repr(top["sequence"])[:40], f"a segment's sequence is its place in the journal ({sequence})"
        )
    if top["previous"] != previous:
        wanted = "null (the first segment)" if previous is None else f"the digest of the segment before it, {previous}"
        raise SnapshotError("previous", repr(top["previous"])[:80], f"previous is {wanted}")
    return Segment(
        dict(found_base),
        sequence,
        previous,
        _count(top["build"], "build"),
        _records(top["nodes"], "nodes"),
        _records(top["edges"], "edges"),
        _records(top["assumptions"], "assumptions"),
        _pairs(top["walks"], "walks", int),
        _pairs(top["traversals"], "traversals", int),
        _pairs(top["aliases"], "aliases", str),
        [expect_dict(item, f"log[{i}]") for i, item in enumerate(expect_list(top["log"], "log"))],
    )


# -- replay ------------------------------------------------------------------------------


def _upsert(table: list[Any], records: list[dict[str, Any]], where: dict[str, int], path: str) -> None:
    """Replace each record whose id the table holds where it stands (keeping its type); append the rest."""
    for index, record in enumerate(records):
        at = where.get(record["id"])
        if at is None:
            where[record["id"]] = len(table)
            table.append(record)
            continue
        held = table[at]
        if type(held) is dict and "type" in record and held.get("type") != record.get("type"):
            raise SnapshotError(
                f"{path}[{index}].type",
                repr(record.get("type"))[:60],
                f"a replaced record keeps its type ({held.get('type')!r})",
            )
        table[at] = record


def _index(table: list[Any]) -> dict[str, int]:
    return {item["id"]: i for i, item in enumerate(table) if type(item) is dict and type(item.get("id")) is str}


def replay_graph(document: Any, segments: Sequence[tuple[str, Segment]]) -> None:
    """Apply ``segments`` (name, segment) in order to a parsed graph document, in place.

    A document that is not a graph document's shape is left for the graph loader to refuse.
    A refusal here names the segment: ``<name>:nodes[3].type``.
    """
    if type(document) is not dict:
        return
    tables = {name: document.get(name) for name in ("nodes", "edges", "assumptions")}
    if not all(type(table) is list for table in tables.values()):
        return
    indexes = {name: _index(table) for name, table in tables.items()}  # type: ignore[arg-type]
    build = document.get("build")
    for name, segment in segments:
        if type(build) is int and segment.build < build:
            raise SnapshotError(f"{name}:build", str(segment.build), f"the build never goes back (it was {build})")
        build = segment.build
        try:
            for table in ("nodes", "edges", "assumptions"):
                _upsert(tables[table], getattr(segment, table), indexes[table], table)  # type: ignore[arg-type]
        except SnapshotError as exc:
            raise SnapshotError(f"{name}:{exc.path}", exc.found, exc.rule) from None
    document["build"] = build


def replay_resolver(document: Any, segments: Sequence[tuple[str, Segment]]) -> None:
    """Append each segment's aliases and log records to a parsed resolver document, in place.

    The log keeps its newest ``LOG_LIMIT`` records, as the live resolver does.
    """
    if type(document) is not dict or type(document.get("aliases")) is not list or type(document.get("log")) is not list:
        return
    known = {pair[0] for pair in document["aliases"] if type(pair) is list and pair and type(pair[0]) is str}
    for name, segment in segments:
        for index, (surface, entity_id) in enumerate(segment.aliases):
            if surface in known:
                raise SnapshotError(
                    f"{name}:aliases[{index}][0]", repr(surface)[:60], "a journalled alias is new to the resolver"
                )
            known.add(surface)
            document["aliases"].append([surface, entity_id])
        for index, record in enumerate(segment.log):
            exact_keys(record, _LOG_FIELDS, f"{name}:log[{index}]")
        document["log"].extend(segment.log)
    if len(document["log"]) > LOG_LIMIT:
        del document["log"][: len(document["log"]) - LOG_LIMIT]

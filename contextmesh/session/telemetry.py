"""The telemetry companion ``contextmesh.telemetry`` v1: walk counters kept apart from the graph.

A session's graph companion carries every ``walks`` and ``traversals`` as 0; the real counters live
in this small file, so a commit that only changed telemetry (a question asked) rewrites this file
and the manifest, not the whole graph. The document::

    {"schema": "contextmesh.telemetry", "version": 1,
     "nodes": [[node_id, walks], ...], "edges": [[edge_id, traversals], ...]}

lists only non-zero counters, in graph insertion order. The loader is strict: exact schema and
version, every field required, no other field, each entry a pair of an id that exists in the graph
and an integer ≥ 0, no id twice. A counter drives nothing while loading (it is only stored), so its
size costs no work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.formats.graph_file import collector_paused, graph_to_dict
from contextmesh.formats.graph_parts import graph_bytes
from contextmesh.formats.graph_upgrade import EdgesAnyVersion
from contextmesh.formats.records import check_header, exact_keys, expect_dict, expect_list

__all__ = [
    "TELEMETRY_SCHEMA",
    "TELEMETRY_VERSION",
    "apply_telemetry",
    "dump_structure",
    "dump_telemetry",
    "parse_telemetry",
]

TELEMETRY_SCHEMA = "contextmesh.telemetry"
TELEMETRY_VERSION = 1
_FIELDS = ("schema", "version", "nodes", "edges")


def dump_structure(graph: ContextGraph) -> bytes:
    """The graph file bytes with every ``walks`` and ``traversals`` 0 (the live graph is untouched)."""
    with collector_paused():
        data = graph_to_dict(graph)
        for node in data["nodes"]:
            node["walks"] = 0
        for edge in data["edges"]:
            edge["traversals"] = 0
        return graph_bytes(data)  # one document, or bounded parts at 10^6 (graph-v3.md section 13)


def dump_telemetry(graph: ContextGraph) -> bytes:
    """The telemetry companion's bytes: the non-zero counters, in insertion order."""
    return file_bytes(
        {
            "schema": TELEMETRY_SCHEMA,
            "version": TELEMETRY_VERSION,
            "nodes": [[n.id, n.walks] for n in graph.nodes.values() if n.walks],
            "edges": [[e.id, e.traversals] for e in graph.edges.values() if e.traversals],
        }
    )


def _pairs(value: Any, path: str, known: Mapping[str, Any], what: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for index, item in enumerate(expect_list(value, path)):
        where = f"{path}[{index}]"
        if type(item) is not list or len(item) != 2:
            raise SnapshotError(where, repr(item)[:60], f"a pair [{what}_id, count]")
        item_id, count = item
        if type(item_id) is not str or item_id not in known:
            raise SnapshotError(f"{where}[0]", repr(item_id)[:60], f"an id among the graph's {what}s")
        if type(count) is not int or count < 0:
            raise SnapshotError(f"{where}[1]", repr(count)[:60], "a counter is an integer of at least 0")
        item_id = known[item_id].id  # an upgraded graph's edge may be named by its v2 id (ADR 0021)
        if item_id in found:
            raise SnapshotError(f"{where}[0]", repr(item_id)[:60], f"each {what} is listed at most once")
        found[item_id] = count
    return found


def parse_telemetry(data: bytes, graph: ContextGraph) -> tuple[dict[str, int], dict[str, int]]:
    """Check a telemetry file strictly against ``graph``; return (walks by node, traversals by edge)."""
    top = expect_dict(loads(data), "$")
    check_header(top, TELEMETRY_SCHEMA, TELEMETRY_VERSION, original_versions=())
    exact_keys(top, _FIELDS, "$")
    edges = graph.edges if graph.upgraded_from is None else EdgesAnyVersion(graph)
    return _pairs(top["nodes"], "nodes", graph.nodes, "node"), _pairs(top["edges"], "edges", edges, "edge")


def check_zeroed(graph: ContextGraph) -> None:
    """Refuse a session graph companion that carries a counter itself (they live in telemetry)."""
    for index, node in enumerate(graph.nodes.values()):
        if node.walks:
            raise SnapshotError(
                f"nodes[{index}].walks", str(node.walks), "a session's graph file carries walks as 0 (see telemetry)"
            )
    for index, edge in enumerate(graph.edges.values()):
        if edge.traversals:
            raise SnapshotError(
                f"edges[{index}].traversals",
                str(edge.traversals),
                "a session's graph file carries traversals as 0 (see telemetry)",
            )


def apply_telemetry(data: bytes, graph: ContextGraph) -> None:
    """Parse ``data`` against ``graph`` (wholly, before touching it), then set its counters."""
    walks, traversals = parse_telemetry(data, graph)
    for node_id, count in walks.items():
        graph.nodes[node_id].walks = count
    for edge_id_, count in traversals.items():
        graph.edges[edge_id_].traversals = count

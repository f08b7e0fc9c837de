"""Graph v2 files read as v3: each edge's v2 id checked, then replaced by its v3 id (ADR 0021).

Graph v3 changed nothing but the edge ids (``docs/formats/graph-v3.md`` sections 1 and 7.1): a v2 edge was
``edge:<body>-<hash6>``, where ``hash6`` is the first six hex digits of SHA-1 over
``src|type|dst``; v3 keeps the body and replaces the hash by the endpoints' and type's tails. So a
v2 document becomes the v3 document of the same graph by renaming every edge, and the v3 loader
then holds it to every rule. The rename is checked first: a v2 id that is not the one its own
record derives is refused (G6 of the format page), exactly as a v2 loader refused it, so a forged file cannot use the
upgrade to rename an edge to something its endpoints do not give.

Ids outside the graph file name edges too: a session's telemetry and journal counters (rewritten
at the next commit, which writes a v3 snapshot) and the run ledger's disproof receipts (never
rewritten: the ledger is append-only and digest-chained). :class:`EdgesAnyVersion` is
``graph.edges`` that also finds an edge under the v2 id it had, computing the v2 ids only on the
first miss.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping
from typing import Any

from contextmesh.core.canonical import text_hashes
from contextmesh.core.errors import SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import edge_id
from contextmesh.core.model import EdgeRecord

__all__ = ["V2_HASH", "EdgesAnyVersion", "upgrade_v2", "v2_edge_ids"]

V2_HASH = 6  # hex digits of SHA-1 over ``src|type|dst`` that ended a v2 edge id
_TAILS = 36  # hex digits of tails that end a v3 edge id (16 + 4 + 16)


def _v2_ids(v3_ids: list[str], triples: list[str]) -> list[str]:
    """The v2 id of each edge from its v3 id (same ``edge:<body>-`` head) and its triple's text."""
    heads = map(operator.itemgetter(slice(0, -_TAILS)), v3_ids)
    return list(map(operator.add, heads, text_hashes(triples, V2_HASH)))


def upgrade_v2(top: dict[str, Any]) -> dict[str, Any]:
    """The v3 document of the graph a parsed v2 document holds (``top`` itself is not changed).

    A record that is not an object with string ``id``, ``src``, ``type`` and ``dst`` is left as it
    is, for the v3 loader to refuse with its own rule. Raises :class:`SnapshotError` (G6) at the
    first edge whose v2 id is not the one its endpoints and type derive.
    """
    edges = top.get("edges")
    if type(edges) is not list:
        return {**top, "version": 3}  # the v3 loader names what is wrong with the edges
    edges = list(edges)
    at: list[int] = []
    triples: list[tuple[str, str, str]] = []
    for index, record in enumerate(edges):
        if type(record) is not dict:
            continue
        parts = (record.get("src"), record.get("type"), record.get("dst"))
        if type(record.get("id")) is str and all(type(part) is str for part in parts):
            at.append(index)
            triples.append(parts)  # type: ignore[arg-type]
    renamed = [edge_id(*triple) for triple in triples]
    expected = _v2_ids(renamed, list(map("|".join, triples)))
    for index, old, new in zip(at, expected, renamed, strict=True):
        found = edges[index]["id"]
        if found != old:
            raise SnapshotError(
                f"edges[{index}].id", repr(found), f"a v2 edge's id is derived from its endpoints: {old!r} (G6)"
            )
        edges[index] = {**edges[index], "id": new}
    return {**top, "version": 3, "edges": edges}


def v2_edge_ids(graph: ContextGraph) -> dict[str, str]:
    """Every edge's v2 id → its id now."""
    edges = list(graph.edges.values())
    ids = [edge.id for edge in edges]
    triples = [f"{edge.src}|{edge.type}|{edge.dst}" for edge in edges]
    return dict(zip(_v2_ids(ids, triples), ids, strict=True))


class EdgesAnyVersion(Mapping[str, EdgeRecord]):
    """``graph.edges``, finding an edge under its v2 id as well (iteration: the ids now only)."""

    __slots__ = ("_graph", "_v2")

    def __init__(self, graph: ContextGraph) -> None:
        self._graph = graph
        self._v2: dict[str, str] | None = None

    def __getitem__(self, key: str) -> EdgeRecord:
        edge = self._graph.edges.get(key)
        if edge is not None:
            return edge
        if self._v2 is None:
            self._v2 = v2_edge_ids(self._graph)
        return self._graph.edges[self._v2[key]]

    def __contains__(self, key: object) -> bool:
        if type(key) is not str:
            return False
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._graph.edges)

    def __len__(self) -> int:
        return len(self._graph.edges)

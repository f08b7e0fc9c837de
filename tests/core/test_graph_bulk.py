"""``graph_bulk.add_new_edges``: a batch of edges has exactly the outcome of one ``add_edge`` each.

Before it the generator wrote each random edge through ``add_edge``; these tests hold the batch
write to that: the same graph (bytes, adjacency order, sequence numbers) when every edge is new
and legal, and the same refusal or merge, at the same edge, when one is not.
"""

from __future__ import annotations

from typing import Any

import pytest

from contextmesh.core.errors import OntologyError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.graph_bulk import add_new_edges
from contextmesh.formats.graph_file import dump_graph
from contextmesh.testing import generate_graph

SOURCE = generate_graph(300, seed=21)
EDGES = [(e.src, e.type, e.dst, e.evidence_ids, e.weight) for e in SOURCE.edges.values()]


def _nodes_only() -> ContextGraph:
    graph = SOURCE.subgraph(SOURCE.nodes)
    for node in graph.nodes.values():
        node._out, node._in = [], []
    graph.edges.clear()
    return graph


def _columns(edges: list[tuple[Any, ...]]) -> list[list[Any]]:
    return [list(column) for column in zip(*edges, strict=True)]


def _shape(graph: ContextGraph) -> list[Any]:
    return [
        dump_graph(graph),
        [(n.id, [e.id for e in n._out], [e.id for e in n._in]) for n in graph.nodes.values()],
        [(e.id, e._seq) for e in graph.edges.values()],
        graph._next_seq,
    ]


def _one_by_one(edges: list[tuple[Any, ...]]) -> ContextGraph:
    graph = _nodes_only()
    for src, edge_type, dst, evidence, weight in edges:
        graph.add_edge(src, edge_type, dst, evidence_ids=evidence, weight=weight)
    return graph


def test_a_new_legal_batch_builds_what_one_add_edge_each_builds() -> None:
    batched = _nodes_only()
    add_new_edges(batched, *_columns(EDGES))
    assert _shape(batched) == _shape(_one_by_one(EDGES)) and len(batched.edges) == len(EDGES)


def test_a_repeat_in_the_batch_merges_as_add_edge_merges() -> None:
    edges = [*EDGES[:50], EDGES[3]]
    batched = _nodes_only()
    add_new_edges(batched, *_columns(edges))
    assert _shape(batched) == _shape(_one_by_one(edges))
    src, edge_type, dst, _, weight = EDGES[3]
    merged = batched.find_edge(src, edge_type, dst)
    assert merged is not None and merged.weight == weight + weight and len(batched.edges) == 50


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("unknown-source", lambda e: ("entity:nobody-000000", *e[1:]), "unknown source node"),
        ("illegal-pair", lambda e: (e[0], "resolves_to", *e[2:]), "not a legal pair"),
        ("self-edge", lambda e: (e[0], e[1], e[0], *e[3:]), "self edge"),
        ("weight-not-positive", lambda e: (*e[:4], 0.0), "finite float above 0"),
        ("weight-an-int", lambda e: (*e[:4], 1), "finite float above 0"),
    ],
)
def test_a_bad_edge_is_refused_where_add_edge_refuses_it(name: str, change: Any, message: str) -> None:
    edges = [*EDGES[:20], change(EDGES[20]), *EDGES[21:40]]
    batched = _nodes_only()
    with pytest.raises(OntologyError) as caught:
        add_new_edges(batched, *_columns(edges))
    assert message in str(caught.value)
    with pytest.raises(OntologyError) as alone:
        _one_by_one(edges)
    assert str(alone.value) == str(caught.value)
    assert list(batched.edges) == [e.id for e in _one_by_one(EDGES[:20]).edges.values()]  # the 20 before it

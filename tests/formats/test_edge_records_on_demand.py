"""A loaded parted file's edges stay checked columns; a record is built when asked for (ADR 0038).

Before ADR 0038 a load built every edge's record; the first test counted 500 of them then. The
others pin that what a caller sees is unchanged: one record per edge however often it is read,
writes that stick, dict semantics and insertion order, and adjacency equal to a record-built graph's.
"""

from __future__ import annotations

import gc

import pytest

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.graph_bulk import add_new_edges
from contextmesh.core.model import EdgeRecord, Provenance
from contextmesh.formats import graph_edge_columns
from contextmesh.formats.graph_file import dump_graph, graph_to_dict, load_graph
from contextmesh.testing import generate_graph, plant_closure

RECORDS = 60
GRAPH = generate_graph(120, seed=21)
plant_closure(GRAPH, 10, seed=22)
PARTED = dump_graph(GRAPH, part_records=RECORDS)
WHOLE = dump_graph(GRAPH)


def _edge_records() -> int:
    gc.collect()
    return sum(1 for item in gc.get_objects() if type(item) is EdgeRecord)


def test_a_parted_load_builds_no_edge_record_until_one_is_asked_for() -> None:
    before = _edge_records()
    graph = load_graph(PARTED)
    assert len(graph.edges) == len(GRAPH.edges) > RECORDS
    assert _edge_records() - before == 0
    first = next(iter(graph.edges))
    graph.edges[first]
    assert _edge_records() - before == 1
    graph.out_edges(GRAPH.edges[first].src, live_only=False)
    assert _edge_records() - before == len(GRAPH.out_edges(GRAPH.edges[first].src, live_only=False))


def test_a_record_is_one_object_and_a_write_to_it_sticks() -> None:
    graph = load_graph(PARTED)
    edge_id = list(graph.edges)[7]
    edge = graph.edges[edge_id]
    assert graph.edges[edge_id] is edge is graph.edge(edge_id)
    assert any(e is edge for e in graph.out_edges(edge.src, live_only=False))
    edge.traversals = 5
    graph.invalidate(edge_ids=[edge_id])
    again = load_graph(dump_graph(graph))
    assert again.edges[edge_id].traversals == 5 and again.edges[edge_id].invalidated
    assert graph_to_dict(again) == graph_to_dict(graph)


def test_the_edge_table_behaves_as_the_dict_of_a_record_built_graph() -> None:
    lazy, built = load_graph(PARTED), load_graph(WHOLE)  # one document: records from the start
    assert list(lazy.edges) == list(built.edges) and len(lazy.edges) == len(built.edges)
    assert [e.id for e in lazy.edges.values()] == list(built.edges)
    assert [k for k, _ in lazy.edges.items()] == list(built.edges)
    assert "edge:nothing-here" not in lazy.edges and lazy.edges.get("edge:nothing-here") is None
    for node_id in list(built.nodes)[::7]:
        for direction in ("out_edges", "in_edges"):
            assert [e.id for e in getattr(lazy, direction)(node_id, live_only=False)] == [
                e.id for e in getattr(built, direction)(node_id, live_only=False)
            ]
        assert lazy.degree(node_id) == built.degree(node_id)
    # pop and reinsert moves the edge to the end, as in a dict
    for graph in (lazy, built):
        moved = list(graph.edges)[3]
        record = graph.edges.pop(moved)
        assert moved not in graph.edges
        graph.edges[moved] = record
    assert list(lazy.edges) == list(built.edges)
    assert [e.id for e in lazy.edges.values()] == list(built.edges)


def test_edges_added_after_a_load_follow_the_loaded_ones() -> None:
    graphs = load_graph(PARTED), load_graph(WHOLE)
    source = next(n.id for n in GRAPH if n.type == "source")
    for graph in graphs:
        claims = [n.id for n in graph.by_type("claim")][:6]
        evidence = [n.id for n in graph.by_type("evidence")][:6]
        graph.add_edge(evidence[0], "supports", claims[0])
        add_new_edges(graph, evidence[1:4], ["supports"] * 3, claims[1:4], [(), (), ()], [1.0, 2.0, 3.0])
        node = graph.add_node("claim", "a claim made after the load", provenance=Provenance(source_id=source))
        graph.add_edge(evidence[4], "supports", node.id)
    lazy, built = graphs
    assert dump_graph(lazy) == dump_graph(built)
    assert list(lazy.edges) == list(built.edges)
    for node_id in [*list(built.nodes)[::5], source]:
        assert [e.id for e in lazy.in_edges(node_id, live_only=False)] == [
            e.id for e in built.in_edges(node_id, live_only=False)
        ]


def _repeat_first_edge(data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    header = loads(lines[0])
    first = 1 + header["parts"]["nodes"]
    part = loads(lines[first])
    for column in part["edges"].values():
        column[1] = column[0]
    lines[first] = file_bytes(part)
    return b"".join(lines)


def test_a_repeated_edge_in_the_columns_is_refused_naming_it() -> None:
    with pytest.raises(SnapshotError) as caught:
        load_graph(_repeat_first_edge(PARTED))
    message = str(caught.value)
    assert caught.value.path == "edges[1].id" and "edge ids are unique within a file" in message
    assert "\n" not in message


def test_ids_are_checked_as_strings_when_two_nodes_share_a_tail() -> None:
    graph = ContextGraph()
    types = ["supports", "supports"]
    # Two nodes with one tail: distinct triples may then share an id, so the ids themselves decide.
    assert graph_edge_columns._unique(graph, ["edge:a", "edge:b"], [0, 1], types, [1, 0], ["t", "t"])
    assert not graph_edge_columns._unique(graph, ["edge:a", "edge:a"], [0, 1], types, [1, 0], ["t", "t"])
    # Distinct tails: triples decide.
    assert graph_edge_columns._unique(graph, ["edge:a", "edge:b"], [0, 1], types, [1, 0], ["t", "u"])
    assert not graph_edge_columns._unique(graph, ["edge:a", "edge:b"], [0, 0], types, [1, 1], ["t", "u"])

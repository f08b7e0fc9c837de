"""The graph's edges as columns, and the record views of their rows (ADR 0021)."""

from __future__ import annotations

from contextmesh.core.edge_table import StoredEdge
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import EdgeRecord
from contextmesh.formats.graph_file import dump_graph, load_graph


def _graph() -> ContextGraph:
    graph = ContextGraph()
    graph.add_node("source", "doc", attrs={"origin": "test", "retrieved_at": "today"})
    for label in ("alpha", "beta", "gamma"):
        graph.add_node("entity", label, attrs={"canonical": label, "aliases": []})
    return graph


def _ids(graph: ContextGraph, kind: str) -> list[str]:
    return [n.id for n in graph.by_type(kind)]


def test_a_view_is_an_edge_record_and_its_writes_land_in_the_graph() -> None:
    graph = _graph()
    (doc,), (alpha, *_) = _ids(graph, "source"), _ids(graph, "entity")
    edge = graph.add_edge(doc, "mentions", alpha)
    assert isinstance(edge, EdgeRecord) and isinstance(edge, StoredEdge)
    again = graph.edge(edge.id)
    again.invalidated = True
    again.traversals = 7
    assert edge.invalidated and edge.traversals == 7 and not edge.live
    assert graph.out_edges(doc) == [] and graph.out_edges(doc, live_only=False) == [edge]
    assert b'"invalidated":true' in dump_graph(graph) and b'"traversals":7' in dump_graph(graph)


def test_views_equal_a_standalone_record_and_a_copy_belongs_to_no_graph() -> None:
    graph = _graph()
    (doc,), (alpha, *_) = _ids(graph, "source"), _ids(graph, "entity")
    edge = graph.add_edge(doc, "mentions", alpha, weight=2.5)
    copy = edge.model_copy()
    assert type(copy) is EdgeRecord
    assert copy == edge and edge == copy
    copy.weight = 9.0
    assert graph.edge(edge.id).weight == 2.5
    assert edge != copy
    assert repr(edge).startswith("EdgeRecord(")
    assert edge.model_dump(mode="json")["evidence_ids"] == []


def test_a_rollback_removes_rows_and_listings_keep_insertion_order() -> None:
    graph = _graph()
    (doc,), (alpha, beta, gamma) = _ids(graph, "source"), _ids(graph, "entity")
    first = graph.add_edge(doc, "mentions", alpha)
    middle = graph.add_edge(doc, "mentions", beta)
    last = graph.add_edge(doc, "mentions", gamma)
    graph._undo([], [middle.id])  # not trailing: skipped by every listing, the row kept
    assert list(graph.edges) == [first.id, last.id]
    assert [e.id for e in graph.edges.values()] == [first.id, last.id]
    assert [e.id for e in graph.out_edges(doc)] == [first.id, last.id]
    assert middle.id not in graph.edges and graph.find_edge(doc, "mentions", beta) is None
    graph._undo([], [last.id])  # now the removed rows are trailing: both dropped from the columns
    assert len(graph._edges.ids) == 1 and not graph._edges.dead
    readded = graph.add_edge(doc, "mentions", gamma)
    assert [e.id for e in graph.out_edges(doc)] == [first.id, readded.id]
    assert graph.seq(first.id) < graph.seq(readded.id)
    assert dump_graph(load_graph(dump_graph(graph))) == dump_graph(graph)

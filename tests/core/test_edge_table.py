"""``ContextGraph.edges`` behaves as the dict it replaced (ADR 0038), loaded as columns or built in memory.

Each case was found by a review of the on-demand table against ``dict``; each failed before its fix.
"""

from __future__ import annotations

import copy
import dataclasses
import types

import pytest

from contextmesh.core.graph import ContextGraph
from contextmesh.core.ontology import ONTOLOGY
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.testing.generate import generate_graph


@pytest.fixture(params=["in memory", "loaded as columns"])
def graph(request: pytest.FixtureRequest) -> ContextGraph:
    built = generate_graph(60, seed=1, embeddings=False)
    return built if request.param == "in memory" else load_graph(dump_graph(built, part_records=50))


def test_popitem_removes_the_last_edge_inserted_as_a_dict_does(graph: ContextGraph) -> None:
    expected = dict(graph.edges)
    assert graph.edges.popitem() == expected.popitem()
    assert list(graph.edges) == list(expected)


def test_a_copy_is_its_own_table_holding_the_same_records(graph: ContextGraph) -> None:
    for twin in (graph.edges.copy(), copy.copy(graph.edges)):
        first = next(iter(twin))
        assert twin[first] is graph.edges[first]
        twin.pop(first)
        assert first in graph.edges and len(twin) == len(graph.edges) - 1


def test_reversed_items_and_membership_read_as_a_dicts(graph: ContextGraph) -> None:
    plain = dict(graph.edges)
    assert list(reversed(graph.edges)) == list(reversed(plain))
    assert graph.edges.items() == graph.edges.items() == plain.items()

    class Name(str):
        pass

    key = Name(next(iter(plain)))
    assert key in graph.edges and graph.edges[key] is plain[key]


def test_rolling_back_a_loaded_edge_before_its_nodes_adjacency_was_read_leaves_the_graph_whole() -> None:
    graph = load_graph(dump_graph(generate_graph(60, seed=1, embeddings=False), part_records=50))
    edge = next(iter(graph.edges.values()))
    graph._undo([], [edge.id])
    assert edge.id not in graph.edges
    assert edge not in graph.out_edges(edge.src) and edge not in graph.in_edges(edge.dst)


def test_the_generator_takes_an_ontology_of_any_number_of_edge_types() -> None:
    extra = tuple(f"extra_relation_{i}" for i in range(7))
    signatures = dict(ONTOLOGY.signatures) | {name: frozenset({("claim", "entity")}) for name in extra}
    wider = dataclasses.replace(
        ONTOLOGY, edge_types=ONTOLOGY.edge_types + extra, signatures=types.MappingProxyType(signatures)
    )
    graph = generate_graph(200, seed=1, embeddings=False, ontology=wider)
    assert len(graph.nodes) == 200 and len(graph.edges) > 0

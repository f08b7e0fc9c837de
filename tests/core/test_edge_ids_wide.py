"""Edge ids that do not collide at a hub (ADR 0021).

Graph v2 named an edge with 24 bits of SHA-1 over its triple; out of a source whose id alone fills
the 40-character body, two edges differed only in those bits, and the graph refused the second of
a colliding pair. The pair below is such a collision under the v2 rule (asserted, so the test
holds a real one); v3's tails keep the two apart.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from contextmesh.core.errors import IdentityError, OntologyError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import edge_id, slug
from contextmesh.core.ontology import ONTOLOGY
from contextmesh.formats.graph_file import dump_graph, load_graph

HUB_LABEL = "a very long runbook title that fills the whole body"
HUB = "source:a-very-long-runbook-title-that-fills-the-whole-body-0a1b2c"
# Found by search: under v2 both edges below were edge:source-a-very-long-runbook-title-that-fi-cb799e.
FIRST, SECOND = "entity:thing-2579", "entity:thing-5333"


def _hub_graph() -> ContextGraph:
    graph = ContextGraph()
    graph.add_node("source", HUB_LABEL, id=HUB, attrs={"origin": "file:///runbook", "retrieved_at": "2026-01-01"})
    for node_id in (FIRST, SECOND):
        graph.add_node("entity", node_id, id=node_id, attrs={"canonical": node_id, "aliases": []})
    return graph


def test_two_edges_that_collided_under_the_v2_rule_are_both_stored() -> None:
    v2 = [slug(f"{HUB}|mentions|{dst}", "edge") for dst in (FIRST, SECOND)]
    assert v2[0] == v2[1]  # the precondition: a real 24-bit collision out of one hub
    graph = _hub_graph()
    first = graph.add_edge(HUB, "mentions", FIRST)
    second = graph.add_edge(HUB, "mentions", SECOND)
    assert first.id != second.id
    assert [e.dst for e in graph.out_edges(HUB)] == [FIRST, SECOND]
    assert graph.find_edge(HUB, "mentions", SECOND) == second
    assert load_graph(dump_graph(graph)).edge(second.id).dst == SECOND


def test_thousands_of_edges_out_of_one_long_named_hub_all_get_their_own_id() -> None:
    graph = ContextGraph()
    graph.add_node("source", HUB_LABEL, id=HUB, attrs={"origin": "file:///runbook", "retrieved_at": "2026-01-01"})
    for index in range(6000):  # v2: a colliding pair about two times in three at this size
        target = graph.add_node("entity", f"thing {index}", attrs={"canonical": f"thing {index}", "aliases": []})
        graph.add_edge(HUB, "mentions", target.id)
    assert len(graph.edges) == 6000
    assert len({edge_id(e.src, e.type, e.dst) for e in graph.edges.values()}) == 6000


def test_a_stored_id_naming_another_triple_is_still_refused_and_says_why() -> None:
    graph = _hub_graph()
    graph.add_edge(HUB, "mentions", FIRST)
    # Forge the collision v3 makes practically impossible: the second triple's id already taken.
    forged = edge_id(HUB, "mentions", SECOND)
    stored = graph.edges.pop(next(iter(graph.edges)))
    stored.id = forged
    graph.edges[forged] = stored
    with pytest.raises(IdentityError, match="64-bit SHA-1 tail"):
        graph.add_edge(HUB, "mentions", SECOND)
    assert len(graph.edges) == 1


def test_tables_whose_edge_types_share_a_tail_are_refused_before_any_edge_exists() -> None:
    # "mentions_57257" has the 4-hex-digit SHA-1 tail of "mentions": found by search.
    clash = "mentions_57257"
    tables = dataclasses.replace(
        ONTOLOGY,
        edge_types=(*ONTOLOGY.edge_types, clash),
        signatures=MappingProxyType({**ONTOLOGY.signatures, clash: ONTOLOGY.signatures["mentions"]}),
        invalidation=MappingProxyType({**ONTOLOGY.invalidation, clash: "none"}),
    )
    with pytest.raises(OntologyError, match="share the 4-hex-digit tail"):
        ContextGraph(tables)
    ContextGraph(ONTOLOGY)  # GRAPH.md's own types are distinct

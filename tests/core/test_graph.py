"""ContextGraph: every write typechecked against GRAPH.md, identity never merged, order kept."""

from __future__ import annotations

from typing import Any

import pytest

from contextmesh.core.errors import CanonicalError, IdentityError, NotFoundError, OntologyError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import NodeRecord, Provenance
from contextmesh.core.ontology import ONTOLOGY

PROV = Provenance(source_id="source:doc")
OTHER_PROV = Provenance(source_id="source:other")


def source(graph: ContextGraph, label: str = "doc", **attrs: Any) -> NodeRecord:
    return graph.add_node("source", label, attrs={"origin": "test", "retrieved_at": "today", **attrs})


def entity(graph: ContextGraph, label: str = "pgvector") -> NodeRecord:
    return graph.add_node("entity", label, attrs={"canonical": label, "aliases": []})


def claim(graph: ContextGraph, label: str = "a claim", provenance: Provenance = PROV) -> NodeRecord:
    return graph.add_node("claim", label, provenance=provenance)


def assumption(graph: ContextGraph, label: str = "hosts are trusted") -> NodeRecord:
    return graph.add_node("assumption", label, attrs={"status": "active", "version": 1})


def evidence(graph: ContextGraph, label: str = "an observation") -> NodeRecord:
    return graph.add_node("evidence", label, attrs={"kind": "observation"})


def decision(graph: ContextGraph, node_id: str, *, explicit: bool = False) -> NodeRecord:
    attrs: dict[str, Any] = {"rationale": "because"}
    if explicit:
        attrs["decision_identity"] = "explicit"
    return graph._mint_decision(node_id, f"decide {node_id}", attrs, PROV)


@pytest.fixture
def graph() -> ContextGraph:
    return ContextGraph()


# -- typechecking ----------------------------------------------------------------------------


def test_illegal_pair_is_refused_listing_the_legal_pairs(graph: ContextGraph) -> None:
    doc, thing = source(graph), entity(graph)
    with pytest.raises(OntologyError) as caught:
        graph.add_edge(thing.id, "mentions", doc.id)
    assert str(caught.value) == (
        "entity-[mentions]->source is not a legal pair; GRAPH.md allows claim->entity, source->entity"
    )
    assert graph.edges == {}


def test_legal_pair_is_stored_with_its_type(graph: ContextGraph) -> None:
    doc, thing = source(graph), entity(graph)
    edge = graph.add_edge(doc.id, "mentions", thing.id)
    assert (edge.src, edge.type, edge.dst, edge.weight) == (doc.id, "mentions", thing.id, 1.0)
    assert graph.edges == {edge.id: edge}


def test_unknown_node_type_is_refused_listing_graph_mds_types(graph: ContextGraph) -> None:
    with pytest.raises(OntologyError) as caught:
        graph.add_node("widget", "w")
    assert str(caught.value) == f"no such node type 'widget'; GRAPH.md defines {sorted(ONTOLOGY.node_types)}"
    assert len(graph) == 0


def test_unknown_edge_type_is_refused_listing_graph_mds_types(graph: ContextGraph) -> None:
    doc, thing = source(graph), entity(graph)
    with pytest.raises(OntologyError) as caught:
        graph.add_edge(doc.id, "links", thing.id)
    assert str(caught.value) == f"no such edge type 'links'; GRAPH.md defines {sorted(ONTOLOGY.edge_types)}"


def test_unknown_endpoints_are_refused(graph: ContextGraph) -> None:
    doc = source(graph)
    with pytest.raises(OntologyError, match=r"^unknown source node 'entity:nope'$"):
        graph.add_edge("entity:nope", "derived_from", doc.id)
    with pytest.raises(OntologyError, match=r"^unknown target node 'entity:nope'$"):
        graph.add_edge(doc.id, "mentions", "entity:nope")


def test_an_evidence_id_that_names_no_node_is_refused_and_nothing_changes(graph: ContextGraph) -> None:
    # The loader refuses such a file (graph-v3 G46), so a write that let it through would store a
    # graph that no longer loads. A repeat observation is checked too, before it merges.
    from contextmesh.formats.graph_file import dump_graph, load_graph

    doc, thing, seen = source(graph), entity(graph), evidence(graph)
    with pytest.raises(OntologyError) as caught:
        graph.add_edge(doc.id, "mentions", thing.id, evidence_ids=[seen.id, "evidence:nowhere"])
    assert str(caught.value) == (
        f"evidence id 'evidence:nowhere' of '{doc.id}'-[mentions]->'{thing.id}' names no node; "
        "an edge's evidence ids name nodes of the graph (graph-v3 G46)"
    )
    assert graph.edges == {}
    edge = graph.add_edge(doc.id, "mentions", thing.id, evidence_ids=[seen.id])
    with pytest.raises(OntologyError):
        graph.add_edge(doc.id, "mentions", thing.id, evidence_ids=["evidence:nowhere"])
    assert (edge.weight, edge.evidence_ids) == (1.0, (seen.id,))
    assert load_graph(dump_graph(graph)).edges[edge.id].evidence_ids == (seen.id,)


def test_a_subgraph_keeps_no_evidence_id_or_binding_that_names_a_node_it_dropped(graph: ContextGraph) -> None:
    # The temporal projection (as_of) is a subgraph without the later nodes; an edge it keeps must
    # not name later evidence or bind a later assumption, or the copy is a graph that no longer
    # loads (graph-v3 G46) and whose edges claim support from what did not exist yet.
    from contextmesh.formats.graph_file import dump_graph, load_graph

    doc, thing = source(graph), entity(graph)
    early, late, ground = evidence(graph, "seen early"), evidence(graph, "seen later"), assumption(graph)
    edge = graph.add_edge(doc.id, "mentions", thing.id, evidence_ids=[early.id, late.id])
    graph.bind_edge(edge.id, ground.id)
    projection = graph.subgraph([doc.id, thing.id, early.id])
    kept = projection.edges[edge.id]
    assert (kept.evidence_ids, kept.assumption_id) == ((early.id,), None)
    assert projection.bound_edges(ground.id) == []
    assert load_graph(dump_graph(projection)).edges[edge.id].evidence_ids == (early.id,)
    assert graph.edges[edge.id].evidence_ids == (early.id, late.id)  # the original is untouched
    assert graph.edges[edge.id].assumption_id == ground.id


def test_self_edge_is_refused(graph: ContextGraph) -> None:
    one = claim(graph)
    with pytest.raises(OntologyError, match=f"^self edge on '{one.id}'$"):
        graph.add_edge(one.id, "cites", one.id)


@pytest.mark.parametrize("weight", [0.0, -1.0, float("inf"), float("nan"), 1], ids=["zero", "neg", "inf", "nan", "int"])
def test_edge_weight_must_be_a_positive_finite_float(graph: ContextGraph, weight: float) -> None:
    doc, thing = source(graph), entity(graph)
    with pytest.raises(OntologyError, match="weight"):
        graph.add_edge(doc.id, "mentions", thing.id, weight=weight)


def test_untyped_edges_is_always_zero(graph: ContextGraph) -> None:
    assert graph.untyped_edges == 0
    doc, thing = source(graph), entity(graph)
    graph.add_edge(doc.id, "mentions", thing.id)
    with pytest.raises(OntologyError):
        graph.add_edge(thing.id, "mentions", doc.id)
    assert graph.untyped_edges == 0


def test_attrs_without_a_single_json_form_are_refused(graph: ContextGraph) -> None:
    with pytest.raises(CanonicalError):
        graph.add_node("evidence", "e", attrs={"kind": "x", "value": float("nan")})
    assert len(graph) == 0


def test_a_malformed_embedding_is_refused(graph: ContextGraph) -> None:
    with pytest.raises(OntologyError, match="embedding"):
        graph.add_node("evidence", "e", attrs={"kind": "x"}, embedding="f32:AAAA")


# -- must carry ------------------------------------------------------------------------------


def test_source_without_retrieved_at_is_refused(graph: ContextGraph) -> None:
    with pytest.raises(OntologyError) as caught:
        graph.add_node("source", "doc", attrs={"origin": "x"})
    message = str(caught.value)
    assert message.startswith("source node 'source:doc-")
    assert "is missing retrieved_at;" in message
    assert message.endswith("GRAPH.md's Must carry for source is ['origin', 'retrieved_at']")
    assert len(graph) == 0


def test_must_carry_lists_every_missing_name_sorted(graph: ContextGraph) -> None:
    with pytest.raises(OntologyError, match="is missing aliases, canonical;"):
        graph.add_node("entity", "thing")


def test_must_carry_is_presence_only(graph: ContextGraph) -> None:
    node = graph.add_node("source", "doc", attrs={"origin": None, "retrieved_at": "at plan time"})
    assert node.attrs["retrieved_at"] == "at plan time"


def test_claim_without_provenance_is_refused(graph: ContextGraph) -> None:
    with pytest.raises(OntologyError, match="is missing provenance;"):
        graph.add_node("claim", "c")


def test_provenance_attribute_does_not_stand_in_for_the_provenance_field(graph: ContextGraph) -> None:
    with pytest.raises(OntologyError) as caught:
        graph.add_node("claim", "c", attrs={"provenance": {"source_id": "source:doc"}})
    assert "is missing provenance;" in str(caught.value)
    assert "Must carry for claim is ['provenance']" in str(caught.value)


def test_decision_must_carry_rationale_and_provenance(graph: ContextGraph) -> None:
    with pytest.raises(OntologyError, match="is missing provenance, rationale;"):
        graph._mint_decision("decision:d", "d", {}, None)


# -- identity --------------------------------------------------------------------------------


def test_node_id_defaults_to_the_slug_of_its_label(graph: ContextGraph) -> None:
    assert entity(graph).id == "entity:pgvector-6db608"


def test_repeat_observation_merges_attrs_and_keeps_provenance(graph: ContextGraph) -> None:
    first = graph.add_node("claim", "c", attrs={"a": 1, "b": 1}, provenance=PROV)
    again = graph.add_node("claim", "c", attrs={"b": 2, "c": 3}, provenance=OTHER_PROV)
    assert again is first
    assert first.attrs == {"a": 1, "b": 2, "c": 3}
    assert first.provenance == PROV
    assert len(graph) == 1


def test_repeat_observation_fills_a_missing_provenance(graph: ContextGraph) -> None:
    thing = entity(graph)
    assert thing.provenance is None
    graph.add_node("entity", "pgvector", provenance=PROV)
    assert thing.provenance == PROV


def test_different_label_under_the_same_id_is_refused(graph: ContextGraph) -> None:
    graph.add_node("entity", "pgvector", id="entity:x", attrs={"canonical": "pgvector", "aliases": []})
    with pytest.raises(IdentityError) as caught:
        graph.add_node("entity", "postgres", id="entity:x", attrs={"canonical": "postgres", "aliases": []})
    assert str(caught.value) == (
        "node id 'entity:x' is already entity 'pgvector'; refusing to treat entity 'postgres' as the same node"
    )
    assert graph.node("entity:x").attrs["canonical"] == "pgvector"


def test_different_type_under_the_same_id_is_refused(graph: ContextGraph) -> None:
    graph.add_node("evidence", "x", id="shared", attrs={"kind": "k"})
    with pytest.raises(IdentityError):
        graph.add_node("entity", "x", id="shared", attrs={"canonical": "x", "aliases": []})


def test_decision_cannot_be_added_through_add_node(graph: ContextGraph) -> None:
    with pytest.raises(OntologyError) as caught:
        graph.add_node("decision", "d", id="decision:d", attrs={"rationale": "r"}, provenance=PROV)
    assert "cannot be minted through add_node" in str(caught.value)
    assert "DecisionLog.decide()" in str(caught.value)
    assert "decision:d" not in graph


def test_a_decision_is_never_minted_twice(graph: ContextGraph) -> None:
    first = decision(graph, "decision:d")
    with pytest.raises(IdentityError, match="already exists"):
        decision(graph, "decision:d")
    assert graph.node("decision:d") is first
    assert len(graph) == 1


def test_a_decision_id_taken_by_another_node_is_refused(graph: ContextGraph) -> None:
    graph.add_node("evidence", "x", id="decision:d", attrs={"kind": "k"})
    with pytest.raises(IdentityError):
        decision(graph, "decision:d")


def test_duplicate_edge_merges_weight_and_evidence(graph: ContextGraph) -> None:
    doc, thing = source(graph), entity(graph)
    for name in ("evidence:a", "evidence:b", "evidence:c"):  # evidence ids name nodes of the graph
        graph.add_node("evidence", name, id=name, attrs={"kind": "observation"})
    first = graph.add_edge(doc.id, "mentions", thing.id, evidence_ids=["evidence:a", "evidence:b"])
    again = graph.add_edge(doc.id, "mentions", thing.id, evidence_ids=["evidence:b", "evidence:c"])
    assert again == first  # two views of one row of the edge table (ADR 0021): the first sees the merge
    assert first.weight == 2.0
    assert first.evidence_ids == ("evidence:a", "evidence:b", "evidence:c")
    assert len(graph.edges) == 1
    assert graph.out_edges(doc.id) == [first]
    assert graph.in_edges(thing.id) == [first]


def test_merged_weight_never_overflows_to_infinity(graph: ContextGraph) -> None:
    doc, thing = source(graph), entity(graph)
    edge = graph.add_edge(doc.id, "mentions", thing.id, weight=1e308)
    with pytest.raises(OntologyError, match="weight"):
        graph.add_edge(doc.id, "mentions", thing.id, weight=1e308)
    assert edge.weight == 1e308


# -- order -----------------------------------------------------------------------------------


def test_in_edges_follow_insertion_order_not_neighbour_grouping(graph: ContextGraph) -> None:
    a, b, x = claim(graph, "a"), claim(graph, "b"), claim(graph, "x")
    e1 = graph.add_edge(a.id, "cites", x.id)
    e2 = graph.add_edge(b.id, "cites", x.id)
    e3 = graph.add_edge(a.id, "contradicts", x.id)
    assert graph.in_edges(x.id) == [e1, e2, e3]
    assert [graph.seq(e.id) for e in (e1, e2, e3)] == sorted(graph.seq(e.id) for e in (e1, e2, e3))


def test_out_edges_follow_insertion_order(graph: ContextGraph) -> None:
    a, x, y = claim(graph, "a"), claim(graph, "x"), claim(graph, "y")
    e1 = graph.add_edge(a.id, "cites", x.id)
    e2 = graph.add_edge(a.id, "cites", y.id)
    e3 = graph.add_edge(a.id, "contradicts", x.id)
    assert graph.out_edges(a.id) == [e1, e2, e3]
    assert graph.out_edges(a.id, types=["contradicts"]) == [e3]


def test_node_iteration_follows_insertion_order(graph: ContextGraph) -> None:
    labels = ["zeta", "alpha", "mid"]
    for label in labels:
        evidence(graph, label)
    assert [n.label for n in graph] == labels


def test_live_only_filters_invalidated_edges_and_dead_endpoints(graph: ContextGraph) -> None:
    a, b, c, d = claim(graph, "a"), claim(graph, "b"), claim(graph, "c"), claim(graph, "d")
    to_b = graph.add_edge(a.id, "cites", b.id)
    to_c = graph.add_edge(a.id, "cites", c.id)
    to_d = graph.add_edge(a.id, "cites", d.id)
    back = graph.add_edge(b.id, "contradicts", a.id)
    graph.invalidate(edge_ids=[to_b.id])
    graph.invalidate(node_ids=[c.id])
    graph.prune([d.id])
    assert graph.out_edges(a.id) == [] == graph.out_edges(a.id, live_only=True)
    assert graph.out_edges(a.id, live_only=False) == [to_b, to_c, to_d]
    assert graph.in_edges(a.id) == [back]
    assert graph.in_edges(c.id) == []
    assert graph.in_edges(c.id, live_only=False) == [to_c]
    assert graph.degree(a.id) == 4


def test_counts_include_every_type_with_zeros(graph: ContextGraph) -> None:
    assert graph.type_counts() == dict.fromkeys(ONTOLOGY.node_types, 0)
    assert graph.edge_counts() == dict.fromkeys(ONTOLOGY.edge_types, 0)
    doc, thing = source(graph), entity(graph)
    graph.add_edge(doc.id, "mentions", thing.id)
    gone = entity(graph, "gone")
    graph.invalidate(node_ids=[gone.id])
    assert graph.type_counts() == {**dict.fromkeys(ONTOLOGY.node_types, 0), "source": 1, "entity": 1}
    assert graph.type_counts(live_only=False)["entity"] == 2
    assert graph.edge_counts() == {**dict.fromkeys(ONTOLOGY.edge_types, 0), "mentions": 1}
    assert list(graph.edge_counts()) == list(ONTOLOGY.edge_types)


def test_edge_counts_count_live_edges_only(graph: ContextGraph) -> None:
    doc, thing = source(graph), entity(graph)
    edge = graph.add_edge(doc.id, "mentions", thing.id)
    graph.invalidate(edge_ids=[edge.id])
    assert graph.edge_counts()["mentions"] == 0
    assert graph.edge_counts(live_only=False)["mentions"] == 1


# -- explicit decisions ----------------------------------------------------------------------


def test_explicit_decisions_digest_covered_edges_are_frozen(graph: ContextGraph) -> None:
    frozen = decision(graph, "decision:step-1", explicit=True)
    doc = source(graph)
    with pytest.raises(OntologyError) as caught:
        graph.add_edge(frozen.id, "cites", doc.id)
    assert "recorded with an explicit id" in str(caught.value)
    assert "pass it to DecisionLog.decide" in str(caught.value)
    assert graph.out_edges(frozen.id, live_only=False) == []


@pytest.mark.parametrize(
    ("edge_type", "target"), [("produces", "entity"), ("depends_on", "assumption"), ("derived_from", "claim")]
)
def test_every_digest_covered_edge_type_is_frozen(graph: ContextGraph, edge_type: str, target: str) -> None:
    frozen = decision(graph, "decision:step-1", explicit=True)
    make = {"entity": entity, "assumption": assumption, "claim": claim}[target]
    with pytest.raises(OntologyError, match="explicit id"):
        graph.add_edge(frozen.id, edge_type, make(graph).id)


def test_explicit_decision_may_still_depend_on_a_decision_and_be_justified(graph: ContextGraph) -> None:
    frozen = decision(graph, "decision:step-2", explicit=True)
    earlier = decision(graph, "decision:step-1", explicit=True)
    after = graph.add_edge(frozen.id, "depends_on", earlier.id)
    why = graph.add_edge(frozen.id, "justified_by", evidence(graph).id)
    assert graph.out_edges(frozen.id) == [after, why]


def test_a_decision_without_explicit_identity_takes_covered_edges(graph: ContextGraph) -> None:
    auto = decision(graph, "decision:auto:d-123456")
    edge = graph.add_edge(auto.id, "cites", source(graph).id)
    assert graph.out_edges(auto.id) == [edge]


# -- bindings, revival, lookups --------------------------------------------------------------


def test_bind_edge_refuses_rebinding(graph: ContextGraph) -> None:
    edge = graph.add_edge(source(graph).id, "mentions", entity(graph).id)
    graph.bind_edge(edge.id, "assumption:a")
    graph.bind_edge(edge.id, "assumption:a")  # the same binding again is a no-op
    with pytest.raises(IdentityError, match="refusing to silently rebind"):
        graph.bind_edge(edge.id, "assumption:b")
    assert edge.assumption_id == "assumption:a"


def test_revive_clears_an_invalidated_entity(graph: ContextGraph) -> None:
    thing = entity(graph)
    graph.invalidate(node_ids=[thing.id])
    assert not graph.is_live(thing.id)
    graph.revive(thing.id)
    assert graph.is_live(thing.id)


def test_revive_refuses_anything_but_an_entity(graph: ContextGraph) -> None:
    one = claim(graph)
    graph.invalidate(node_ids=[one.id])
    with pytest.raises(OntologyError, match="only an entity"):
        graph.revive(one.id)
    assert one.invalidated


def test_a_pruned_entity_is_never_revived(graph: ContextGraph) -> None:
    thing = entity(graph)
    graph.prune([thing.id])
    graph.invalidate(node_ids=[thing.id])
    with pytest.raises(OntologyError, match="never revived"):
        graph.revive(thing.id)
    assert thing.invalidated
    assert thing.pruned


def test_unknown_node_suggests_near_misses_without_falling_back(graph: ContextGraph) -> None:
    entity(graph)
    with pytest.raises(NotFoundError) as caught:
        graph.node("entity:pgvector-6db60")
    assert str(caught.value) == (
        "no node 'entity:pgvector-6db60' in this graph; did you mean 'entity:pgvector-6db608'?"
    )
    assert isinstance(caught.value, KeyError)


def test_unknown_node_with_nothing_near_has_no_suggestion(graph: ContextGraph) -> None:
    entity(graph)
    with pytest.raises(NotFoundError) as caught:
        graph.node("claim:unrelated")
    assert str(caught.value) == "no node 'claim:unrelated' in this graph"


def test_unknown_edge_is_not_found(graph: ContextGraph) -> None:
    with pytest.raises(NotFoundError, match="no edge 'edge:nope'"):
        graph.edge("edge:nope")


def test_an_empty_graph_is_truthy() -> None:
    graph = ContextGraph()
    assert len(graph) == 0
    assert bool(graph) is True

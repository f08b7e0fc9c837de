"""Edge-level justification: an edge bound to an assumption falls with it, its endpoints need not."""

from __future__ import annotations

import pytest
from belief_graphs import add_claim, add_evidence, add_source, snapshot

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import BeliefError, NotFoundError, SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import Provenance
from contextmesh.formats.graph_file import dump_graph, load_graph


class Bound:
    """Claim C1 -[cites]-> claim C2, the edge bound to assumption A; evidence against A."""

    def __init__(self) -> None:
        self.graph = ContextGraph()
        self.ledger = Assumptions(self.graph)
        self.source = add_source(self.graph).id
        self.c1 = add_claim(self.graph, "the index fits in memory", self.source).id
        self.c2 = add_claim(self.graph, "the corpus has 2M rows", self.source).id
        self.edge = self.graph.add_edge(self.c1, "cites", self.c2).id
        self.a = self.ledger.assume("rows are under 1 KiB").id
        self.b = self.ledger.assume("the corpus stops growing").id
        self.evidence = add_evidence(self.graph, "a 4 KiB row in the dump").id


@pytest.fixture
def bound() -> Bound:
    return Bound()


def test_justifies_binds_an_edge_to_an_assumption(bound: Bound) -> None:
    bound.ledger.justifies(bound.a, bound.edge)
    assert bound.graph.edge(bound.edge).assumption_id == bound.a
    assert [e.id for e in bound.graph.bound_edges(bound.a)] == [bound.edge]
    loaded = load_graph(dump_graph(bound.graph))
    assert [e.id for e in loaded.bound_edges(bound.a)] == [bound.edge]


def test_binding_the_same_pair_again_writes_nothing(bound: Bound) -> None:
    bound.ledger.justifies(bound.a, bound.edge)
    before = snapshot(bound.graph)
    bound.ledger.justifies(bound.a, bound.edge)
    assert snapshot(bound.graph) == before
    assert len(bound.graph.bound_edges(bound.a)) == 1


def test_the_bound_edge_falls_with_its_assumption_while_its_endpoints_stand(bound: Bound) -> None:
    bound.ledger.justifies(bound.a, bound.edge)
    report = bound.ledger.reject(bound.a, evidence_id=bound.evidence)
    assert bound.graph.edge(bound.edge).invalidated
    assert report.invalidated_edges == [bound.edge]
    assert report.invalidated == {}  # a binding seeds no node
    assert bound.graph.is_live(bound.c1) and bound.graph.is_live(bound.c2)
    assert {bound.c1, bound.c2} <= set(report.preserved_ids)
    assert bound.graph.out_edges(bound.c1, ["cites"]) == []
    data = dump_graph(bound.graph)
    assert dump_graph(load_graph(data)) == data


def test_an_unbound_edge_survives_the_rejection(bound: Bound) -> None:
    bound.ledger.reject(bound.a, evidence_id=bound.evidence)
    assert bound.graph.edge_is_live(bound.graph.edge(bound.edge))


def _decision_citing_with_bound_cites(bound: Bound) -> tuple[str, str]:
    """A decision depending on A whose cites edge to a standing source is bound to A."""
    decision = DecisionLog(bound.graph).decide(
        "scale the index out",
        rationale="rows are small",
        provenance=Provenance(source_id=bound.source),
        assumptions=[bound.a],
        cites=[bound.source],
    )
    cites = bound.graph.find_edge(decision.id, "cites", bound.source)
    assert cites is not None
    bound.ledger.justifies(bound.a, cites.id)
    return decision.id, cites.id


def test_a_bound_edge_with_one_fallen_endpoint_falls_too(bound: Bound) -> None:
    decision, cites = _decision_citing_with_bound_cites(bound)
    report = bound.ledger.reject(bound.a, evidence_id=bound.evidence)
    assert decision in report.invalidated
    assert cites in report.invalidated_edges
    assert bound.graph.edge(cites).invalidated


def test_the_file_loads_after_rejecting_an_assumption_bound_to_an_edge_of_a_fallen_node(bound: Bound) -> None:
    _decision_citing_with_bound_cites(bound)
    bound.ledger.reject(bound.a, evidence_id=bound.evidence)
    load_graph(dump_graph(bound.graph))


def test_rebinding_an_edge_to_another_assumption_is_refused(bound: Bound) -> None:
    bound.ledger.justifies(bound.a, bound.edge)
    before = snapshot(bound.graph)
    with pytest.raises(BeliefError, match="refusing to silently rebind"):
        bound.ledger.justifies(bound.b, bound.edge)
    assert snapshot(bound.graph) == before
    assert bound.graph.edge(bound.edge).assumption_id == bound.a
    assert bound.graph.bound_edges(bound.b) == []


def test_binding_to_a_rejected_assumption_is_refused(bound: Bound) -> None:
    bound.ledger.reject(bound.a, evidence_id=bound.evidence)
    before = snapshot(bound.graph)
    with pytest.raises(BeliefError, match="rejected"):
        bound.ledger.justifies(bound.a, bound.edge)
    assert snapshot(bound.graph) == before


def test_binding_to_a_superseded_assumption_is_refused(bound: Bound) -> None:
    bound.ledger.supersede(bound.a, "rows are under 2 KiB")
    before = snapshot(bound.graph)
    with pytest.raises(BeliefError, match="superseded"):
        bound.ledger.justifies(bound.a, bound.edge)
    assert snapshot(bound.graph) == before


def test_binding_to_an_unknown_assumption_or_edge_is_refused(bound: Bound) -> None:
    before = snapshot(bound.graph)
    with pytest.raises(NotFoundError):
        bound.ledger.justifies("assumption:nope-000000", bound.edge)
    with pytest.raises(NotFoundError):
        bound.ledger.justifies(bound.a, "edge:nope-000000")
    assert snapshot(bound.graph) == before


@pytest.mark.parametrize("how", ["edge-invalidated", "endpoint-pruned"])
def test_binding_a_dead_edge_is_refused(bound: Bound, how: str) -> None:
    if how == "edge-invalidated":
        bound.graph.invalidate(edge_ids=[bound.edge])
    else:
        bound.graph.prune([bound.c2])
    before = snapshot(bound.graph)
    with pytest.raises(BeliefError, match="not live"):
        bound.ledger.justifies(bound.a, bound.edge)
    assert snapshot(bound.graph) == before


def test_superseding_the_assumption_leaves_its_bound_edge_live(bound: Bound) -> None:
    bound.ledger.justifies(bound.a, bound.edge)
    bound.ledger.supersede(bound.a, "rows are under 2 KiB")
    assert bound.graph.edge_is_live(bound.graph.edge(bound.edge))
    data = dump_graph(bound.graph)
    assert dump_graph(load_graph(data)) == data


def test_add_edge_takes_no_assumption_id(bound: Bound) -> None:
    with pytest.raises(TypeError):
        bound.graph.add_edge(bound.c2, "cites", bound.c1, assumption_id=bound.a)  # type: ignore[call-arg]


def test_a_file_with_a_live_edge_bound_to_a_rejected_assumption_is_refused(bound: Bound) -> None:
    bound.ledger.justifies(bound.a, bound.edge)
    bound.ledger.reject(bound.a, evidence_id=bound.evidence)
    document = loads(dump_graph(bound.graph))
    index = next(i for i, e in enumerate(document["edges"]) if e["id"] == bound.edge)
    assert document["edges"][index]["invalidated"] is True
    document["edges"][index]["invalidated"] = False
    with pytest.raises(SnapshotError) as caught:
        load_graph(file_bytes(document))
    assert caught.value.path == f"edges[{index}].invalidated"
    assert bound.a in caught.value.found

"""Decisions: fresh auto ids, explicit ids as idempotency keys, refusals that write nothing."""

from __future__ import annotations

from typing import Any

import pytest
from belief_graphs import add_claim, add_entity, add_source, snapshot

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.decision_identity import decision_fingerprint
from contextmesh.core.errors import BeliefError, OntologyError, SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import Provenance
from contextmesh.formats.graph_file import dump_graph, load_graph

EXPLICIT = "decision:step-1"


class Desk:
    """A graph with two sources, two claims, an entity, an assumption and a decision log."""

    def __init__(self) -> None:
        self.graph = ContextGraph()
        self.log = DecisionLog(self.graph)
        self.source = add_source(self.graph, "design doc").id
        self.other_source = add_source(self.graph, "benchmark report").id
        self.claim = add_claim(self.graph, "pgvector supports hnsw", self.source).id
        self.claim2 = add_claim(self.graph, "qdrant needs a licence", self.source).id
        self.entity = add_entity(self.graph, "vector index").id
        self.assumption = Assumptions(self.graph).assume("rows stay under ten million").id
        self.prov = Provenance(source_id=self.source)

    def decide(self, title: str = "use pgvector", **overrides: Any) -> Any:
        kwargs: dict[str, Any] = {
            "rationale": "hnsw in postgres",
            "provenance": self.prov,
            "rests_on": [self.claim],
            "assumptions": [self.assumption],
            "produces": [self.entity],
            "cites": [self.other_source],
        }
        kwargs.update(overrides)
        return self.log.decide(title, **kwargs)


@pytest.fixture
def desk() -> Desk:
    return Desk()


# -- auto ids -----------------------------------------------------------------------------------


def test_two_identical_decides_without_an_id_mint_two_fresh_auto_ids(desk: Desk) -> None:
    first, second = desk.decide(), desk.decide()
    assert first.id != second.id
    assert first.id.startswith("decision:auto:") and second.id.startswith("decision:auto:")
    assert first.created and second.created
    for record in (first, second):
        assert desk.graph.node(record.id).attrs["decision_identity"] == "auto"


def test_a_new_log_over_a_restored_graph_keeps_minting_fresh_ids(desk: Desk) -> None:
    first = desk.decide()
    restored = load_graph(dump_graph(desk.graph))
    again = DecisionLog(restored).decide("use pgvector", rationale="hnsw in postgres", provenance=desk.prov)
    assert again.id != first.id
    assert again.id.startswith("decision:auto:")


def test_a_decision_records_its_grounds_products_and_reasons_as_edges(desk: Desk) -> None:
    record = desk.decide()
    g, d = desk.graph, record.id
    assert g.find_edge(d, "derived_from", desk.claim) is not None
    assert g.find_edge(desk.claim, "supports", d) is not None
    assert g.find_edge(d, "depends_on", desk.assumption) is not None
    assert g.find_edge(d, "produces", desk.entity) is not None
    assert g.find_edge(d, "cites", desk.other_source) is not None
    node = g.node(d)
    assert node.attrs["rationale"] == "hnsw in postgres"
    assert node.provenance == desk.prov


# -- explicit ids -------------------------------------------------------------------------------


def test_an_explicit_id_with_the_same_content_returns_the_same_decision_and_writes_nothing(desk: Desk) -> None:
    first = desk.decide(id=EXPLICIT)
    assert (first.id, first.created) == (EXPLICIT, True)
    before = snapshot(desk.graph)
    # Order of the referenced ids does not matter: the content is a set of edges.
    again = desk.decide(id=EXPLICIT, rests_on=[desk.claim], cites=[desk.other_source])
    assert (again.id, again.created) == (EXPLICIT, False)
    assert snapshot(desk.graph) == before


@pytest.mark.parametrize("change", ["rationale", "title", "rests_on", "cites", "produces", "provenance"])
def test_an_explicit_id_with_different_content_is_refused_and_writes_nothing(desk: Desk, change: str) -> None:
    desk.decide(id=EXPLICIT)
    overrides: dict[str, Any] = {
        "rationale": {"rationale": "something else"},
        "title": {"title": "use qdrant"},
        "rests_on": {"rests_on": [desk.claim2]},
        "cites": {"cites": []},
        "produces": {"produces": []},
        "provenance": {"provenance": Provenance(source_id=desk.other_source)},
    }[change]
    before = snapshot(desk.graph)
    with pytest.raises(BeliefError, match="already names different content"):
        desk.decide(id=EXPLICIT, **overrides)
    assert snapshot(desk.graph) == before


def test_an_explicit_id_naming_another_kind_of_node_is_refused(desk: Desk) -> None:
    before = snapshot(desk.graph)
    with pytest.raises(BeliefError, match="not a decision"):
        desk.decide(id=desk.claim)
    assert snapshot(desk.graph) == before


def test_an_explicit_id_in_the_auto_namespace_is_refused(desk: Desk) -> None:
    before = snapshot(desk.graph)
    with pytest.raises(BeliefError, match="decision:auto:"):
        desk.decide(id="decision:auto:my-own-1")
    assert snapshot(desk.graph) == before


# -- bad references -----------------------------------------------------------------------------


BAD_REFERENCES = (
    "rests_on-a-source",
    "rests_on-unknown",
    "assumptions-a-claim",
    "assumptions-unknown",
    "needs-a-claim",
    "needs-unknown",
    "produces-a-claim",
    "produces-unknown",
    "cites-a-claim",
    "cites-unknown",
    "supersedes-a-claim",
    "supersedes-unknown",
    "provenance-not-a-source",
    "provenance-unknown",
)


def _bad_reference(desk: Desk, case: str) -> tuple[dict[str, Any], str]:
    return {
        "rests_on-a-source": ({"rests_on": [desk.source]}, "rests_on takes claim ids"),
        "rests_on-unknown": ({"rests_on": ["claim:nope-000000"]}, "not in this graph"),
        "assumptions-a-claim": ({"assumptions": [desk.claim]}, "takes assumption ids"),
        "assumptions-unknown": ({"assumptions": ["assumption:nope-000000"]}, "not in this graph"),
        "needs-a-claim": ({"needs": [desk.claim]}, "needs takes decision ids"),
        "needs-unknown": ({"needs": ["decision:nope"]}, "not in this graph"),
        "produces-a-claim": ({"produces": [desk.claim]}, "produces takes"),
        "produces-unknown": ({"produces": ["entity:nope-000000"]}, "not in this graph"),
        "cites-a-claim": ({"cites": [desk.claim]}, "cites takes source ids"),
        "cites-unknown": ({"cites": ["source:nope-000000"]}, "not in this graph"),
        "supersedes-a-claim": ({"supersedes": desk.claim}, "supersedes takes decision ids"),
        "supersedes-unknown": ({"supersedes": "decision:nope"}, "not in this graph"),
        "provenance-not-a-source": ({"provenance": Provenance(source_id=desk.claim)}, "takes source ids"),
        "provenance-unknown": ({"provenance": Provenance(source_id="source:nope-000000")}, "not in this graph"),
    }[case]


@pytest.mark.parametrize("explicit", [False, True], ids=["auto", "explicit"])
@pytest.mark.parametrize("case", BAD_REFERENCES)
def test_every_bad_reference_is_refused_with_the_graph_unchanged(desk: Desk, case: str, explicit: bool) -> None:
    desk.decide(title="an earlier decision")
    overrides, message = _bad_reference(desk, case)
    before = snapshot(desk.graph)
    with pytest.raises(BeliefError, match=message):
        desk.decide(**overrides, **({"id": EXPLICIT} if explicit else {}))
    assert snapshot(desk.graph) == before


def test_a_write_that_fails_midway_leaves_no_decision_behind(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(desk.graph)

    def refuse(*args: object, **kwargs: object) -> None:
        raise OntologyError("induced failure")

    monkeypatch.setattr(desk.graph, "add_edge", refuse)  # the supports edge is written through add_edge
    with pytest.raises(OntologyError, match="induced failure"):
        desk.decide(id=EXPLICIT)
    monkeypatch.undo()
    assert snapshot(desk.graph) == before
    assert desk.decide(id=EXPLICIT).created is True


def test_assumptions_given_a_decision_id_says_it_takes_assumption_ids(desk: Desk) -> None:
    earlier = desk.decide(title="an earlier decision").id
    before = snapshot(desk.graph)
    with pytest.raises(BeliefError, match=f"takes assumption ids; '{earlier}' is a decision"):
        desk.decide(assumptions=[earlier])
    assert snapshot(desk.graph) == before


# -- supersession and needs ---------------------------------------------------------------------


def test_supersedes_never_deletes_the_old_decision(desk: Desk) -> None:
    old = desk.decide().id
    new = desk.decide("use pgvector with ivfflat", rationale="hnsw build too slow", supersedes=old).id
    assert old in desk.graph.nodes
    assert desk.graph.is_live(old)
    edge = desk.graph.find_edge(new, "supersedes", old)
    assert edge is not None and desk.graph.edge_is_live(edge)
    assert [e.src for e in desk.graph.in_edges(old, ["supersedes"])] == [new]
    # The old decision's own grounds are still walkable.
    assert [e.dst for e in desk.graph.out_edges(old, ["derived_from"])] == [desk.claim]


def test_needs_adds_depends_on_between_decisions(desk: Desk) -> None:
    first = desk.decide("fetch the shard manifest").id
    second = desk.decide("rebuild the index", needs=[first]).id
    assert desk.graph.find_edge(second, "depends_on", first) is not None


# -- the explicit decision's frozen content -----------------------------------------------------


@pytest.mark.parametrize(
    ("edge_type", "target"),
    [
        ("cites", "source"),
        ("derived_from", "claim2"),
        ("produces", "entity2"),
        ("depends_on", "assumption2"),
        ("supersedes", "decision"),
    ],
)
def test_digest_covered_edges_of_an_explicit_decision_cannot_be_added_afterwards(
    desk: Desk, edge_type: str, target: str
) -> None:
    explicit = desk.decide(id=EXPLICIT, cites=[]).id
    targets = {
        "source": desk.source,
        "claim2": desk.claim2,
        "entity2": add_entity(desk.graph, "ivfflat index").id,
        "assumption2": Assumptions(desk.graph).assume("one region only").id,
        "decision": desk.decide("an earlier decision").id,
    }
    before = snapshot(desk.graph)
    with pytest.raises(OntologyError, match=r"pass it to DecisionLog\.decide"):
        desk.graph.add_edge(explicit, edge_type, targets[target])
    assert snapshot(desk.graph) == before


def test_depends_on_between_decisions_can_be_added_to_an_explicit_decision(desk: Desk) -> None:
    explicit = desk.decide(id=EXPLICIT).id
    digest_before = desk.graph.node(explicit).attrs["decision_digest"]
    earlier = desk.decide("an earlier decision").id
    desk.graph.add_edge(explicit, "depends_on", earlier)
    assert decision_fingerprint(desk.graph, explicit) == digest_before
    data = dump_graph(desk.graph)
    assert dump_graph(load_graph(data)) == data
    # ...and the explicit id still replays as the same content.
    assert desk.decide(id=EXPLICIT).created is False


def test_an_explicit_decision_stores_its_fingerprint(desk: Desk) -> None:
    explicit = desk.decide(id=EXPLICIT).id
    node = desk.graph.node(explicit)
    assert node.attrs["decision_identity"] == "explicit"
    assert node.attrs["decision_digest"] == decision_fingerprint(desk.graph, explicit)


# -- the fingerprint on load --------------------------------------------------------------------


def test_an_explicit_decision_round_trips_through_the_file(desk: Desk) -> None:
    desk.decide(id=EXPLICIT)
    data = dump_graph(desk.graph)
    loaded = load_graph(data)
    assert dump_graph(loaded) == data
    assert (
        DecisionLog(loaded)
        .decide(
            "use pgvector",
            rationale="hnsw in postgres",
            provenance=desk.prov,
            id=EXPLICIT,
            rests_on=[desk.claim],
            assumptions=[desk.assumption],
            produces=[desk.entity],
            cites=[desk.other_source],
        )
        .created
        is False
    )


def test_a_tampered_rationale_is_refused_on_load(desk: Desk) -> None:
    desk.decide(id=EXPLICIT)
    document = loads(dump_graph(desk.graph))
    index = next(i for i, n in enumerate(document["nodes"]) if n["id"] == EXPLICIT)
    document["nodes"][index]["attrs"]["rationale"] = "because the vendor said so"
    with pytest.raises(SnapshotError) as caught:
        load_graph(file_bytes(document))
    assert caught.value.path == f"nodes[{index}].attrs.decision_digest"


def test_a_tampered_covered_edge_is_refused_on_load(desk: Desk) -> None:
    desk.decide(id=EXPLICIT)
    document = loads(dump_graph(desk.graph))
    document["edges"] = [e for e in document["edges"] if not (e["src"] == EXPLICIT and e["type"] == "produces")]
    with pytest.raises(SnapshotError, match="decision_digest"):
        load_graph(file_bytes(document))

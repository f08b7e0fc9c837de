"""Structure in the ranking: a citation points at a document, the words the anchor does not hold describe
the other end, and what a claim stood behind when its assumption was rejected (ADR 0022)."""

from __future__ import annotations

from test_traverse import Mesh

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.core.model import NodeRecord, Provenance
from contextmesh.knowledge.intent import read_intent


def _source(mesh: Mesh, title: str) -> NodeRecord:
    return mesh.graph.add_node("source", title, attrs={"origin": f"test://{title}", "retrieved_at": None})


def test_a_cited_claims_document_answers_with_the_sentence_the_question_describes() -> None:
    mesh = Mesh()
    contract = mesh.entity("Turbidity Contract")
    design_note = _source(mesh, "Design note: two analysers")
    lead = mesh.claim("This note proposes a second analyser on every filter.", source=design_note)
    trip = mesh.claim("The filter alarm trips when either analyser reads high for a minute.", source=design_note)
    anchor = mesh.claim("The Turbidity Contract publishes what the design note asks for.", contract)
    mesh.graph.add_edge(anchor.id, "cites", lead.id)
    walk = mesh.walker().ask("In the note the Turbidity Contract cites, when does the filter alarm trip?")
    assert walk.dead_end is None
    assert walk.answer_id == trip.id
    # The path runs through the citation and the cited claim's document: a typed path, scored as shown.
    assert [s.edge_type for s in walk.path[1:]] == ["mentions", "cites", "derived_from", "derived_from"]
    assert [s.node_id for s in walk.path][-3:] == [lead.id, design_note.id, trip.id]


def test_the_other_end_is_judged_on_the_words_the_anchor_does_not_hold() -> None:
    mesh = Mesh()
    grafana = mesh.entity("Grafana")
    incident = _source(mesh, "Incident 219")
    vendor = _source(mesh, "Vendor guidance")
    readings = mesh.claim("Grafana readings showed 61 GiB at peak.", grafana, source=incident)
    cause = mesh.claim("In Incident 219 the readings show the builder ran out of memory.", source=incident)
    budget = mesh.claim("Budget no more than 56 GiB for each pod.", source=vendor)
    mesh.graph.add_edge(readings.id, "cites", cause.id)
    mesh.graph.add_edge(readings.id, "cites", budget.id)
    walk = mesh.walker().ask("Which vendor guidance do the Grafana readings in Incident 219 point to?")
    assert walk.dead_end is None
    assert walk.answer_id == budget.id  # "incident 219" describes the readings, not what they point to


def test_implementing_and_building_on_are_citations() -> None:
    for question in ("Which design does the contract implement?", "What report is the plan based on?"):
        assert "cites" in read_intent(question).edges


def _rejected_ground(mesh: Mesh) -> tuple[NodeRecord, NodeRecord, NodeRecord]:
    """A claim that supports a decision resting on an assumption an auditor's evidence then rejects."""
    pool = mesh.entity("Build Pool")
    design = _source(mesh, "Design doc")
    claim = mesh.claim("Adding shards keeps every build inside the Build Pool limits.", pool, source=design)
    ledger = Assumptions(mesh.graph)
    assumption = ledger.assume("Shard count grows linearly")
    DecisionLog(mesh.graph).decide(
        "Rebuild in partitions",
        rationale="shards stay small",
        provenance=Provenance(source_id=design.id),
        rests_on=[claim.id],
        assumptions=[assumption.id],
    )
    evidence = mesh.graph.add_node("evidence", "One tenant filled 41 of 100 shards.", attrs={"kind": "observation"})
    ledger.reject(assumption.id, evidence_id=evidence.id)
    return pool, claim, evidence


def test_a_claim_that_stood_behind_a_rejected_assumption_answers_only_with_the_reason() -> None:
    mesh = Mesh()
    _, claim, _ = _rejected_ground(mesh)
    walk = mesh.walker().ask("Does adding shards keep every build inside the Build Pool limits?")
    assert walk.dead_end is None
    assert walk.answer_id == claim.id  # nothing else answers: the claim still stands, but says why it is doubted
    assert walk.notes == [
        "in doubt: it supported decision 'Rebuild in partitions', which rested on the assumption 'Shard count "
        "grows linearly', rejected by evidence 'One tenant filled 41 of 100 shards.'"
    ]


def test_what_contradicts_a_doubted_claim_answers_instead() -> None:
    mesh = Mesh()
    pool, claim, _ = _rejected_ground(mesh)
    against = mesh.claim("One tenant filled 41 of the shards, so builds outgrew the Build Pool limits.", pool)
    mesh.graph.add_edge(against.id, "contradicts", claim.id)
    walk = mesh.walker().ask("Does adding shards keep every build inside the Build Pool limits?")
    assert walk.dead_end is None
    assert walk.answer_id == against.id
    assert walk.path[-2].node_id == claim.id and walk.path[-1].edge_type == "contradicts"
    assert walk.notes == [f"contradicts claim '{claim.label}'"]


def test_a_repair_that_rests_on_the_claim_again_clears_the_doubt() -> None:
    mesh = Mesh()
    _, claim, _ = _rejected_ground(mesh)
    fresh = Assumptions(mesh.graph).assume("Shard count follows the largest tenant")
    DecisionLog(mesh.graph).decide(
        "Rebuild in tenant partitions",
        rationale="repaired",
        provenance=Provenance(source_id=mesh.notes.id),
        rests_on=[claim.id],
        assumptions=[fresh.id],
    )
    walk = mesh.walker().ask("Does adding shards keep every build inside the Build Pool limits?")
    assert walk.answer_id == claim.id and walk.notes == []


def test_based_on_reads_as_rests_on_as_well_as_a_citation() -> None:
    intent = read_intent("Which assumption is the decision that produced the merger built on?")
    assert {"depends_on", "derived_from", "cites"} <= set(intent.edges)


def test_a_superseded_node_reached_over_the_relation_asked_for_still_answers() -> None:
    mesh = Mesh()
    shard_map = mesh.entity("Shard Map")
    log = DecisionLog(mesh.graph)
    provenance = Provenance(source_id=mesh.notes.id)
    first = log.decide("Key shards on position", rationale="simple", provenance=provenance, produces=[shard_map.id])
    log.decide("Key shards on tenant", rationale="skew", provenance=provenance, supersedes=first.id)
    walk = mesh.walker().ask("Which decision created the Shard Map?")
    assert walk.dead_end is None
    assert walk.answer_id == first.id  # superseded since, but it is what created the map
    assert walk.path[-1].edge_type == "produces"


def test_a_claim_holding_none_of_the_words_the_collection_uses_only_shows_the_entity_exists() -> None:
    mesh = Mesh()
    store = mesh.entity("Object Store")
    mesh.claim("Embeddings are read in order from the Object Store.", store)
    mesh.claim("Archive storage costs twenty dollars per terabyte each month.", source=_source(mesh, "Price list"))
    walker = mesh.walker()
    asked = walker.ask("What does the Object Store cost per terabyte?")
    assert asked.dead_end is not None  # "cost" and "terabyte" are words the collection uses elsewhere
    assert "Embeddings are read" in (asked.dead_end.rejected or "")
    paraphrase = walker.ask("What does the Object Store hand over?")  # words nobody uses: no evidence
    assert paraphrase.dead_end is None and "Embeddings are read" in (paraphrase.answer or "")


def test_the_words_of_a_loose_relation_stay_lexical_evidence() -> None:
    # "support" names a relation too common in plain wording to bar other answers (ADR 0014), so it is
    # also what the question says: "supports each unit for ten years" must still match it.
    plain = read_intent("For how long does the vendor support each analyser it ships?")
    assert "supports" in plain.edges and "support" not in plain.cues
    strict = read_intent("What replaced the polling rule?")
    assert strict.cues and all(cue.startswith("replac") for cue in strict.cues)  # a strict relation's verb is not


def test_an_ambiguous_acronym_answers_when_every_reading_finds_the_same_answer() -> None:
    mesh = Mesh()
    runbook, review = mesh.entity("Rebuild Runbook"), mesh.entity("Reliability Review")
    escalate = mesh.claim(
        "The Rebuild Runbook escalates to the platform team when three shards fail in a night.", runbook
    )
    mesh.claim("The Reliability Review meets once a month.", review)
    walk = mesh.walker().ask("What does the RR say to do when three shards fail in one night?")
    assert walk.dead_end is None
    assert walk.answer_id == escalate.id
    differing = mesh.walker().ask("What is the RR?")  # the readings answer differently: ask which
    assert differing.dead_end is not None and differing.dead_end.reason == "entity_unresolved"
    assert set(differing.dead_end.candidates) == {"Rebuild Runbook", "Reliability Review"}

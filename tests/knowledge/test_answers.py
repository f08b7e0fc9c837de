"""Answers that hold: ranking by meaning and structure, "I don't know", answering from what is live.

Small hand-built graphs, one behaviour each (issue 19 items 2-4). They use only the walker's public
surface, so each can be run against an older walker to see it fail.
"""

from __future__ import annotations

import pytest

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.belief.evidence import submit
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import NodeRecord, Provenance
from contextmesh.knowledge.embed import HashedEmbedder
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.traverse import Walker

EMBEDDER = HashedEmbedder(dimensions=64)


class Notes:
    """A graph of claims about a few entities, with span bodies kept beside it as a corpus would."""

    def __init__(self) -> None:
        self.graph = ContextGraph()
        self.graph.next_build()
        self.resolver = Resolver()
        self.bodies: dict[str, str] = {}
        self.source = self._put(self.graph.add_node("source", "Ops notes", attrs={"origin": "t", "retrieved_at": None}))

    def _put(self, node: NodeRecord) -> NodeRecord:
        node.embedding = EMBEDDER.embed(node.label)
        return node

    def entity(self, name: str, *aliases: str) -> NodeRecord:
        node = self.graph.add_node("entity", name, attrs={"canonical": name, "aliases": list(aliases)})
        self.resolver.register(node.id, name, aliases)
        return self._put(node)

    def claim(self, text: str, *mentions: NodeRecord, body: str = "") -> NodeRecord:
        key = f"span-{len(self.bodies) + 1}"
        node = self.graph.add_node("claim", text, attrs={"key": key}, provenance=Provenance(source_id=self.source.id))
        self.bodies[key] = f"{text} {body}".strip()
        self.graph.add_edge(node.id, "derived_from", self.source.id)
        for entity in mentions:
            self.graph.add_edge(node.id, "mentions", entity.id)
        return self._put(node)

    def walker(self) -> Walker:
        return Walker(self.graph, self.resolver, embedder=EMBEDDER, bodies=self.bodies)


def _ask(notes: Notes, question: str) -> tuple[str | None, str | None]:
    walk = notes.walker().ask(question)
    return walk.answer_id, None if walk.dead_end is None else walk.dead_end.reason


# -- item 2: lexical evidence over headline and body, weighted by rarity -------------------------


def test_a_fact_only_a_span_body_holds_answers_from_that_span() -> None:
    notes = Notes()
    loader = notes.entity("Bulk Loader")
    notes.claim("The Bulk Loader writes staging tables each night.", loader, body="It runs at midnight.")
    body = "Marking the tables UNLOGGED cut the load by 40 percent."
    unlogged = notes.claim("The Bulk Loader skips the write-ahead log.", loader, body=body)
    notes.claim("The Bulk Loader is owned by the data team.", loader)
    answer, dead = _ask(notes, "By how much did UNLOGGED tables cut the Bulk Loader's load time?")
    assert dead is None
    assert answer == unlogged.id


def test_a_rare_shared_word_outweighs_a_common_one() -> None:
    notes = Notes()
    gateway = notes.entity("Query Gateway")
    # "shard" is in every claim, so it tells them apart less than "merge" does.
    notes.claim("The Query Gateway sends every shard the query.", gateway)
    notes.claim("The Query Gateway retries a shard once.", gateway)
    merge = notes.claim("The Query Gateway waits for each shard, then runs a merge step.", gateway)
    notes.claim("The Query Gateway logs each shard's latency.", gateway)
    answer, _ = _ask(notes, "Which shard step does the Query Gateway merge with?")
    assert answer == merge.id


def test_a_claim_naming_every_entity_of_the_question_beats_one_naming_a_single_one() -> None:
    notes = Notes()
    builder, pool = notes.entity("Index Builder"), notes.entity("Build Node Pool")
    notes.claim("The Index Builder starts its nightly schedule at midnight.", builder)
    both = notes.claim("The Index Builder runs on the Build Node Pool every night.", builder, pool)
    answer, _ = _ask(notes, "When does the Index Builder run its nightly schedule on the Build Node Pool?")
    assert answer == both.id


# -- item 2: the question's intent steers the walk ------------------------------------------------


def _superseded_pair(notes: Notes) -> tuple[NodeRecord, NodeRecord]:
    rule = notes.entity("Sharding Rule")
    old = notes.claim("The Sharding Rule keys shards on corpus position.", rule)
    new = notes.claim("Shards are keyed by tenant first, then position.")
    notes.graph.add_edge(new.id, "supersedes", old.id)
    return old, new


def test_what_replaced_answers_the_newer_claim_across_supersedes() -> None:
    notes = Notes()
    old, new = _superseded_pair(notes)
    walk = notes.walker().ask("What replaced the Sharding Rule keying shards on corpus position?")
    assert walk.dead_end is None
    assert walk.answer_id == new.id
    assert walk.path[-1].edge_type == "supersedes"
    assert walk.path[-2].node_id == old.id  # the path shown is the path scored: through what was replaced


def test_what_did_it_replace_answers_the_older_claim() -> None:
    notes = Notes()
    old, new = _superseded_pair(notes)
    tenant = notes.entity("Tenant Key")
    notes.graph.add_edge(new.id, "mentions", tenant.id)
    walk = notes.walker().ask("What did keying shards on the Tenant Key replace?")
    assert walk.answer_id == old.id
    assert walk.path[-1].edge_type == "supersedes"


def test_a_relation_the_graph_does_not_hold_is_no_typed_edge() -> None:
    notes = Notes()
    bench = notes.entity("Recall Benchmark")
    notes.claim("The Recall Benchmark found latency rose by four milliseconds.", bench)
    walk = notes.walker().ask("What contradicts the Recall Benchmark's latency finding?")
    assert walk.dead_end is not None and walk.dead_end.reason == "no_typed_edge"
    assert "contradicts" in walk.dead_end.detail


def test_an_asked_for_assumption_answers_across_depends_on() -> None:
    notes = Notes()
    job = notes.entity("Compaction Job")
    assumption = Assumptions(notes.graph).assume("A nightly rebuild fits in 64 GiB")
    DecisionLog(notes.graph).decide(
        "Run the Compaction Job before each rebuild",
        rationale="Compacting first keeps the rebuild small.",
        provenance=Provenance(source_id=notes.source.id),
        assumptions=[assumption.id],
        produces=[job.id],
    )
    notes.claim("The Compaction Job removes deleted vectors.", job)
    walk = notes.walker().ask("Which assumption does running the Compaction Job before each rebuild depend on?")
    assert walk.answer_id == assumption.id
    assert walk.path[-1].edge_type == "depends_on"


# -- item 3: "I don't know" ----------------------------------------------------------------------


def test_a_question_nothing_answers_about_a_present_entity_dead_ends_naming_what_it_rejected() -> None:
    notes = Notes()
    pool = notes.entity("Build Node Pool")
    notes.claim("The Build Node Pool runs memory-optimised machines with 64 GiB each.", pool)
    notes.claim("Shards are built one at a time on the Build Node Pool at night.", pool)
    walk = notes.walker().ask("What is the monthly invoice total in euros for renting the Build Node Pool?")
    assert walk.dead_end is not None
    assert walk.dead_end.reason in {"wrong_node_type", "entity_unresolved", "no_typed_edge", "pruned_too_early"}
    assert walk.dead_end.rejected is not None
    assert walk.dead_end.rejected in walk.dead_end.detail
    assert "confidence" in walk.dead_end.detail


def test_an_ambiguous_acronym_dead_ends_naming_every_entity_it_could_mean() -> None:
    notes = Notes()
    plan, position = notes.entity("Capacity Plan"), notes.entity("Corpus Position")
    notes.claim("The Capacity Plan sizes shards per tenant.", plan)
    notes.claim("Corpus Position orders every vector by arrival.", position)
    walk = notes.walker().ask("What is CP?")
    assert walk.dead_end is not None and walk.dead_end.reason == "entity_unresolved"
    assert set(walk.dead_end.candidates) == {"Capacity Plan", "Corpus Position"}
    assert "'Capacity Plan'" in walk.dead_end.detail and "'Corpus Position'" in walk.dead_end.detail


def test_an_acronym_whose_context_settles_it_answers() -> None:
    notes = Notes()
    south, sewage = notes.entity("South Treatment Plant"), notes.entity("Eastfield Sewage Treatment Plant")
    notes.claim("The South Treatment Plant filters river water for the city.", south)
    blower = notes.claim("At the Eastfield Sewage Treatment Plant blower B2 was repaired after it tripped.", sewage)
    walk = notes.walker().ask("Which STP had its tripped blower repaired?")
    assert walk.answer_id == blower.id
    # one word of context is not enough to choose
    generic = notes.walker().ask("What does STP do?")
    assert generic.dead_end is not None and len(generic.dead_end.candidates) == 2


# -- item 4: answering from what is live ----------------------------------------------------------


def test_a_superseded_claim_never_answers_a_question_about_now() -> None:
    notes = Notes()
    old, new = _superseded_pair(notes)
    notes.graph.add_edge(new.id, "mentions", next(n.id for n in notes.graph.by_type("entity")))
    walk = notes.walker().ask("How does the Sharding Rule key shards on corpus position?")
    assert walk.answer_id != old.id
    assert walk.answer_id == new.id


def test_a_claim_contradicted_by_live_evidence_never_answers() -> None:
    notes = Notes()
    builder = notes.entity("Index Builder")
    wrong = notes.claim("The Index Builder fits every nightly build in 64 GiB of memory.", builder)
    right = notes.claim("The Index Builder needs more memory as tenants grow.", builder)
    evidence = submit(notes.graph, "The June build peaked at 61 GiB and was killed", notes.source.id).node
    notes.graph.add_edge(evidence.id, "contradicts", wrong.id)
    walk = notes.walker().ask("Does the Index Builder fit every nightly build in 64 GiB of memory?")
    assert walk.answer_id != wrong.id
    assert walk.answer_id in {right.id, evidence.id}


def test_an_answer_notes_a_live_contradiction() -> None:
    notes = Notes()
    acme = notes.entity("Tenant Acme")
    expected = notes.claim("Tenant Acme will stay below five percent of the corpus.", acme)
    grown = notes.claim("Tenant Acme grew sixfold and holds 38 percent of the corpus.", acme)
    notes.graph.add_edge(grown.id, "contradicts", expected.id)
    walk = notes.walker().ask("What share of the corpus does Tenant Acme hold after it grew sixfold?")
    assert walk.answer_id == grown.id
    assert walk.notes == [f"contradicts claim '{expected.label}'"]
    assert walk.to_dict()["notes"] == walk.notes


@pytest.mark.parametrize("question", ["What does the Index Builder do at night?", "Why did the Index Builder fail?"])
def test_confidence_is_reported_with_every_answer(question: str) -> None:
    notes = Notes()
    builder = notes.entity("Index Builder")
    notes.claim("The Index Builder ran out of memory at night.", builder)
    walk = notes.walker().ask(question)
    assert walk.dead_end is None
    assert 0.2 <= walk.confidence <= 1.0
    assert walk.to_dict()["confidence"] == walk.confidence

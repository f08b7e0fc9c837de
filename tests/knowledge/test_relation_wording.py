"""The wording a question uses for each GRAPH.md relation, and what a relation it only leans towards may bar.

The phrasings here are written from GRAPH.md's "Means" column (ADR 0036), not from any question set.
"""

from __future__ import annotations

import pytest
from test_traverse import Mesh

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.core.model import Provenance
from contextmesh.knowledge.intent import read_intent


@pytest.mark.parametrize(
    ("question", "edge", "answer_is_source"),
    [
        ("What overrode the old polling rule?", "supersedes", True),
        ("Which survey clashes with the plan's storage figure?", "contradicts", True),
        ("The survey is inconsistent with which figure?", "contradicts", False),
        ("What does the field test undermine?", "contradicts", False),
        ("Which decisions hinge on the nightly-fit assumption?", "depends_on", True),
        ("What is the compaction decision premised on?", "depends_on", False),
        ("Which assumption underlies the fan-out design?", "depends_on", False),  # design depends_on assumption
        ("What backs the decision to rebuild in partitions?", "supports", True),  # claim supports decision
        ("Which readings corroborate the vendor's memory figure?", "supports", True),
        ("Which note does the data contract reference?", "cites", False),
        ("What spawned the night schedule?", "produces", True),
        # The asking clause starts at its question word, wherever the sentence starts.
        ("If the sizing assumption is wrong, which decisions fall?", "depends_on", True),
    ],
)
def test_each_relation_is_read_from_the_words_for_its_meaning(question: str, edge: str, answer_is_source: bool) -> None:
    intent = read_intent(question)
    assert edge in intent.edges
    # The end of the stored edge the question asks for, and not the other.
    assert intent.direction_fits(edge, answer_is_source)
    assert not intent.direction_fits(edge, not answer_is_source)


def test_wording_that_only_leans_towards_a_relation_is_marked_so() -> None:
    led = read_intent("What decision led to the Build Node Pool?")
    assert "produces" in led.edges and "produces" in led.leaning
    named = read_intent("Which decision produced the Build Node Pool?")
    assert "produces" in named.edges and not named.leaning


def test_nouns_that_look_like_relation_verbs_name_no_relation() -> None:
    # "links to QLPS" is a radio link, not a citation; "according to" names a document, not an edge.
    assert read_intent("What do the radio links to QLPS carry under minute polling?").edges == ()
    assert read_intent("What shape do sizes follow, according to the growth report?").edges == ()


def test_a_leaning_relation_does_not_bar_an_answer_off_its_edges() -> None:
    mesh = Mesh()
    rollout = mesh.entity("Fan-out Rollout")
    latency = mesh.claim("The Fan-out Rollout raised query latency by four milliseconds.", rollout)
    walk = mesh.walker().ask("What did the Fan-out Rollout lead to for query latency?")
    # No produces edge leaves the rollout; a strict relation would dead-end as no_typed_edge.
    assert walk.dead_end is None
    assert walk.answer_id == latency.id


def test_what_falls_with_an_assumption_is_the_decision_resting_on_it() -> None:
    mesh = Mesh()
    pool = mesh.entity("Build Pool")
    sizing = mesh.claim("Every build fits inside the Build Pool at 64 GiB.", pool)
    other = mesh.claim("The Build Pool runs four nodes.", pool)
    assumption = Assumptions(mesh.graph).assume("A nightly build fits in 64 GiB")
    log = DecisionLog(mesh.graph)
    resting = log.decide(
        "Order 64 GiB machines for the Build Pool",
        rationale="the build fits",
        provenance=Provenance(source_id=mesh.notes.id),
        rests_on=[sizing.id],
        assumptions=[assumption.id],
    )
    log.decide(
        "Name the Build Pool nodes after rivers",
        rationale="easy to remember",
        provenance=Provenance(source_id=mesh.notes.id),
        rests_on=[other.id],
    )
    walk = mesh.walker().ask("If the 64 GiB build assumption is wrong, which decisions on the Build Pool fall?")
    assert walk.dead_end is None
    assert walk.answer_id == resting.id

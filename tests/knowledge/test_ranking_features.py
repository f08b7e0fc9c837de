"""A candidate's score is its features weighted: what ``bench/fit_ranking.py`` fits is what the walk ranks by."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contextmesh.demo.knowledge import build_world
from contextmesh.knowledge.intent import read_intent
from contextmesh.knowledge.ranking import FEATURES, AnswerIndex, Candidate, Weights, rank, score_of
from contextmesh.knowledge.search import reach
from contextmesh.knowledge.traverse import ANSWER_TYPES, WalkerSettings

QUESTIONS = (  # a plain question, and one across a relation the question names (across candidates)
    ("Memory Profiler", "How much memory does a shard use?", ("memory", "shard", "use")),
    ("Memory Profiler", "What did the Memory Profiler's finding contradict about memory?", ("find", "memory")),
)


@pytest.fixture(scope="module")
def world():  # type: ignore[no-untyped-def]
    return build_world(0)


def _ranked(world, entity: str, question: str, terms: tuple[str, ...], weights: Weights) -> list[Candidate]:  # type: ignore[no-untyped-def]
    graph = world.result.graph
    seed = next(n.id for n in graph.by_type("entity") if n.label == entity)
    intent = read_intent(question)
    settings = WalkerSettings()
    found = reach(
        graph, [seed], frozenset(settings.policy), intent.edges, hop_budget=settings.hop_budget, max_expand=8000
    )
    return rank(
        graph,
        AnswerIndex(graph, {}),
        found.reached,
        terms=terms,
        seeds=1,
        intent=intent,
        answer_types=ANSWER_TYPES,
        weights=weights,
    )


def test_the_weights_name_the_features_in_order() -> None:
    weights = Weights(lexical=2.0, hop=0.3, evidence=-1.0)
    linear = dict(zip(FEATURES, weights.linear(), strict=True))
    assert linear["lexical"] == 2.0 and linear["hop"] == 0.3 and linear["evidence"] == -1.0
    assert linear["closeness"] == Weights().closeness


@pytest.mark.parametrize(("entity", "question", "terms"), QUESTIONS)
def test_every_score_is_its_features_weighted_under_any_weights(world, entity, question, terms) -> None:  # type: ignore[no-untyped-def]
    ranked = _ranked(world, entity, question, terms, Weights())
    assert len(ranked) >= 5
    if read_intent(question).relational:
        assert any(c.anchor is not None for c in ranked)  # across candidates carry features too
    for candidate in ranked:
        assert len(candidate.features) == len(FEATURES)
        assert candidate.score == score_of(candidate.features, Weights().linear())
        # the confidence is the sum of its two shares, which are the first two features
        assert candidate.features[0] + candidate.features[1] == pytest.approx(candidate.confidence) or candidate.anchor
    steep = replace(Weights(), hop=0.5, closeness=0.2, decision=1.0)
    again = {(c.node_id, c.trail, c.anchor): c for c in _ranked(world, entity, question, terms, steep)}
    shared = [c for c in ranked if (c.node_id, c.trail, c.anchor) in again]
    assert len(shared) >= len(ranked) // 2
    for candidate in shared:
        other = again[(candidate.node_id, candidate.trail, candidate.anchor)]
        assert other.features == candidate.features  # features do not depend on the weights
        assert other.score == pytest.approx(score_of(candidate.features, steep.linear()))

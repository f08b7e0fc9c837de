"""Meaning in the ranking: it reorders what the typed walk reached, never adds to it, never lifts confidence."""

from __future__ import annotations

from pathlib import Path

from test_sentence_model import tiny_model

from contextmesh.core import vectors
from contextmesh.knowledge.embed import HashedEmbedder, cosine
from contextmesh.knowledge.folder import read_folder
from contextmesh.knowledge.intent import read_intent
from contextmesh.knowledge.pipeline import build
from contextmesh.knowledge.ranking import AnswerIndex, Weights, rank
from contextmesh.knowledge.search import reach
from contextmesh.knowledge.semantic import SemanticMatch
from contextmesh.knowledge.sentence_model import SentenceModelEmbedder
from contextmesh.knowledge.traverse import ANSWER_TYPES, WalkerSettings

DEFAULT = Weights()
NOTES = {
    "builder.md": "# Index Builder\n\nThe Index Builder ran out of memory during the nightly rebuild.\n\n"
    "The Index Builder is owned by the search team.\n\nThe Index Builder writes shards to the Object Store.\n",
    "store.md": "# Object Store\n\nThe Object Store keeps every shard for thirty days.\n",
}


def _graph(tmp_path: Path):  # type: ignore[no-untyped-def]
    for name, text in NOTES.items():
        (tmp_path / name).write_text(text)
    corpus, _ = read_folder([tmp_path])
    return build(corpus).graph


def _ranked(graph, semantic, weights=DEFAULT):  # type: ignore[no-untyped-def]
    entity = next(n.id for n in graph.by_type("entity") if n.label == "Index Builder")
    settings = WalkerSettings()
    found = reach(
        graph, [entity], frozenset(settings.policy), (), hop_budget=settings.hop_budget, max_expand=settings.max_expand
    )
    index = AnswerIndex(graph, {})
    return found, rank(
        graph,
        index,
        found.reached,
        terms=("team",),
        seeds=1,
        intent=read_intent("Who owns it?"),
        answer_types=ANSWER_TYPES,
        weights=weights,
        semantic=semantic,
    )


def test_meaning_reorders_only_what_was_reached_and_leaves_confidence_alone(tmp_path: Path) -> None:
    graph = _graph(tmp_path)
    found, plain = _ranked(graph, None)
    assert len(plain) >= 3
    favourite = plain[-1].node_id  # the weakest reached candidate, made the closest in meaning
    strong = Weights(semantic=5.0)  # strong enough to outweigh any lexical match here
    _, lifted = _ranked(graph, lambda node_id: 1.0 if node_id == favourite else 0.0, strong)
    assert lifted[0].node_id == favourite != plain[0].node_id
    assert {c.node_id for c in lifted} == {c.node_id for c in plain} <= set(found.reached)
    before = {c.node_id: c for c in plain}
    for candidate in lifted:
        assert candidate.confidence == before[candidate.node_id].confidence
        assert candidate.trail == before[candidate.node_id].trail  # the path shown is the path scored
    assert abs(lifted[0].score - before[favourite].score - strong.semantic) < 1e-9
    _, gently = _ranked(graph, lambda node_id: 1.0 if node_id == favourite else 0.0)
    assert abs(next(c.score for c in gently if c.node_id == favourite) - before[favourite].score - 0.2) < 1e-9


def test_the_hashed_default_adds_no_meaning_and_a_model_measures_cosine(tmp_path: Path) -> None:
    graph = _graph(tmp_path)
    assert SemanticMatch(HashedEmbedder()).for_question(graph, "who owns the index builder?") is None
    model = SentenceModelEmbedder(tiny_model(tmp_path / "tiny"))
    similarity = SemanticMatch(model).for_question(graph, "who owns the index builder?")
    assert similarity is not None
    claim = next(n for n in graph.by_type("claim") if "owned" in n.label)
    expected = cosine(
        vectors.decode(model.embed("who owns the index builder?")), vectors.decode(model.embed(claim.label))
    )
    assert similarity(claim.id) == expected  # the graph's 512-dimension hashed vector is not the model's: embedded
    claim.embedding = model.embed("the index")  # a stored vector of the model's dimensions is used as stored
    fresh = SemanticMatch(model).for_question(graph, "who owns the index builder?")
    assert fresh is not None
    assert fresh(claim.id) == cosine(
        vectors.decode(model.embed("who owns the index builder?")), vectors.decode(model.embed("the index"))
    )

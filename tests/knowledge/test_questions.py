"""The question set: every question reaches its expected answer or names its expected dead end.

The set lives in ``tests/data/questions.json``. Its shape is part of the acceptance: the seed's
three questions verbatim, at least eight paraphrases sharing no content word with their answer's
label, at least five questions whose answer is two or more hops away, and at least one dead end
per reason — at least 25 questions in all.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from contextmesh.demo.knowledge import DemoWorld, break_sizing_assumption, build_world
from contextmesh.knowledge.text import content_stems
from contextmesh.knowledge.traverse import DEAD_END_REASONS

QUESTIONS: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "questions.json").read_text()
)
SEED_QUESTIONS = (
    "Why did the Index Builder run out of memory?",
    "What made the sharding rule wrong?",
    "What is the refund policy for annual plans?",
)


@pytest.fixture(scope="module")
def world() -> DemoWorld:
    return build_world(0)


@pytest.fixture(scope="module")
def broken_world() -> DemoWorld:
    world = build_world(0)
    break_sizing_assumption(world)
    return world


def _claim_label(world: DemoWorld, key: str) -> str:
    return next(n.label for n in world.graph if n.attrs.get("key") == key)


def _ask(world: DemoWorld, question: dict[str, Any]) -> tuple[str | None, Any]:
    policy = tuple(question["policy"]) if question.get("policy") else None
    walk = world.walker.ask(question["question"], policy=policy)
    if walk.dead_end is not None:
        return walk.dead_end.reason, walk
    return world.graph.node(walk.answer_id).attrs.get("key"), walk  # type: ignore[arg-type]


def test_the_set_has_the_required_shape() -> None:
    kinds = [q["kind"] for q in QUESTIONS]
    assert len(QUESTIONS) >= 25
    assert [q["question"] for q in QUESTIONS if q["question"] in SEED_QUESTIONS] == list(SEED_QUESTIONS)
    assert kinds.count("paraphrase") >= 8
    assert kinds.count("multihop") >= 5
    reasons = {q.get("expect_dead_end") for q in QUESTIONS}
    assert set(DEAD_END_REASONS) <= reasons
    assert next(q for q in QUESTIONS if q["question"] == SEED_QUESTIONS[2])["expect_dead_end"] == "entity_unresolved"


@pytest.mark.parametrize("question", [q for q in QUESTIONS if q["kind"] == "paraphrase"], ids=lambda q: q["question"])
def test_paraphrase_shares_no_content_word_with_its_answer(world: DemoWorld, question: dict[str, Any]) -> None:
    label = _claim_label(world, question["expect_span"])
    shared = set(content_stems(question["question"])) & set(content_stems(label))
    assert not shared, f"{question['question']!r} shares {shared} with {label!r}"


@pytest.mark.parametrize(
    "question", [q for q in QUESTIONS if q.get("state") != "after_break"], ids=lambda q: q["question"]
)
def test_question_reaches_its_expected_answer_or_dead_end(world: DemoWorld, question: dict[str, Any]) -> None:
    got, walk = _ask(world, question)
    expected = question.get("expect_dead_end") or question["expect_span"]
    assert got == expected, f"{question['question']!r}: expected {expected}, got {got} ({walk.to_dict()})"
    if question["kind"] == "multihop":
        assert walk.hops >= 2
    if walk.dead_end is not None:
        assert walk.dead_end.detail


@pytest.mark.parametrize(
    "question", [q for q in QUESTIONS if q.get("state") == "after_break"], ids=lambda q: q["question"]
)
def test_question_after_the_break_reaches_its_expected_dead_end(
    broken_world: DemoWorld, question: dict[str, Any]
) -> None:
    got, walk = _ask(broken_world, question)
    assert got == question["expect_dead_end"], walk.to_dict()


def test_question_whose_path_crossed_a_fallen_node_changes_after_the_break() -> None:
    world = build_world(0)
    question = "Which incident finding did the Partitioned Rebuild design respond to?"
    before = world.walker.ask(question)
    assert before.dead_end is None
    crossed = {step.node_id for step in before.path}
    report = break_sizing_assumption(world)
    assert crossed & set(report.invalidated), "the path must cross a node the break takes down"
    after = world.walker.ask(question)
    assert (after.dead_end is not None and after.dead_end.reason == "pruned_too_early") or (
        after.answer_id != before.answer_id and not crossed & {s.node_id for s in after.path} & set(report.invalidated)
    )


def test_median_path_tokens_are_at_most_one_percent_of_flat(world: DemoWorld) -> None:
    ratios = []
    for question in QUESTIONS:
        if question.get("state") == "after_break":
            continue
        _, walk = _ask(world, question)
        if walk.dead_end is None:
            assert walk.flat_tokens > 0
            ratios.append(walk.tokens / walk.flat_tokens)
    assert ratios
    assert statistics.median(ratios) <= 0.01

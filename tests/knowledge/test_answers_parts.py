"""The parts of the ranking one by one — BM25F coverage, question intent, what still stands — and the
whole walk's determinism and import weight."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import Provenance
from contextmesh.knowledge.intent import read_intent
from contextmesh.knowledge.lexical import Bm25, LexicalDocument, fold, terms_of
from contextmesh.knowledge.standing import fallen, live_contradictions

ROOT = Path(__file__).resolve().parents[2]
RANKING_MODULES = ("traverse", "ranking", "search", "confidence", "intent", "lexical", "standing")


# -- lexical evidence ------------------------------------------------------------------------------


def _index(*texts: tuple[str, str]) -> Bm25:
    return Bm25(LexicalDocument(f"d{i}", terms_of(h), terms_of(b)) for i, (h, b) in enumerate(texts))


def test_coverage_is_one_for_a_headline_holding_the_whole_query_and_never_more() -> None:
    index = _index(("shard planner rewrites maps", ""), ("shard shard shard shard", "shard"), ("nothing here", ""))
    query = terms_of("planner rewrites maps")
    assert index.coverage("d0", query) == pytest.approx(1.0, abs=0.15)
    assert index.coverage("d1", terms_of("shard")) <= 1.0
    assert index.coverage("d2", query) == 0.0


def test_a_word_no_document_holds_lowers_coverage_and_a_rare_word_outweighs_a_common_one() -> None:
    index = _index(("shard merge step", ""), ("shard retry", ""), ("shard latency", ""), ("shard owner", ""))
    known = index.coverage("d0", terms_of("merge step"))
    assert index.coverage("d0", terms_of("merge step invoice")) < known
    assert index.idf(fold("merge")) > index.idf(fold("shard"))
    assert index.top(terms_of("shard merge"), 1) == ["d0"]


def test_the_body_counts_less_than_the_headline() -> None:
    index = _index(("unlogged tables", "nothing else"), ("nothing else", "unlogged tables"))
    query = terms_of("unlogged tables")
    assert index.score("d0", query) > index.score("d1", query) > 0.0


def test_folding_meets_inflections_for_matching_only() -> None:
    assert fold("keyed") == fold("key")
    assert fold("rebuilding") == fold("rebuild")
    assert terms_of("rewritten") == terms_of("rewrite")
    assert fold("shard") == "shard"


# -- intent ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "edge", "wants_source"),
    [
        ("What replaced the old polling rule?", "supersedes", True),
        ("What does the new design supersede?", "supersedes", False),
        ("Which report contradicts the plan's view?", "contradicts", True),
        ("What does the plan say that a later postmortem disputes?", "contradicts", False),
        ("Which guidance do the readings point to?", "cites", False),
        ("What assumption does the rollout rest on?", "depends_on", False),
        ("Which decision produced the scheduler?", "produces", True),
    ],
)
def test_the_relation_and_the_end_a_question_asks_for(question: str, edge: str, wants_source: bool) -> None:
    intent = read_intent(question)
    assert edge in intent.edges
    assert intent.asks_for_source is wants_source


def test_an_edge_stored_against_the_verb_is_matched_the_other_way_round() -> None:
    intent = read_intent("Which claims support rebuilding the index in partitions?")
    assert intent.asks_for_source is True
    assert intent.direction_fits("supports", answer_is_source=True)  # claim -supports-> decision
    assert intent.direction_fits("derived_from", answer_is_source=False)  # decision -derived_from-> claim
    assert not intent.direction_fits("derived_from", answer_is_source=True)


def test_cue_words_are_not_lexical_evidence_and_plain_questions_name_no_relation() -> None:
    intent = read_intent("Which decision superseded keying shards?")
    assert intent.node_type == "decision"
    assert {"decision", "superseded"} <= intent.cues
    plain = read_intent("How long does the vendor keep spare parts in pre-production?")
    assert plain.edges == () and plain.node_type is None and plain.asks_for_source is None


def test_a_why_question_and_a_question_about_the_past() -> None:
    assert read_intent("Why did the build fail?").causal
    assert read_intent("What made the rule wrong?").causal
    assert read_intent("What did the plan originally assume?").past
    assert not read_intent("What does the plan assume?").past


# -- what still stands --------------------------------------------------------------------------------


def _graph() -> tuple[ContextGraph, str]:
    graph = ContextGraph()
    graph.next_build()
    source = graph.add_node("source", "Notes", attrs={"origin": "t", "retrieved_at": None})
    return graph, source.id


def test_superseded_and_contradicted_claims_have_fallen_and_say_by_what() -> None:
    graph, source = _graph()
    old = graph.add_node("claim", "Shards follow position", provenance=Provenance(source_id=source))
    new = graph.add_node("claim", "Shards follow tenant", provenance=Provenance(source_id=source))
    assert fallen(graph, old.id) is None
    graph.add_edge(new.id, "supersedes", old.id)
    assert fallen(graph, old.id) == "superseded by claim 'Shards follow tenant'"
    assert fallen(graph, new.id) is None
    graph.invalidate([new.id])
    assert fallen(graph, old.id) is None  # an invalidated successor supersedes nothing


def test_a_decision_resting_on_a_rejected_assumption_has_fallen() -> None:
    graph, source = _graph()
    ledger = Assumptions(graph)
    assumption = ledger.assume("Tenants are equal")
    decision = DecisionLog(graph).decide(
        "Key on position", rationale="simple", provenance=Provenance(source_id=source), assumptions=[assumption.id]
    )
    assert fallen(graph, decision.id) is None
    graph.sync_assumption(assumption.model_copy(update={"status": "rejected"}))
    assert fallen(graph, decision.id) == "rests on the rejected assumption 'Tenants are equal'"


def test_live_contradictions_name_both_directions() -> None:
    graph, source = _graph()
    a = graph.add_node("claim", "Acme stays small", provenance=Provenance(source_id=source))
    b = graph.add_node("claim", "Acme grew sixfold", provenance=Provenance(source_id=source))
    graph.add_edge(b.id, "contradicts", a.id)
    assert live_contradictions(graph, a.id) == ["contradicted by claim 'Acme grew sixfold'"]
    assert live_contradictions(graph, b.id) == ["contradicts claim 'Acme stays small'"]


# -- the whole walk -------------------------------------------------------------------------------------

_ASK_ALL = """
import json, sys
from contextmesh.demo.knowledge import build_world
world = build_world(0)
questions = json.loads(sys.stdin.read())
print(json.dumps([world.walker.ask(q).to_dict() for q in questions], sort_keys=True))
"""


@pytest.mark.slow
def test_answers_are_byte_identical_across_hash_seeds() -> None:
    data = json.loads((ROOT / "tests" / "data" / "corpora" / "demo" / "questions.json").read_text())
    questions = json.dumps([q["question"] for q in data["questions"] if q["split"] == "dev"])
    outputs = []
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _ASK_ALL], input=questions, capture_output=True, text=True, env=env, check=True
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    assert '"confidence"' in outputs[0]


@pytest.mark.parametrize("module", RANKING_MODULES)
def test_the_walk_and_its_scoring_import_neither_networkx_nor_the_graph_module_at_run_time(module: str) -> None:
    """Types only under TYPE_CHECKING: a one-question process should not pay for networkx through the walk."""
    tree = ast.parse((ROOT / "contextmesh" / "knowledge" / f"{module}.py").read_text())
    guarded = {
        id(node)
        for stmt in tree.body
        if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Name) and stmt.test.id == "TYPE_CHECKING"
        for node in ast.walk(stmt)
    }
    imported = [
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in guarded
        for alias in node.names
    ]
    heavy = [
        name
        for name in imported
        if name.startswith("networkx") or name in {"contextmesh.core.graph", "contextmesh.knowledge.pipeline"}
    ]
    assert not heavy, f"{module} imports {heavy} at run time"

"""bench/_runnable.py: which questions a folder's graph can answer at all, from structure alone (ADR 0039).

The questions here are written for the test (none is from a question set); they use the water
corpus's documents and decisions file, whose structure the rule reads.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.folder import read_folder
from contextmesh.knowledge.pipeline import build

ROOT = Path(__file__).resolve().parents[2]
WATER = ROOT / "tests" / "data" / "corpora" / "water"
sys.path.insert(0, str(ROOT / "bench"))

from _runnable import decision_edges, waits  # noqa: E402


@pytest.fixture(scope="module")
def water() -> tuple[ContextGraph, dict[str, list[str]]]:
    corpus, _ = read_folder([WATER / "docs"], entities=WATER / "entities.json")
    result = build(corpus)
    by_doc: dict[str, list[str]] = {}
    for source, span in corpus.spans():
        by_doc.setdefault(source.key, []).append(span.key)
    return result.graph, by_doc


def _asker(graph: ContextGraph, by_doc: dict[str, list[str]]) -> Any:
    claims = {str(n.attrs.get("key")): n.id for n in graph.by_type("claim", live_only=False)}

    def gold_claims(gold: dict[str, Any]) -> set[str]:
        # The document's first claim stands for any of its sentences: the rule reads documents whole.
        return {next(claims[key] for key in by_doc[gold["doc"]] if key in claims)}

    by_decisions = decision_edges(json.loads((WATER / "decisions.json").read_text()))
    return lambda question: waits(question, graph, gold_claims, by_decisions)


def _question(kind: str, doc: str) -> dict[str, Any]:
    return {"kind": kind, "answerable": True, "gold": [{"doc": doc, "quote": "-"}], "after_scenario": None}


def test_a_derived_from_question_at_a_decisions_source_waits(water: tuple[ContextGraph, dict[str, list[str]]]) -> None:
    # The weekly-verification decision is derived from the regulator's letter; a folder holds no
    # decision, and a document's derived_from edges never leave it, so no path can cross one.
    asks = _asker(*water)
    assert asks(_question("multihop:derived_from", "regulator-letter-2026-03.txt")) is True


def test_a_derived_from_question_no_decision_touches_is_runnable(
    water: tuple[ContextGraph, dict[str, list[str]]],
) -> None:
    asks = _asker(*water)
    touched = decision_edges(json.loads((WATER / "decisions.json").read_text()))["derived_from"]
    untouched = sorted(doc for doc in water[1] if doc not in touched)
    assert untouched, "the water corpus has documents no decision is derived from"
    assert asks(_question("multihop:derived_from", untouched[0])) is False


def test_a_cites_question_a_document_link_carries_stays_runnable(
    water: tuple[ContextGraph, dict[str, list[str]]],
) -> None:
    # A decision cites the duplicate-analysers design note, and so does the data contract's link:
    # the documents carry the relation themselves.
    asks = _asker(*water)
    assert asks(_question("multihop:cites", "design-duplicate-analysers.md")) is False


def test_a_supersedes_question_only_decisions_carry_waits_and_one_a_link_carries_does_not(
    water: tuple[ContextGraph, dict[str, list[str]]],
) -> None:
    asks = _asker(*water)
    # weekly-verification supersedes annual-tx9-calibration; no link between their documents says so.
    assert asks(_question("multihop:supersedes", "regulator-letter-2026-03.txt")) is True
    # ADR-011's status line links ADR-007 as superseded.
    assert asks(_question("multihop:supersedes", "adr-011-dnp3-unsolicited.md")) is False


def test_plain_kinds_decision_only_golds_and_scenarios(water: tuple[ContextGraph, dict[str, list[str]]]) -> None:
    asks = _asker(*water)
    assert asks(_question("paraphrase", "regulator-letter-2026-03.txt")) is False
    assert asks(_question("multihop:produces", "design-duplicate-analysers.md")) is True
    assert asks({**_question("temporal", "oncall-rota-2026-q1.md"), "after_scenario": "x"}) is True
    only_decision = {"kind": "alias", "answerable": True, "gold": [{"decision": "k"}], "after_scenario": None}
    assert asks(only_decision) is True
    unanswerable = {"kind": "unanswerable-present", "answerable": False, "gold": [], "after_scenario": None}
    assert asks(unanswerable) is False

"""The demo's break scenario is the demo's own file, loaded strictly; the engine's sidecar knows nothing of it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextmesh import CanonicalError, CorpusError, load_corpus, load_sidecar
from contextmesh.core.canonical import loads
from contextmesh.demo import BREAK_PATH, CORPUS_PATH, SIDECAR_PATH
from contextmesh.demo.knowledge import break_sizing_assumption, build_world, load_demo_break
from contextmesh.demo.scenario import load_break

Data = dict[str, Any]


def scenario_data() -> Data:
    return loads(BREAK_PATH.read_bytes())  # type: ignore[no-any-return]


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "break.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_bundled_scenario_breaks_the_sizing_assumption_of_the_postmortem() -> None:
    corpus = load_corpus(CORPUS_PATH)
    sidecar = load_sidecar(SIDECAR_PATH, corpus)
    scenario = load_demo_break()
    assert scenario == load_break(BREAK_PATH, corpus, sidecar)
    assert (scenario.assumption, scenario.source) == ("linear-sharding", "postmortem-233")
    assert scenario.statement(sidecar) == "Shard count grows linearly with corpus size"
    assert "41 of 100 shards" in scenario.evidence_text


def test_the_engines_sidecar_format_has_no_break_field() -> None:
    sidecar = loads(SIDECAR_PATH.read_bytes())
    assert set(sidecar) == {"assumptions", "decisions"}


def test_the_break_rejects_the_assumption_through_the_scenarios_observation() -> None:
    world = build_world(0)
    report = break_sizing_assumption(world)
    evidence = world.graph.node(report.evidence_id)  # type: ignore[arg-type]
    assert evidence.label == load_demo_break().evidence_text
    assert evidence.attrs["external_id"] == "postmortem-233/observation-1"
    assert report.statement == "Shard count grows linearly with corpus size"
    assert report.blast_radius > 0


def _set(name: str, value: Any) -> Callable[[Data], None]:
    return lambda data: data.__setitem__(name, value)


def _drop(name: str) -> Callable[[Data], None]:
    return lambda data: data.pop(name)


CASES = [
    ("unknown_assumption", _set("assumption", "nope"), "break.assumption", "it must name an assumption key"),
    ("unknown_source", _set("source", "nope"), "break.source", "it must name a source key"),
    ("empty_evidence", _set("evidence_text", "  "), "break.evidence_text", "non-empty text is required"),
    ("evidence_a_number", _set("evidence_text", 7), "break.evidence_text", "non-empty text is required"),
    ("missing_source", _drop("source"), "break.source", "the field 'source' is required"),
    ("unknown_field", _set("replacement", "x"), "break.replacement", "allowed fields are"),
]


@pytest.mark.parametrize(("mutate", "path", "rule"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_corrupt_scenario_is_refused_with_a_path(
    tmp_path: Path, mutate: Callable[[Data], None], path: str, rule: str
) -> None:
    corpus = load_corpus(CORPUS_PATH)
    sidecar = load_sidecar(SIDECAR_PATH, corpus)
    data = scenario_data()
    mutate(data)
    with pytest.raises(CorpusError) as caught:
        load_break(write(tmp_path, data), corpus, sidecar)
    assert caught.value.path == path
    assert caught.value.rule.startswith(rule)


@pytest.mark.parametrize("document", [[], "text", None])
def test_a_scenario_that_is_not_an_object_is_refused(tmp_path: Path, document: object) -> None:
    corpus = load_corpus(CORPUS_PATH)
    with pytest.raises(CorpusError) as caught:
        load_break(write(tmp_path, document), corpus, load_sidecar(SIDECAR_PATH, corpus))
    assert caught.value.path == "break"


def test_a_duplicate_key_is_refused_by_the_strict_parser(tmp_path: Path) -> None:
    path = tmp_path / "break.json"
    path.write_text('{"assumption": "a", "assumption": "b", "evidence_text": "x", "source": "s"}', encoding="utf-8")
    corpus = load_corpus(CORPUS_PATH)
    with pytest.raises(CanonicalError, match="twice") as caught:
        load_break(path, corpus, load_sidecar(SIDECAR_PATH, corpus))
    assert caught.value.path.startswith("break")

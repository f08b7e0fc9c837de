"""Corpus and sidecar loaders: untrusted files refused with a path; the bundled demo corpus loads."""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextmesh.core.errors import InputError
from contextmesh.demo import CORPUS_PATH, SIDECAR_PATH
from contextmesh.knowledge.corpus import CorpusError, load_corpus, load_sidecar, parse_date
from contextmesh.knowledge.extract import drop_reason

Data = dict[str, Any]


def corpus_data() -> Data:
    return {
        "entities": [
            {"name": "Index Builder", "aliases": ["IB"]},
            {"name": "Shard Map", "aliases": []},
        ],
        "sources": [
            {
                "key": "doc-a",
                "title": "Design note",
                "origin": "wiki:a",
                "retrieved_at": "2026-01-12",
                "spans": [
                    {"key": "a-1", "text": "The Index Builder ran out of memory.", "body": "", "relations": []},
                    {
                        "key": "a-2",
                        "text": "The Shard Map is stored in Postgres.",
                        "body": "More text.",
                        "relations": [{"type": "cites", "target": "a-1"}],
                    },
                ],
            },
            {
                "key": "chat",
                "title": "Chat export",
                "origin": "chat:x",
                "retrieved_at": None,
                "spans": [{"key": "c-1", "text": "Thanks all.", "body": "", "relations": []}],
            },
        ],
    }


def sidecar_data() -> Data:
    decision = {
        "key": "d-1",
        "title": "Shard the build",
        "rationale": "Because memory ran out.",
        "source": "doc-a",
        "rests_on": ["a-1"],
        "assumptions": ["linear"],
        "needs": [],
        "produces": ["Shard Map"],
        "cites": ["doc-a"],
        "supersedes": None,
    }
    second = {**copy.deepcopy(decision), "key": "d-2", "needs": ["d-1"], "supersedes": "d-1"}
    return {
        "assumptions": [
            {"key": "linear", "statement": "Shards grow linearly", "source": "doc-a", "supported_by_spans": ["a-2"]}
        ],
        "decisions": [decision, second],
    }


def write(tmp_path: Path, name: str, data: Data) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_valid_corpus_and_sidecar_load(tmp_path: Path) -> None:
    corpus = load_corpus(write(tmp_path, "corpus.json", corpus_data()))
    assert [e.name for e in corpus.entities] == ["Index Builder", "Shard Map"]
    assert [s.key for s in corpus.sources] == ["doc-a", "chat"]
    assert [span.key for _, span in corpus.spans()] == ["a-1", "a-2", "c-1"]
    assert corpus.sources[0].spans[1].chunk == "The Shard Map is stored in Postgres. More text."
    assert corpus.sources[1].retrieved_at is None
    sidecar = load_sidecar(write(tmp_path, "sidecar.json", sidecar_data()), corpus)
    assert [d.key for d in sidecar.decisions] == ["d-1", "d-2"]
    assert sidecar.decisions[1].supersedes == "d-1"
    assert [a.key for a in sidecar.assumptions] == ["linear"]


# -- corpus corruption cases: (name, mutation, expected .path) ---------------------------------


def _set(path: list[Any], value: Any) -> Callable[[Data], None]:
    def mutate(data: Data) -> None:
        target = data
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return mutate


def _delete(path: list[Any]) -> Callable[[Data], None]:
    def mutate(data: Data) -> None:
        target = data
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return mutate


def _duplicate_span(data: Data) -> None:
    data["sources"][1]["spans"][0]["key"] = "a-1"


CORPUS_CASES = [
    ("unknown_top_field", _set(["extra"], 1), "$.extra"),
    ("unknown_source_field", _set(["sources", 0, "author"], "x"), "sources[0].author"),
    ("unknown_span_field", _set(["sources", 0, "spans", 1, "colour"], "red"), "sources[0].spans[1].colour"),
    (
        "unknown_relation_field",
        _set(["sources", 0, "spans", 1, "relations", 0, "why"], "x"),
        "sources[0].spans[1].relations[0].why",
    ),
    ("unknown_entity_field", _set(["entities", 0, "kind"], "service"), "entities[0].kind"),
    ("missing_source_title", _delete(["sources", 0, "title"]), "sources[0].title"),
    ("missing_retrieved_at", _delete(["sources", 1, "retrieved_at"]), "sources[1].retrieved_at"),
    ("missing_span_body", _delete(["sources", 0, "spans", 0, "body"]), "sources[0].spans[0].body"),
    ("missing_entity_aliases", _delete(["entities", 1, "aliases"]), "entities[1].aliases"),
    ("missing_sources", _delete(["sources"]), "$.sources"),
    ("duplicate_span_key_across_sources", _duplicate_span, "sources[1].spans[0].key"),
    ("duplicate_source_key", _set(["sources", 1, "key"], "doc-a"), "sources[1].key"),
    ("month_13", _set(["sources", 0, "retrieved_at"], "2026-13-01"), "sources[0].retrieved_at"),
    ("unpadded_date", _set(["sources", 0, "retrieved_at"], "2026-1-5"), "sources[0].retrieved_at"),
    ("datetime_not_date", _set(["sources", 0, "retrieved_at"], "2026-01-12T00:00"), "sources[0].retrieved_at"),
    ("date_as_number", _set(["sources", 0, "retrieved_at"], 20260112), "sources[0].retrieved_at"),
    ("empty_span_text", _set(["sources", 0, "spans", 0, "text"], "  "), "sources[0].spans[0].text"),
    ("no_entities", _set(["entities"], []), "entities"),
    ("no_sources", _set(["sources"], []), "sources"),
]


@pytest.mark.parametrize(("mutate", "path"), [c[1:] for c in CORPUS_CASES], ids=[c[0] for c in CORPUS_CASES])
def test_a_corrupt_corpus_is_refused_with_a_path(tmp_path: Path, mutate: Callable[[Data], None], path: str) -> None:
    data = corpus_data()
    mutate(data)
    with pytest.raises(CorpusError) as caught:
        load_corpus(write(tmp_path, "corpus.json", data))
    assert caught.value.path == path
    assert isinstance(caught.value, InputError)
    assert str(caught.value).startswith(f"{path}: ")


def test_a_relation_to_an_unknown_span_is_refused(tmp_path: Path) -> None:
    data = corpus_data()
    data["sources"][0]["spans"][1]["relations"][0]["target"] = "z-9"
    with pytest.raises(CorpusError) as caught:
        load_corpus(write(tmp_path, "corpus.json", data))
    assert caught.value.path == "sources[0].spans[1].relations[0].target"
    assert caught.value.found == "'z-9'"


def test_a_relation_may_point_at_a_span_of_a_later_source(tmp_path: Path) -> None:
    data = corpus_data()
    data["sources"][0]["spans"][1]["relations"][0]["target"] = "c-1"
    corpus = load_corpus(write(tmp_path, "corpus.json", data))
    assert corpus.sources[0].spans[1].relations[0].target == "c-1"


def test_a_dangling_relation_error_has_an_indexed_path(tmp_path: Path) -> None:
    data = corpus_data()
    data["sources"][0]["spans"][1]["relations"][0]["target"] = "z-9"
    with pytest.raises(CorpusError) as caught:
        load_corpus(write(tmp_path, "corpus.json", data))
    assert caught.value.path == "sources[0].spans[1].relations[0].target"


def test_a_bad_date_error_names_the_value_and_the_rule(tmp_path: Path) -> None:
    data = corpus_data()
    data["sources"][0]["retrieved_at"] = "2026-13-01"
    with pytest.raises(CorpusError) as caught:
        load_corpus(write(tmp_path, "corpus.json", data))
    assert caught.value.found == "'2026-13-01'"
    assert "YYYY-MM-DD" in caught.value.rule


def test_parse_date_accepts_only_padded_iso_calendar_dates() -> None:
    assert parse_date("2026-02-28") == dt.date(2026, 2, 28)
    for bad in ("2026-02-30", "2026-13-01", "2026-1-5", "2026-1-05", "20260105", " 2026-01-05", 20260105):
        with pytest.raises(CorpusError) as caught:
            parse_date(bad, "here")  # type: ignore[arg-type]
        assert caught.value.path == "here"


@pytest.mark.parametrize("bad", ["2026-W01-1", "20260105XX"])
def test_parse_date_refuses_ten_character_strings_that_are_not_yyyy_mm_dd(bad: str) -> None:
    with pytest.raises(CorpusError):
        parse_date(bad, "here")


# -- sidecar corruption cases -------------------------------------------------------------------


def _needs_later(data: Data) -> None:
    data["decisions"][0]["needs"] = ["d-2"]


def _supersedes_later(data: Data) -> None:
    data["decisions"][0]["supersedes"] = "d-2"


SIDECAR_CASES = [
    ("decision_needs_a_later_decision", _needs_later, "decisions[0].needs[0]"),
    ("decision_supersedes_a_later_decision", _supersedes_later, "decisions[0].supersedes"),
    (
        "decision_produces_an_unknown_entity",
        _set(["decisions", 1, "produces"], ["Shard Map", "Tenant Router"]),
        "decisions[1].produces[1]",
    ),
    ("decision_rests_on_an_unknown_span", _set(["decisions", 0, "rests_on"], ["zz-1"]), "decisions[0].rests_on[0]"),
    ("decision_cites_an_unknown_source", _set(["decisions", 0, "cites"], ["nope"]), "decisions[0].cites[0]"),
    ("decision_unknown_assumption", _set(["decisions", 0, "assumptions"], ["nope"]), "decisions[0].assumptions[0]"),
    ("decision_unknown_field", _set(["decisions", 0, "owner"], "me"), "decisions[0].owner"),
    ("decision_missing_field", _delete(["decisions", 1, "supersedes"]), "decisions[1].supersedes"),
    (
        "assumption_unknown_span",
        _set(["assumptions", 0, "supported_by_spans"], ["x"]),
        "assumptions[0].supported_by_spans[0]",
    ),
    # The engine's sidecar has no scenario field: the demo's break block is the demo's own file now.
    (
        "a_break_block_is_an_unknown_field",
        _set(["break"], {"assumption": "linear", "evidence_text": "They did not.", "source": "chat"}),
        "$.break",
    ),
]


@pytest.mark.parametrize(("mutate", "path"), [c[1:] for c in SIDECAR_CASES], ids=[c[0] for c in SIDECAR_CASES])
def test_a_corrupt_sidecar_is_refused_with_a_path(tmp_path: Path, mutate: Callable[[Data], None], path: str) -> None:
    corpus = load_corpus(write(tmp_path, "corpus.json", corpus_data()))
    data = sidecar_data()
    mutate(data)
    with pytest.raises(CorpusError) as caught:
        load_sidecar(write(tmp_path, "sidecar.json", data), corpus)
    assert caught.value.path == path


def test_a_decision_may_need_itself_only_through_an_earlier_key(tmp_path: Path) -> None:
    corpus = load_corpus(write(tmp_path, "corpus.json", corpus_data()))
    data = sidecar_data()
    data["decisions"][0]["needs"] = ["d-1"]
    with pytest.raises(CorpusError) as caught:
        load_sidecar(write(tmp_path, "sidecar.json", data), corpus)
    assert caught.value.path == "decisions[0].needs[0]"


# -- the bundled demo corpus --------------------------------------------------------------------


def test_the_bundled_demo_corpus_and_sidecar_load() -> None:
    corpus = load_corpus(CORPUS_PATH)
    sidecar = load_sidecar(SIDECAR_PATH, corpus)
    assert len(corpus.sources) >= 14
    assert len(corpus.spans()) >= 70
    assert sidecar.decisions
    assert sidecar.assumptions


def test_every_demo_source_has_an_origin_and_an_iso_date_or_null_exactly_once() -> None:
    corpus = load_corpus(CORPUS_PATH)
    for source in corpus.sources:
        assert source.origin.strip()
        if source.retrieved_at is not None:
            assert dt.date.fromisoformat(source.retrieved_at).isoformat() == source.retrieved_at
    assert sum(1 for source in corpus.sources if source.retrieved_at is None) == 1


def test_the_demo_corpus_holds_spans_that_assert_nothing() -> None:
    corpus = load_corpus(CORPUS_PATH)
    reasons = {drop_reason(span.text) for _, span in corpus.spans()}
    assert None in reasons
    assert len(reasons - {None}) >= 3  # several kinds of non-asserting span, not one

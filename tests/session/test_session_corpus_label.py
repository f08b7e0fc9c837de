"""The manifest's ``corpus`` field is a label any corpus can use, bounded and printable (session-v3 S13)."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_helpers import listing, manifest_doc

from contextmesh.core.errors import SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.layout import MAX_CORPUS_LABEL, corpus_label_problem
from contextmesh.session.session import Session


def _session(corpus: str | None) -> Session:
    graph = ContextGraph()
    resolver = Resolver()
    node = graph.add_node("entity", "Water Meter", attrs={"canonical": "Water Meter", "aliases": []}, provenance=None)
    resolver.register(node.id, "Water Meter", [])
    return Session(graph, resolver, corpus=corpus, policy="never")


@pytest.mark.parametrize("label", ["water-utility docs", "contextmesh.demo", "Wasserwerk · Ü", "x" * MAX_CORPUS_LABEL])
def test_any_corpus_label_is_written_and_read_back(tmp_path: Path, label: str) -> None:
    Session.create(tmp_path / "s", _session(label))
    _, doc = manifest_doc(tmp_path / "s")
    assert doc["corpus"] == label
    assert Session.load(tmp_path / "s").corpus == label


def test_no_label_is_null(tmp_path: Path) -> None:
    Session.create(tmp_path / "s", _session(None))
    assert manifest_doc(tmp_path / "s")[1]["corpus"] is None
    assert Session.load(tmp_path / "s").corpus is None


@pytest.mark.parametrize(
    ("label", "found"),
    [
        ("", "a label of 0 characters"),
        ("x" * (MAX_CORPUS_LABEL + 1), f"a label of {MAX_CORPUS_LABEL + 1} characters"),
        ("water\ndocs", "'water\\ndocs'"),
        ("water\u200bdocs", "'water\\u200bdocs'"),
        (" water", "' water'"),
        ("water ", "'water '"),
        ("water\u2028docs", "'water\\u2028docs'"),
    ],
)
def test_a_bad_label_is_refused_before_anything_is_written(tmp_path: Path, label: str, found: str) -> None:
    with pytest.raises(SnapshotError) as caught:
        Session.create(tmp_path / "s", _session(label))
    assert caught.value.path == "corpus"
    assert caught.value.found == found
    assert "1 to 200 printable characters" in caught.value.rule
    assert not (tmp_path / "s").exists()  # the save left the target as it found it


def test_a_label_that_is_not_text_is_named() -> None:
    assert corpus_label_problem(42) == "42"
    assert corpus_label_problem(["a"]) == "['a']"
    assert corpus_label_problem(None) is None


def test_the_rule_holds_in_an_existing_empty_directory_too(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    with pytest.raises(SnapshotError):
        Session.create(tmp_path / "s", _session("tab\there"))
    assert listing(tmp_path / "s") == []

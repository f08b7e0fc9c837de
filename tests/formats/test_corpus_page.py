"""docs/formats/corpus-v1.md: its examples load, and every field its tables list is one the loaders require."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from contextmesh.knowledge.corpus import CorpusError, load_corpus, load_sidecar

PAGE = Path(__file__).resolve().parents[2] / "docs" / "formats" / "corpus-v1.md"
_EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n~~~~json\n(.*?)\n~~~~\n", re.DOTALL)


def _examples() -> dict[str, str]:
    return dict(_EXAMPLE.findall(PAGE.read_text(encoding="utf-8")))


def _table_fields(heading: str) -> list[str]:
    """The back-ticked first cells of the first table after the line holding ``heading``."""
    text = PAGE.read_text(encoding="utf-8")
    rest = text[text.index(heading) :]
    table = re.search(r"\n(\|.*?)\n\n", rest, re.DOTALL)
    assert table is not None
    return re.findall(r"^\| `([a-z_]+)` \|", table.group(1), re.MULTILINE)


@pytest.fixture
def written(tmp_path: Path) -> tuple[Path, Path]:
    files = _examples()
    assert set(files) == {"corpus.json", "sidecar.json"}
    for name, body in files.items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    return tmp_path / "corpus.json", tmp_path / "sidecar.json"


def test_the_examples_load_as_the_page_says(written: tuple[Path, Path]) -> None:
    corpus_path, sidecar_path = written
    corpus = load_corpus(corpus_path)
    assert [e.name for e in corpus.entities] == ["Quarry Lane Pump Station", "Brackenhill Reservoir"]
    assert [(s.key, span.key) for s, span in corpus.spans()] == [
        ("capacity-2025", "cap25-1"),
        ("postmortem-2304", "pm-1"),
    ]
    assert corpus.sources[1].retrieved_at is None
    sidecar = load_sidecar(sidecar_path, corpus)
    assert [a.key for a in sidecar.assumptions] == ["one-pump-enough"]
    assert [d.key for d in sidecar.decisions] == ["night-schedule"]


@pytest.mark.parametrize(
    ("heading", "where"),
    [
        ("An object with exactly these fields", lambda d: d),
        ("An **entity** object", lambda d: d["entities"][0]),
        ("A **source** object", lambda d: d["sources"][0]),
        ("A **span** object", lambda d: d["sources"][0]["spans"][0]),
    ],
)
def test_every_corpus_field_the_page_lists_is_required(written: tuple[Path, Path], heading: str, where: object) -> None:
    corpus_path, _ = written
    fields = _table_fields(heading)
    assert fields
    pristine = corpus_path.read_text()
    for name in fields:
        data = json.loads(pristine)
        del where(data)[name]  # type: ignore[operator]
        corpus_path.write_text(json.dumps(data))
        with pytest.raises(CorpusError) as caught:
            load_corpus(corpus_path)
        assert caught.value.path.endswith(name)


@pytest.mark.parametrize(
    ("heading", "key"),
    [("An **assumption** object", "assumptions"), ("A **decision** object", "decisions")],
)
def test_every_sidecar_field_the_page_lists_is_required(written: tuple[Path, Path], heading: str, key: str) -> None:
    corpus_path, sidecar_path = written
    corpus = load_corpus(corpus_path)
    fields = _table_fields(heading)
    assert fields
    pristine = sidecar_path.read_text()
    for name in fields:
        data = json.loads(pristine)
        del data[key][0][name]
        sidecar_path.write_text(json.dumps(data))
        with pytest.raises(CorpusError) as caught:
            load_sidecar(sidecar_path, corpus)
        assert caught.value.path == f"{key}[0].{name}"


def test_an_unknown_reference_is_refused_at_its_place(written: tuple[Path, Path]) -> None:
    corpus_path, sidecar_path = written
    data = json.loads(sidecar_path.read_text())
    data["decisions"][0]["rests_on"] = ["cap25-1", "no-such-span"]
    sidecar_path.write_text(json.dumps(data))
    with pytest.raises(CorpusError, match="it must name a span key") as caught:
        load_sidecar(sidecar_path, load_corpus(corpus_path))
    assert caught.value.path == "decisions[0].rests_on[1]"

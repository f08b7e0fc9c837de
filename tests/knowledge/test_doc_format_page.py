"""docs/formats/documents.md: its examples form a folder that reads as the page says, and its tables match the code."""

from __future__ import annotations

import re
from pathlib import Path

from contextmesh.core.canonical import loads
from contextmesh.knowledge.candidates import suggest_entities
from contextmesh.knowledge.corpus import Corpus, EntitySpec, Relation
from contextmesh.knowledge.entities_file import parse_entities
from contextmesh.knowledge.folder import SIDECAR_NAMES, read_documents, read_folder
from contextmesh.knowledge.front_matter import FRONT_MATTER_KEYS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "formats" / "documents.md"
_EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n~~~~\w+\n(.*?)\n~~~~\n", re.DOTALL)


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def examples() -> dict[str, str]:
    return {name: body + "\n" for name, body in _EXAMPLE.findall(page())}


def section(title: str) -> str:
    text = re.sub(r"~~~~\w+\n.*?\n~~~~\n", "", page(), flags=re.DOTALL)  # examples hold headings of their own
    start = text.index(title)
    following = re.search(r"\n## ", text[start + len(title) :])
    return text[start : start + len(title) + following.start()] if following else text[start:]


def table_first_column(text: str, after: str) -> list[str]:
    block = text[text.index(after) :].split("\n\n", 1)[0]  # the table ends at the first blank line
    return re.findall(r"^\| `([^`]+)` \|", block, re.MULTILINE)


def folder(tmp_path: Path) -> Path:
    for name, body in examples().items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    return tmp_path


def span(corpus: Corpus, start: str) -> str:
    return next(s.key for _, s in corpus.spans() if s.text.startswith(start))


def test_the_page_has_its_examples() -> None:
    assert set(examples()) == {
        "plans/capacity-2026.md",
        "plans/capacity-2025.md",
        "postmortems/gs2-lost-pass.md",
        "entities.json",
    }


def test_the_example_folder_reads_without_a_warning_and_with_the_relations_the_page_names(tmp_path: Path) -> None:
    corpus, warnings = read_folder([folder(tmp_path)])
    assert warnings == []
    relations = {s.key: s.relations for _, s in corpus.spans() if s.relations}
    assert relations == {
        span(corpus, "This plan replaces"): (
            Relation("supersedes", span(corpus, "The Kiruna Ground Station supports nine")),
        ),
        span(corpus, "The capacity plan's figure"): (
            Relation("cites", span(corpus, "The Kiruna Ground Station supports fourteen passes per day on GS-2 after")),
        ),
        span(corpus, "The plan's table"): (Relation("cites", span(corpus, "Antenna: GS-2; Station: Kiruna")),),
    }
    source = next(s for s in corpus.sources if s.key == "plans/capacity-2026.md")
    assert (source.title, source.origin, source.retrieved_at) == (
        "Ground network capacity plan 2026",
        "wiki:plans/capacity-2026",
        "2026-01-09",
    )
    postmortem = next(s for s in corpus.sources if s.key == "postmortems/gs2-lost-pass.md")
    assert (postmortem.title, postmortem.origin, postmortem.retrieved_at) == (
        "Lost pass on GS-2",
        "postmortems/gs2-lost-pass.md",
        None,
    )
    assert corpus.entities[:2] == (
        EntitySpec("Kiruna Ground Station", ("KGS", "the Kiruna station")),
        EntitySpec("Svalbard Ground Station", ()),
    )


def test_the_entities_example_loads() -> None:
    entities = parse_entities("entities.json", examples()["entities.json"].encode())
    assert entities.ignore == ("Capacity Plan",)


def test_the_front_matter_table_names_exactly_the_keys_the_reader_allows() -> None:
    assert tuple(table_first_column(section("## 4. Front matter"), "| Key |")) == FRONT_MATTER_KEYS


def test_the_sidecar_names_and_the_candidate_fields_match_the_code(tmp_path: Path) -> None:
    for name in SIDECAR_NAMES:
        assert f"`{name}`" in section("## 2. The folder")
    read = read_documents([folder(tmp_path / "docs")])
    _, sidecar = suggest_entities(read.documents, tmp_path / "entities.json", registered=read.registered)
    fields = table_first_column(section("### 8.4 Suggestions"), "| Field |")
    for row in loads(sidecar.read_bytes())["candidates"]:
        assert sorted(row) == sorted(fields)  # written with sorted keys

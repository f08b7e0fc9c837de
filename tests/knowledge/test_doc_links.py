"""Links between documents become relations on the linking sentence; anything inexact is a warning, never a guess."""

from __future__ import annotations

from pathlib import Path

from contextmesh.knowledge.corpus import Corpus, Relation
from contextmesh.knowledge.documents import ReadWarning
from contextmesh.knowledge.folder import read_folder

DATA = Path(__file__).resolve().parents[1] / "data" / "documents"

PLAN = """# Capacity plan

Intro.

The station supports fourteen passes per day on the main antenna.
The spare antenna adds six passes per day when it is staffed.

## Pumps

Heading text is short.

The pump house holds two pumps that were serviced in March.
Each pump moves forty litres per second at full speed.

## Pumps

The second pumps section repeats a heading that was used before.
"""


def write(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def read(tmp_path: Path, files: dict[str, str]) -> tuple[Corpus, list[ReadWarning]]:
    return read_folder([write(tmp_path, files)])


def span_of(corpus: Corpus, text: str) -> str:
    return next(span.key for _, span in corpus.spans() if span.text.startswith(text))


def relations_of(corpus: Corpus, text: str) -> tuple[Relation, ...]:
    return next(span.relations for _, span in corpus.spans() if span.text.startswith(text))


def linked(tmp_path: Path, link: str) -> tuple[Corpus, list[ReadWarning]]:
    note = f"The review of the station found that {link} was right about everything.\n"
    return read(tmp_path, {"plan.md": PLAN, "ops/note.md": note})


def test_a_plain_link_cites_the_targets_first_claim(tmp_path: Path) -> None:
    corpus, warnings = linked(tmp_path, "[the plan](../plan.md)")
    assert warnings == []
    assert relations_of(corpus, "The review") == (Relation("cites", span_of(corpus, "The station supports")),)


def test_link_titles_name_supersedes_and_contradicts(tmp_path: Path) -> None:
    corpus, warnings = read(
        tmp_path,
        {
            "plan.md": PLAN,
            "new.md": 'The new plan replaces [the old one](plan.md "supersedes") for the whole network.\n\n'
            'The staffing note says [the spare](plan.md#:~:text=spare%20antenna "Contradicts") is never staffed.\n',
        },
    )
    assert warnings == []
    assert relations_of(corpus, "The new plan") == (Relation("supersedes", span_of(corpus, "The station supports")),)
    assert relations_of(corpus, "The staffing note") == (Relation("contradicts", span_of(corpus, "The spare antenna")),)


def test_a_heading_fragment_picks_the_first_claim_of_that_section_and_repeats_are_numbered(tmp_path: Path) -> None:
    corpus, warnings = linked(tmp_path, "[the pumps](../plan.md#pumps) and [again](../plan.md#pumps-1)")
    assert warnings == []
    assert relations_of(corpus, "The review") == (
        Relation("cites", span_of(corpus, "The pump house")),
        Relation("cites", span_of(corpus, "The second pumps section")),
    )


def test_a_text_fragment_picks_the_one_sentence_holding_it(tmp_path: Path) -> None:
    corpus, warnings = linked(tmp_path, "[the rate](../plan.md#:~:text=FORTY%20%20litres)")
    assert warnings == []
    assert relations_of(corpus, "The review") == (Relation("cites", span_of(corpus, "Each pump moves")),)


def test_a_text_fragment_with_a_range_prefix_and_suffix(tmp_path: Path) -> None:
    fragment = "passes-,per%20day,-when"  # prefix "passes", start "per day", suffix "when": the second sentence only
    corpus, warnings = linked(tmp_path, f"[x](../plan.md#:~:text={fragment})")
    assert warnings == []
    assert relations_of(corpus, "The review") == (Relation("cites", span_of(corpus, "The spare antenna")),)
    corpus, warnings = linked(tmp_path, "[x](../plan.md#:~:text=pump%20house,serviced)")
    assert relations_of(corpus, "The review") == (Relation("cites", span_of(corpus, "The pump house")),)


def test_a_text_fragment_inside_a_section_looks_only_there(tmp_path: Path) -> None:
    corpus, warnings = linked(tmp_path, "[x](../plan.md#pumps:~:text=passes)")
    assert relations_of(corpus, "The review") == ()
    assert [w.message for w in warnings] == [
        "the text 'passes' matches no sentence of plan.md#pumps; a text fragment must match exactly one; no relation"
    ]


def test_an_ambiguous_text_fragment_makes_no_relation(tmp_path: Path) -> None:
    corpus, warnings = linked(tmp_path, "[x](../plan.md#:~:text=passes%20per%20day)")
    assert relations_of(corpus, "The review") == ()
    assert [str(w) for w in warnings] == [
        "ops/note.md:1: the text 'passes per day' matches sentences on lines 5 and 6 (and maybe more) of plan.md; "
        "a text fragment must match exactly one; no relation"
    ]


def test_a_missing_document_or_heading_is_a_warning_with_file_and_line(tmp_path: Path) -> None:
    corpus, warnings = read(
        tmp_path,
        {
            "plan.md": PLAN,
            "ops/note.md": "First line of the note is here.\n\n"
            "The plan says [this](../nothing.md) and [that](../Plan.md) are settled for the year.\n\n"
            "The section [pumps](../plan.md#pump) was read twice by the reviewers.\n",
        },
    )
    assert all(span.relations == () for _, span in corpus.spans())
    assert [str(w) for w in warnings] == [
        "ops/note.md:3: the link to '../nothing.md' names no document of this folder; no relation",
        "ops/note.md:3: the link to '../Plan.md' names no document of this folder (did you mean 'plan.md'? "
        "names are case-sensitive); no relation",
        "ops/note.md:5: plan.md has no heading #pump (did you mean #pumps?); no relation",
    ]


def test_links_out_of_the_folder_to_itself_and_with_a_misspelt_title(tmp_path: Path) -> None:
    corpus, warnings = read(
        tmp_path,
        {
            "plan.md": PLAN,
            "note.md": "# Notes\n\nThe note points [out](../elsewhere.md) of the folder for the record.\n\n"
            "This sentence links [to itself](#:~:text=links%20to%20itself) for no reason at all.\n\n"
            'The plan [replaces](plan.md "supercedes") the older one in every respect.\n\n'
            'The plan [says so](plan.md "see the plan") in its introduction and again later.\n',
        },
    )
    assert [str(w) for w in warnings] == [
        "note.md:3: the link to '../elsewhere.md' points outside the folder; no relation",
        "note.md:5: the link points at its own sentence; no relation",
        "note.md:7: the link title 'supercedes' is not a relation; did you mean 'supersedes'? (no relation made)",
        "note.md:9: the link title 'see the plan' is not one of cites, supersedes, contradicts; "
        "the link is read as cites",
    ]
    assert relations_of(corpus, "The plan says so") == (Relation("cites", span_of(corpus, "The station supports")),)
    assert relations_of(corpus, "The plan replaces") == ()


def test_external_links_images_and_other_files_are_just_text(tmp_path: Path) -> None:
    corpus, warnings = linked(
        tmp_path,
        "[the vendor](https://vendor.example/plan.md), [a picture](../pump.png) and [mail](mailto:a@b.example)",
    )
    assert warnings == []
    assert relations_of(corpus, "The review") == ()


def test_a_link_from_a_sentence_that_is_no_claim_is_kept_with_a_warning(tmp_path: Path) -> None:
    corpus, warnings = read(tmp_path, {"plan.md": PLAN, "note.md": "- See [the plan](plan.md)\n"})
    assert relations_of(corpus, "See the plan") == (Relation("cites", span_of(corpus, "The station supports")),)
    assert [str(w) for w in warnings] == [
        "note.md:1: the sentence holding this link is not a claim (has 3 words, fewer than 6); LINK will drop it"
    ]


def test_a_document_without_a_claim_cannot_be_cited(tmp_path: Path) -> None:
    _, warnings = read(
        tmp_path,
        {
            "empty.md": "# Only a heading\n\nShort.\n",
            "note.md": PLAN.replace("Intro.", "See [it](empty.md) now, since it was written for this station."),
        },
    )
    assert [str(w) for w in warnings] == ["note.md:3: empty.md holds no claim to point at; no relation"]


def test_a_link_in_a_heading_is_no_relation(tmp_path: Path) -> None:
    _, warnings = read(
        tmp_path, {"plan.md": PLAN, "note.md": "# See [the plan](plan.md)\n\nText of the note is here.\n"}
    )
    assert [str(w) for w in warnings] == ["note.md:1: a link in a heading is not a relation"]


def test_the_fixture_folders_resolve_every_link(tmp_path: Path) -> None:
    corpus, warnings = read_folder([DATA / "clinicallab"])
    assert warnings == []
    assert relations_of(corpus, "The vendor's note says") == (
        Relation("contradicts", span_of(corpus, "Carrier speed within the rated range cannot damage samples")),
    )
    assert relations_of(corpus, "The Halden HA-400 analyzer reported") == (
        Relation("cites", span_of(corpus, "A specimen is rejected when")),
    )
    corpus, warnings = read_folder([DATA / "groundstation"])
    assert warnings == []
    assert relations_of(corpus, "This plan replaces the 2025 plan") == (
        Relation("supersedes", span_of(corpus, "The Kiruna Ground Station supports nine passes")),
    )
    assert relations_of(corpus, "The design note describes") == (
        Relation("cites", span_of(corpus, "Elements older than 48 hours")),
    )

"""Entity candidates, the entities file and their fold into the corpus's entities: precision before recall."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextmesh.core.canonical import loads
from contextmesh.core.errors import InputError
from contextmesh.knowledge.acronyms import acronym_of, find_definitions
from contextmesh.knowledge.candidates import Candidate, Discovery, discover, fold_entities, suggest_entities
from contextmesh.knowledge.corpus import EntitySpec
from contextmesh.knowledge.decoding import DocumentError
from contextmesh.knowledge.documents import Document, read_document
from contextmesh.knowledge.entities_file import EntitiesFile, entities_file_bytes, parse_entities
from contextmesh.knowledge.folder import read_documents, read_folder
from contextmesh.knowledge.pipeline import build

DATA = Path(__file__).resolve().parents[1] / "data" / "documents"


def docs(*texts: str) -> list[Document]:
    return [read_document(f"d{i}.md", text.encode()) for i, text in enumerate(texts)]


def found(*texts: str) -> dict[str, Candidate]:
    return {c.name: c for c in discover(docs(*texts)).candidates}


def found_txt(text: str) -> dict[str, Candidate]:
    return {c.name: c for c in discover([read_document("d.txt", text.encode())]).candidates}


def admitted(*texts: str, registered: EntitiesFile | None = None) -> list[EntitySpec]:
    return list(fold_entities(discover(docs(*texts)), registered).entities)


# -- acronyms -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "The Supervisory Control and Data Acquisition (SCADA) system failed.",
            ("SCADA", "Supervisory Control and Data Acquisition"),
        ),
        (
            "SCADA (Supervisory Control and Data Acquisition) is old.",
            ("SCADA", "Supervisory Control and Data Acquisition"),
        ),
        ("The Write-Ahead Log (WAL) was off.", ("WAL", "Write-Ahead Log")),
        ("our service level objective (SLO) is 99.9 %.", ("SLO", "service level objective")),
        ("The low-noise amplifier (LNA) sits on the feed.", ("LNA", "low-noise amplifier")),
    ],
)
def test_an_acronym_defined_either_way_round(text: str, expected: tuple[str, str]) -> None:
    assert [(d.acronym, d.expansion) for d in find_definitions(text)] == [expected]


@pytest.mark.parametrize(
    "text", ["the new pump (LNA) was fine", "It failed (UTC) again", "See (AB) here", "a (SCADA, mostly)"]
)
def test_initials_that_do_not_line_up_define_nothing(text: str) -> None:
    assert find_definitions(text) == []


def test_what_counts_as_an_acronym() -> None:
    assert [acronym_of(t) for t in ("SCADA", "APIs", "GS2", "S3", "UTC", "ML", "NOTE", "IV", "Lna", "A")] == [
        "SCADA",
        "API",
        "GS2",
        None,
        None,
        None,
        None,
        None,
        None,
        None,
    ]


# -- discovery ------------------------------------------------------------------------------------


def test_capitalised_phrases_lose_sentence_openers_and_keep_connectors_inside() -> None:
    candidates = found(
        "Yesterday Kiruna Ground Station lost lock. However Svalbard Ground Station held it.\n\n"
        "The Bank of England and Alice and Bob agreed in March with Kiruna Ground Station."
    )
    assert candidates["Kiruna Ground Station"].count == 2
    assert "Svalbard Ground Station" in candidates and "However Svalbard Ground Station" not in candidates
    assert "Bank of England" in candidates
    assert not any(" and " in name for name in candidates)  # "Alice and Bob" is two names, not one
    assert not any("March" in name for name in candidates)


def test_a_word_capitalised_only_at_a_sentence_start_is_dropped_from_a_longer_run() -> None:
    candidates = found("Replacing Kiruna Ground Station took a day. The team praised Kiruna Ground Station.")
    assert candidates["Kiruna Ground Station"].count == 2
    assert "Replacing Kiruna Ground Station" not in candidates


def test_titles_and_headings_confirm_a_name_and_never_make_one_alone() -> None:
    text = (
        "---\ntitle: Root Cause Analysis Of Everything\n---\n# Action Items For Later\n\n"
        "| Owner Name | Due Date |\n|---|---|\n| Tomas Berg | soon |\n"
    )
    candidates = found(text)
    assert "Owner Name" not in candidates and "Due Date" not in candidates  # table headers are not read
    assert candidates["Cause Analysis Of Everything"].labels == candidates["Cause Analysis Of Everything"].count
    folded = fold_entities(discover(docs(text, text)))
    assert [e.name for e in folded.entities] == ["Tomas Berg"]
    held = {v.candidate.name: v.reason for v in folded.verdicts if v.status == "held"}
    assert held["Items For Later"] == "seen only in titles and headings"
    # Seen once in prose, and in the document's title and heading: admitted.
    assert admitted("---\ntitle: Reefer Yard safety\n---\n# Reefer Yard\n\nThe Reefer Yard holds 1,200 slots.\n") == [
        EntitySpec("Reefer Yard", ())
    ]
    # An identifier in a title is precise by its shape alone.
    assert admitted("---\ntitle: ADR-004 Twin lifts\n---\n# ADR-004: twin lifts\n\nWe lift two boxes.\n") == [
        EntitySpec("ADR-004", ())
    ]


def test_a_phrase_seen_once_is_admitted_beside_a_numbered_sibling() -> None:
    folded = fold_entities(
        discover(
            docs("Berth 3 is busy. The crane at Berth 3 works. Ships leave from Berth 5 at noon. Dock Seven opened.")
        )
    )
    verdicts = {v.candidate.name: (v.status, v.reason) for v in folded.verdicts}
    assert verdicts["Berth 5"] == ("admitted", "one of a numbered series with Berth 3")
    assert verdicts["Dock Seven"][0] == "held"  # no digit: no series


def test_plain_text_lines_that_end_no_sentence_are_read_line_by_line() -> None:
    letter = (
        "Harlow Port Authority\nOffice of the Harbour Master\n\nWe approve it.\n\n"
        "Yours sincerely,\nHarbour Master, Harlow Port Authority\n"
    )
    read = read_document("letter.txt", letter.encode())
    assert [u.text.strip() for u in read.units][:2] == ["Harlow Port Authority", "Office of the Harbour Master"]
    assert found_txt(letter)["Harbour Master"].count == 2
    wrapped = "The crane at Harlow Port\nAuthority works well.\n"
    assert [u.text for u in read_document("w.txt", wrapped.encode()).units] == [
        "The crane at Harlow Port Authority works well."
    ]


def test_code_spans_code_blocks_and_identifier_shapes() -> None:
    candidates = found(
        "The `pass_scheduler` job reads `config/antennas.yaml` and the PassPlanner class. Gain is 0.5 dB.\n\n"
        "```\nwindow_hours = make_window(24)\n```\n"
    )
    assert candidates["pass_scheduler"].kind == "identifier" and candidates["pass_scheduler"].prose == 1
    assert candidates["config/antennas.yaml"].kind == "identifier"
    assert candidates["PassPlanner"].kind == "identifier"
    assert candidates["window_hours"].prose == 0  # seen only in a code block
    assert "dB" not in candidates  # a unit, not an identifier


def test_counts_documents_and_first_sighting() -> None:
    candidates = found(
        "Nothing here.\n\nThe Core Laboratory opened.", "The Core Laboratory closed. The Core Laboratory won."
    )
    core = candidates["Core Laboratory"]
    assert (core.count, core.documents, core.first_seen) == (3, 2, "d0.md:3")


# -- folding --------------------------------------------------------------------------------------


def test_an_acronym_with_its_expansion_becomes_one_entity_with_an_alias() -> None:
    entities = admitted("The Laboratory Information System (LIS) prints labels. The LIS v2.1 label has the time.")
    assert entities == [EntitySpec("Laboratory Information System", ("LIS",))]


def test_an_acronym_defined_two_ways_is_held_back() -> None:
    folded = fold_entities(
        discover(docs("The Line Noise Analyzer (LNA) broke. The low-noise amplifier (LNA) did not. The LNA is fine."))
    )
    verdict = next(v for v in folded.verdicts if v.candidate.name == "LNA")
    assert (verdict.status, verdict.reason) == ("held", "defined two ways: Line Noise Analyzer; low-noise amplifier")
    assert all("LNA" not in e.aliases for e in folded.entities)


def test_once_is_not_enough_for_a_phrase_or_a_bare_acronym() -> None:
    assert admitted("The Core Laboratory opened. The QC passed.") == []
    assert admitted("The Core Laboratory opened. The Core Laboratory won. QC passed. QC failed.") == [
        EntitySpec("Core Laboratory", ()),
        EntitySpec("QC", ()),
    ]


def test_a_bare_acronym_the_resolver_reads_as_initials_is_left_to_it() -> None:
    folded = fold_entities(discover(docs("The Core Laboratory opened. The Core Laboratory won. CL passed. CL failed.")))
    assert [e.name for e in folded.entities] == ["Core Laboratory"]
    verdict = next(v for v in folded.verdicts if v.candidate.name == "CL")
    assert verdict.reason == "the resolver reads it as the initials of Core Laboratory"


def test_the_entities_file_comes_first_and_its_ignore_list_is_honoured() -> None:
    registered = EntitiesFile((EntitySpec("Ward Seven", ("Ward 7",)),), ("Core Laboratory",))
    entities = admitted(
        "Ward 7 is busy. The Core Laboratory opened. The Core Laboratory won. The Raj Patel note. Raj Patel agreed.",
        registered=registered,
    )
    assert entities == [EntitySpec("Ward Seven", ("Ward 7",)), EntitySpec("Raj Patel", ())]


def test_an_identifier_only_inside_a_longer_name_is_held_back() -> None:
    folded = fold_entities(discover(docs("The Halden HA-400 analyzer ran. The Halden HA-400 analyzer passed.")))
    assert [e.name for e in folded.entities] == ["Halden HA-400"]


def test_an_entity_the_resolver_would_refuse_is_held_back() -> None:
    def candidate(name: str, key: str) -> Candidate:
        return Candidate(name, key, "phrase", 2, 2, 2, 0, True, 1, "d0.md:1", (name,))

    # Two candidates whose names normalise alike: the scratch resolver refuses the second.
    folded = fold_entities(Discovery((candidate("Core Lab", "core lab"), candidate("core lab", "core lab 2")), {}))
    assert [e.name for e in folded.entities] == ["Core Lab"]
    assert folded.verdicts[1].status == "held" and "the resolver refuses it" in folded.verdicts[1].reason


def test_discovered_entities_are_sorted_by_name_whatever_the_document_order() -> None:
    one = "Zeta Station is up. Zeta Station is down."
    two = "Alpha Station is up. Alpha Station is down."
    assert admitted(one, two) == admitted(two, one) == [EntitySpec("Alpha Station", ()), EntitySpec("Zeta Station", ())]


def test_the_fixture_entities_a_person_would_list_and_no_merges() -> None:
    # Written before the fold was tuned: the things a reader of these documents would name.
    expected = {
        "groundstation": {
            "Kiruna Ground Station",
            "Svalbard Ground Station",
            "GS-2",
            "GS-1",
            "SV-1",
            "low-noise amplifier",
            "Acquisition of Signal",
            "pass_scheduler",
            "PassPlanner",
            "config/antennas.yaml",
            "require_fresh_elements",
            "Ingrid Halvorsen",
            "Tomas Berg",
        },
        "clinicallab": {
            "Core Laboratory",
            "Emergency Department",
            "Laboratory Information System",
            "Halden HA-400",
            "Ward 7",
            "Amara Osei",
            "Lena Fischer",
            "Raj Patel",
            "REJ_HEMOLYSIS",
            "QC",
        },
    }
    for domain, names in expected.items():
        corpus, _ = read_folder([DATA / domain])
        assert {e.name for e in corpus.entities} == names
        # no entity carries a surface of another real thing: aliases are registered ones or defined acronyms
        aliases = {e.name: e.aliases for e in corpus.entities if e.aliases}
        assert (
            aliases
            == {
                "groundstation": {
                    "Kiruna Ground Station": ("KGS", "the Kiruna station"),
                    "Ingrid Halvorsen": ("Dr. Halvorsen",),
                    "Acquisition of Signal": ("AOS",),
                    "low-noise amplifier": ("LNA",),
                },
                "clinicallab": {"Laboratory Information System": ("LIS",)},
            }[domain]
        )


def test_every_admitted_entity_is_mentioned_in_the_built_graph() -> None:
    for domain in ("groundstation", "clinicallab"):
        corpus, _ = read_folder([DATA / domain])
        result = build(corpus)
        pruned = {drop.item for drop in result.report.stage("PRUNE").drops}
        assert not any(item.startswith("entity:") for item in pruned), pruned


# -- the entities file ----------------------------------------------------------------------------


def test_the_entities_file_round_trips_one_entity_per_line() -> None:
    entities = (EntitySpec("Kiruna Ground Station", ("KGS",)), EntitySpec('Dr. Ünal "Ana"', ()))
    data = entities_file_bytes(entities, ["Action Items"])
    assert data.count(b"\n") == 5
    assert parse_entities("e.json", data) == EntitiesFile(entities, ("Action Items",))
    assert parse_entities("e.json", entities_file_bytes(())) == EntitiesFile((), ())
    assert parse_entities("e.json", b'{"entities": [{"name": "X Y"}]}') == EntitiesFile((EntitySpec("X Y", ()),), ())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"[]", "e.json: a list; an object is required"),
        (b'{"entities": [], "extra": 1}', "e.json.extra: an unknown field 'extra'"),
        (b'{"ignore": []}', "e.json.entities: nothing; the field 'entities' is required"),
        (b'{"entities": {}}', "e.json: entities: a dict; a list is required"),
        (b'{"entities": [{"name": "A", "name": "B"}]}', "the key 'name' twice"),
        (b'{"entities": [{"name": " "}]}', "e.json: entities[0].name: ' '; non-empty text is required"),
        (b'{"entities": [{"name": "\\u2014"}]}', "a name or alias has at least one word"),
        (b'{"entities": [{"name": "A", "aliases": "B"}]}', "e.json: entities[0].aliases: a str; a list of text"),
        (
            b'{"entities": [{"name": "Ward 7"}, {"name": "Ward Seven", "aliases": ["ward 7"]}]}',
            "e.json: entities[1].aliases[0]: the surface 'ward 7', which e.json: entities[0].name already gives "
            "to 'Ward 7'; a name or alias means one entity",
        ),
        (b'{"entities": [{"name": "A b"}, {"name": "A b"}]}', "the name 'A b' a second time"),
        (b'{"entities": [{"name": "Ward 7"}], "ignore": ["WARD 7"]}', "'WARD 7', a surface of the entity 'Ward 7'"),
        (b'{"entities": [{"name": "A", "kind": "x"}]}', "e.json: entities[0].kind: an unknown field 'kind'"),
        (b"{not json", "text that is not strict JSON"),
    ],
)
def test_a_bad_entities_file_is_refused_in_one_line(data: bytes, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_entities("e.json", data)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_an_oversized_entities_file_is_refused() -> None:
    with pytest.raises(DocumentError, match="an entities file is at most 1 MiB"):
        parse_entities("e.json", b" " * (1024 * 1024 + 1))


# -- suggestions ----------------------------------------------------------------------------------


def test_suggestions_are_an_editable_entities_file_and_a_candidate_list(tmp_path: Path) -> None:
    read = read_documents([DATA / "groundstation"])
    out, sidecar = suggest_entities(read.documents, tmp_path / "entities.json", registered=read.registered)
    suggested = parse_entities("entities.json", out.read_bytes())
    corpus, _ = read_folder([DATA / "groundstation"])
    assert suggested.entities == corpus.entities
    assert suggested.ignore == ("Capacity Plan",)
    listed = loads(sidecar.read_bytes())["candidates"]
    assert sidecar.name == "entities.candidates.json"
    by_name = {row["name"]: row for row in listed}
    assert by_name["GS-2"] | {"forms": None} == {
        "name": "GS-2",
        "kind": "identifier",
        "count": 16,  # 12 in sentences, 4 in titles and headings
        "documents": 6,
        "first_seen": "chat/2026-02-11-ops.txt:6",
        "forms": None,
        "status": "admitted",
        "entity": "GS-2",
        "reason": "an identifier written in prose",
    }
    assert by_name["window_hours"]["status"] == "held"
    assert by_name["Kiruna Ground Station"]["status"] == "registered"
    assert [row["count"] for row in listed] == sorted((row["count"] for row in listed), reverse=True)


def test_a_suggested_file_used_as_the_entities_file_changes_nothing(tmp_path: Path) -> None:
    read = read_documents([DATA / "clinicallab"])
    out, _ = suggest_entities(read.documents, tmp_path / "entities.json")
    with_file, _ = read_folder([DATA / "clinicallab"], entities=out)
    without, _ = read_folder([DATA / "clinicallab"])
    assert with_file == without


def test_suggestions_never_overwrite_unless_told(tmp_path: Path) -> None:
    documents = read_documents([DATA / "clinicallab"]).documents
    (tmp_path / "entities.json").write_text("my edits", encoding="utf-8")
    with pytest.raises(DocumentError, match="suggestions never overwrite a file unless told to"):
        suggest_entities(documents, tmp_path / "entities.json")
    assert (tmp_path / "entities.json").read_text(encoding="utf-8") == "my edits"
    suggest_entities(documents, tmp_path / "entities.json", overwrite=True)
    assert parse_entities("e", (tmp_path / "entities.json").read_bytes()).entities

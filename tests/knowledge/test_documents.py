"""One document into one source: spans per sentence with their paragraph, content keys, hostile input refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextmesh.core.errors import InputError
from contextmesh.knowledge.decoding import MAX_DOCUMENT_BYTES, MAX_LINE_CHARS, DocumentError
from contextmesh.knowledge.documents import MAX_BODY_CHARS, Document, read_document, span_key_prefix
from contextmesh.knowledge.extract import drop_reason

DATA = Path(__file__).resolve().parents[1] / "data" / "documents"
POSTMORTEM = DATA / "groundstation" / "postmortems" / "2026-02-gs2-lost-pass.md"

PARAGRAPH = (
    "The Kiruna Ground Station lost lock at 04:12 UTC. Dr. Okafor checked the feed, e.g. the horn and the\n"
    "waveguide. The low-noise amplifier measured 3.5 dB above its datasheet. The pass was lost."
)


def read(text: str, name: str = "notes/a.md") -> Document:
    return read_document(name, text.encode("utf-8"))


def texts(document: Document) -> list[str]:
    return [span.text for span in document.source.spans]


def keys(document: Document) -> list[str]:
    return [span.key for span in document.source.spans]


# -- spans ----------------------------------------------------------------------------------------


def test_every_sentence_is_a_span_and_its_body_is_the_rest_of_the_paragraph() -> None:
    document = read(PARAGRAPH + "\n\nAnother paragraph follows here.")
    assert texts(document) == [
        "The Kiruna Ground Station lost lock at 04:12 UTC.",
        "Dr. Okafor checked the feed, e.g. the horn and the waveguide.",
        "The low-noise amplifier measured 3.5 dB above its datasheet.",
        "The pass was lost.",
        "Another paragraph follows here.",
    ]
    middle = document.source.spans[2]
    assert middle.body == (
        "The Kiruna Ground Station lost lock at 04:12 UTC. Dr. Okafor checked the feed, e.g. the horn and the "
        "waveguide. The pass was lost."
    )
    assert drop_reason(middle.text) is None  # the fact in the paragraph's middle is a claim of its own
    assert document.source.spans[4].body == ""
    assert [info.line for info in document.spans] == [1, 1, 2, 2, 4]


def test_front_matter_gives_title_origin_and_date() -> None:
    document = read_document(POSTMORTEM.name, POSTMORTEM.read_bytes())
    assert document.source.title == "Postmortem: lost downlink pass on GS-2, 11 February 2026"
    assert document.source.origin == "wiki:ops/postmortems/2026-02-gs2-lost-pass"
    assert document.source.retrieved_at == "2026-02-14"
    assert document.source.key == POSTMORTEM.name


def test_without_front_matter_the_title_is_the_first_level_one_heading_then_the_file_name() -> None:
    with_heading = read("## Sub\n\nText here.\n\n# The real title\n\nMore text.", "ops/notes.md")
    assert (with_heading.source.title, with_heading.source.origin, with_heading.source.retrieved_at) == (
        "The real title",
        "ops/notes.md",
        None,
    )
    assert read("Just text.", "ops/notes-2026.txt").source.title == "notes-2026"


def test_headings_and_code_are_not_spans_but_code_is_kept() -> None:
    document = read("# Title\n\nA sentence here.\n\n```\nrun_job --now. It ran.\n```\n\n    indented code.\n")
    assert texts(document) == ["A sentence here."]
    assert [code for _, code in document.code] == ["run_job --now. It ran.", "indented code."]
    assert [(h.slug, h.level, h.line) for h in document.headings] == [("title", 1, 1)]


def test_list_items_end_with_a_full_stop_and_table_rows_read_header_by_cell() -> None:
    document = read(
        "- Replace the LNA on GS-2\n- Ends already.\n- Ends with a question?\n- Lead-in:\n\n"
        "| Antenna | Passes | Note |\n|---|---|---|\n| GS-2 | 14 | |\n| **GS-1** | 6 | S-band only |\n"
    )
    assert texts(document) == [
        "Replace the LNA on GS-2.",
        "Ends already.",
        "Ends with a question?",
        "Lead-in:",
        "Antenna: GS-2; Passes: 14.",
        "Antenna: GS-1; Passes: 6; Note: S-band only.",
    ]


def test_block_quotes_and_markup_are_read_as_their_text() -> None:
    document = read("> The plan *looked* normal. Nothing on the [dashboard](http://x) was `stale`.")
    assert texts(document) == ["The plan looked normal.", "Nothing on the dashboard was stale."]


def test_plain_text_is_not_markdown() -> None:
    document = read("A *star* and [a](b.md) stay as written.\n\n# Not a heading.", "chat.txt")
    assert texts(document) == ["A *star* and [a](b.md) stay as written.", "# Not a heading."]
    assert document.links == ()


def test_a_huge_paragraph_gives_each_span_a_bounded_window_of_neighbours() -> None:
    document = read(" ".join(f"Sentence number {i} is here." for i in range(500)))
    assert len(document.spans) == 500
    assert all(len(span.body) <= MAX_BODY_CHARS for span in document.source.spans)
    middle = document.source.spans[250]
    assert "Sentence number 249 is here." in middle.body and "Sentence number 251 is here." in middle.body
    assert "Sentence number 0 is here." not in middle.body


def test_heading_slugs_follow_github_and_repeat_with_numbers() -> None:
    document = read("# Pumps & Valves!\n\n## Next steps\n\n## Next steps\n\n## Étape 2\n")
    assert [h.slug for h in document.headings] == ["pumps--valves", "next-steps", "next-steps-1", "étape-2"]


# -- keys -----------------------------------------------------------------------------------------


def test_keys_are_stable_across_reads_and_derive_from_content_only() -> None:
    first, again = read(PARAGRAPH), read(PARAGRAPH)
    assert keys(first) == keys(again)
    assert all(key.startswith("notes/a.md#") for key in keys(first))
    reflowed = read(PARAGRAPH.replace("\n", " ").replace("lost lock", "lost  lock"))
    assert keys(reflowed) == keys(first)  # white space is not content


def test_an_edited_sentence_changes_its_own_key_only() -> None:
    other = "\n\nA second paragraph stays. It has two sentences."
    before = read(PARAGRAPH + other)
    after = read(PARAGRAPH.replace("3.5 dB", "4.0 dB") + other)
    changed = [i for i, (a, b) in enumerate(zip(keys(before), keys(after), strict=True)) if a != b]
    assert changed == [2]
    # the unchanged sentences of the edited paragraph keep their keys; their context moved with the edit
    assert before.source.spans[0].body != after.source.spans[0].body
    assert before.source.spans[4:] == after.source.spans[4:]


def test_moving_a_paragraph_keeps_every_key() -> None:
    one, two = "First paragraph sentence.", "Second paragraph sentence. And more."
    assert sorted(keys(read(f"{one}\n\n{two}"))) == sorted(keys(read(f"{two}\n\n{one}")))


def test_a_repeated_sentence_gets_an_occurrence_number() -> None:
    found = keys(read("It failed again.\n\nIt failed again.\n\nIt failed again."))
    assert found[1] == found[0] + ".2" and found[2] == found[0] + ".3"


def test_the_document_part_of_a_key_percent_encodes_white_space_percent_and_hash() -> None:
    assert span_key_prefix("ops/My Notes #3 100%.md") == "ops/My%20Notes%20%233%20100%25.md"
    assert span_key_prefix("ops/naïve.md") == "ops/naïve.md"


# -- hostile input --------------------------------------------------------------------------------


def refused(name: str, data: bytes) -> str:
    with pytest.raises(DocumentError) as caught:
        read_document(name, data)
    message = str(caught.value)
    assert "\n" not in message
    assert isinstance(caught.value, InputError) and caught.value.path.startswith(name)
    return message


def test_a_binary_file_is_refused_at_its_first_nul_byte() -> None:
    message = refused("img.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert message.startswith("img.md: byte 8: a NUL byte (a binary file)")


def test_invalid_utf8_is_refused_naming_the_byte_offset_and_line() -> None:
    message = refused("notes/latin1.md", "Line one.\nCaf\u00e9 open.".encode("latin-1"))
    assert message.startswith("notes/latin1.md: byte 13 (line 2): bytes that are not UTF-8 (e9)")


def test_a_utf16_file_is_refused_by_its_byte_order_mark() -> None:
    assert "UTF-16 byte-order mark" in refused("w.md", "Hello.".encode("utf-16"))


def test_a_control_character_is_refused_with_its_line() -> None:
    assert refused("c.md", b"ok\n\x1b[31mred\n").startswith("c.md:2: the control character '\\x1b'")


def test_a_50_megabyte_single_line_is_refused_by_size() -> None:
    message = refused("huge.md", b"a" * (50 * 1024 * 1024))
    assert (
        message
        == f"huge.md: more than {MAX_DOCUMENT_BYTES} bytes; a document is at most {MAX_DOCUMENT_BYTES} bytes (4 MiB)"
    )


def test_a_line_too_long_inside_the_size_bound_is_refused_with_its_line() -> None:
    data = b"Short line.\n" + b"x" * (MAX_LINE_CHARS + 1) + b"\n"
    assert refused("long.md", data).startswith(f"long.md:2: a line of more than {MAX_LINE_CHARS} characters")


def test_a_utf8_byte_order_mark_is_dropped() -> None:
    assert texts(read_document("bom.md", b"\xef\xbb\xbfA sentence with a mark.")) == ["A sentence with a mark."]


@pytest.mark.parametrize(
    ("text", "start", "fragment"),
    [
        ("---\ntitle: Never closed\n\nBody text.\n", "a.md:1:", "front matter that is never closed"),
        ("---\ntitle: One\ntitle: Two\n---\n", "a.md:3:", "the key 'title' a second time (first on line 2)"),
        ("---\ndate: 2026-02-30\n---\n", "a.md:2:", "the date '2026-02-30'; dates are ISO calendar dates"),
        ("---\ndate: 14/02/2026\n---\n", "a.md:2:", "the date '14/02/2026'"),
        ("---\ntitle: x\nauthor: Dana\n---\n", "a.md:3:", "an unknown front-matter key 'author'; allowed keys are"),
        ("---\ntitle: >\n  folded\n---\n", "a.md:2:", "front-matter values are plain text on one line"),
        ("---\n  indented: x\n---\n", "a.md:2:", "front-matter lines are 'key: value'"),
        ("---\ntitle:\n---\n", "a.md:2:", "the key 'title' with no value"),
        ('---\ntitle: "open\n---\n', "a.md:2:", "a quoted value ends with the quote it opens with"),
        ("---\ntitle: ''\n---\n", "a.md:2:", "an empty value"),
    ],
)
def test_bad_front_matter_is_refused_with_file_and_line(text: str, start: str, fragment: str) -> None:
    message = refused("a.md", text.encode())
    assert message.startswith(start) and fragment in message


def test_front_matter_values_may_be_quoted_and_contain_colons() -> None:
    document = read(
        "---\ntitle: 'Postmortem: pass lost'\norigin: https://wiki.example/x#y\n\ndate: \"2026-02-14\"\n---\nText."
    )
    assert (document.source.title, document.source.origin, document.source.retrieved_at) == (
        "Postmortem: pass lost",
        "https://wiki.example/x#y",
        "2026-02-14",
    )
    assert document.spans[0].line == 7


def test_a_file_that_is_no_document_is_refused() -> None:
    assert refused("report.pdf", b"%PDF-1.7").startswith("report.pdf: the suffix '.pdf'")

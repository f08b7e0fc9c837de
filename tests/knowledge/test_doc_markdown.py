"""Markdown reduced to blocks of plain text: the structure real documents use, and bounded work on hostile text."""

from __future__ import annotations

import pytest

from contextmesh.knowledge.blocks import Block, parse_blocks
from contextmesh.knowledge.inline import strip_inline


def blocks(text: str, *, markdown: bool = True) -> list[Block]:
    return parse_blocks(text.split("\n"), markdown=markdown).blocks


def kinds(text: str) -> list[tuple[str, str]]:
    return [(b.kind, b.text) for b in blocks(text)]


# -- blocks ---------------------------------------------------------------------------------------


def test_headings_atx_and_setext_with_their_levels_and_lines() -> None:
    found = blocks("# Title #\n\nIntro text.\n\nSection\n-------\n\n### Deep ###   \n\nOther\n=====")
    headings = [(b.text, b.level, b.line) for b in found if b.kind == "heading"]
    assert headings == [("Title", 1, 1), ("Section", 2, 5), ("Deep", 3, 8), ("Other", 1, 10)]
    assert ("paragraph", "Intro text.") in [(b.kind, b.text) for b in found]


def test_a_hash_without_a_space_is_text_and_a_thematic_break_ends_a_paragraph() -> None:
    assert kinds("#hashtag is text") == [("paragraph", "#hashtag is text")]
    assert kinds("one\n\n---\ntwo") == [("paragraph", "one"), ("paragraph", "two")]
    assert kinds("* * *\nafter") == [("paragraph", "after")]


def test_paragraph_lines_join_and_a_blank_line_ends_them() -> None:
    assert kinds("first line\nsecond line\n\nnext") == [("paragraph", "first line\nsecond line"), ("paragraph", "next")]


def test_list_items_are_paragraphs_of_their_own_with_continuations_and_task_boxes() -> None:
    text = "- one\n- [x] two\n  continues\n  - nested\n* star\n+ plus\n\n1. first\n2) second"
    assert kinds(text) == [
        ("item", "one"),
        ("item", "two\ncontinues"),
        ("item", "nested"),
        ("item", "star"),
        ("item", "plus"),
        ("item", "first"),
        ("item", "second"),
    ]


def test_an_ordered_item_interrupts_a_paragraph_only_when_it_starts_at_one() -> None:
    assert kinds("We counted\n2024. That year") == [("paragraph", "We counted\n2024. That year")]
    assert kinds("Steps\n1. Drain") == [("paragraph", "Steps"), ("item", "Drain")]


def test_block_quotes_nested_or_not_are_read_as_text() -> None:
    assert kinds("> quoted para\n> > deeper\n\nplain") == [("paragraph", "quoted para\ndeeper"), ("paragraph", "plain")]
    assert kinds("text\n> quote") == [("paragraph", "text"), ("paragraph", "quote")]


def test_fenced_code_is_code_with_its_info_and_is_never_a_paragraph() -> None:
    found = blocks("before\n```python\nx = 1\n# not a heading\n```\nafter")
    assert [(b.kind, b.text, b.info) for b in found] == [
        ("paragraph", "before", ""),
        ("code", "x = 1\n# not a heading", "python"),
        ("paragraph", "after", ""),
    ]
    tilde = blocks("~~~~\ncode ~~~\n~~~~\ntext")
    assert [(b.kind, b.text) for b in tilde] == [("code", "code ~~~"), ("paragraph", "text")]


def test_a_fence_never_closed_runs_to_the_end_and_is_noted() -> None:
    parsed = parse_blocks(["intro", "```", "code", "more code"])
    assert [(b.kind, b.text) for b in parsed.blocks] == [("paragraph", "intro"), ("code", "code\nmore code")]
    assert parsed.notes == [(2, "a code fence is never closed; the rest of the document is read as code")]


def test_indented_code_after_a_blank_line_but_not_inside_a_list() -> None:
    assert kinds("text\n\n    code line\n\nmore") == [
        ("paragraph", "text"),
        ("code", "code line"),
        ("paragraph", "more"),
    ]
    assert kinds("- item\n\n    still the list") == [("item", "item"), ("paragraph", "still the list")]


def test_a_table_gives_one_row_block_per_body_row_with_the_header() -> None:
    found = blocks("| Antenna | Band |\n|---|:-:|\n| GS-2 | X \\| S |\n| GS-1 |\n\nafter")
    rows = [(b.cells, b.header, b.line) for b in found if b.kind == "row"]
    assert rows == [(("GS-2", "X \\| S"), ("Antenna", "Band"), 3), (("GS-1", ""), ("Antenna", "Band"), 4)]
    assert found[-1].text == "after"


def test_a_pipe_without_a_delimiter_row_is_just_text() -> None:
    assert kinds("a | b\nnot a delimiter") == [("paragraph", "a | b\nnot a delimiter")]


def test_link_definitions_are_collected_and_comments_dropped() -> None:
    parsed = parse_blocks(['[Plan]: capacity.md "supersedes"', "", "<!-- hidden", "still hidden -->", "shown"])
    assert parsed.references == {"plan": ("capacity.md", "supersedes")}
    assert [(b.kind, b.text) for b in parsed.blocks] == [("paragraph", "shown")]


def test_a_footnote_definition_is_text_without_its_marker() -> None:
    assert kinds("Body text.[^1]\n\n[^1]: The footnote says more.") == [
        ("paragraph", "Body text.[^1]"),
        ("paragraph", "The footnote says more."),
    ]


def test_plain_text_has_paragraphs_and_items_only() -> None:
    text = "# not a heading\n| a | b |\n|---|---|\n\n- an item\n```\nnot code"
    assert kinds_text(text) == [
        ("paragraph", "# not a heading\n| a | b |\n|---|---|"),
        ("item", "an item\n```\nnot code"),
    ]


def kinds_text(text: str) -> list[tuple[str, str]]:
    return [(b.kind, b.text) for b in blocks(text, markdown=False)]


# -- inline ---------------------------------------------------------------------------------------


def test_emphasis_is_stripped_and_snake_case_survives() -> None:
    found = strip_inline("**Bold** and *it* and __init__ and _x_ but pump_schedule_v2 and 2 * 3 stay.")
    assert found.text == "Bold and it and init and x but pump_schedule_v2 and 2 * 3 stay."


def test_strikethrough_is_dropped_because_the_author_retracted_it() -> None:
    assert strip_inline("We will ~~drain~~ inspect it.").text == "We will  inspect it."


def test_code_spans_are_verbatim_and_recorded() -> None:
    found = strip_inline("Run `a *b* [c](d)` and ``x ` y`` now.")
    assert found.text == "Run a *b* [c](d) and x ` y now."
    assert [found.text[a:b] for a, b in found.code] == ["a *b* [c](d)", "x ` y"]
    assert found.links == ()


def test_links_keep_their_text_destination_and_title() -> None:
    found = strip_inline('See [the *plan*](plan.md#pumps "supersedes") and [x](<a b.md>).')
    assert found.text == "See the plan and x."
    assert [(found.text[link.start : link.end], link.destination, link.title) for link in found.links] == [
        ("the plan", "plan.md#pumps", "supersedes"),
        ("x", "a b.md", None),
    ]


def test_reference_links_full_collapsed_and_shortcut() -> None:
    references = {"plan": ("capacity.md", None)}
    found = strip_inline("[the plan][Plan], [plan][] and [Plan] but not [other].", references)
    assert found.text == "the plan, plan and Plan but not [other]."
    assert [link.destination for link in found.links] == ["capacity.md"] * 3


def test_images_keep_their_alt_text_and_make_no_link() -> None:
    found = strip_inline("A diagram ![pump layout](x.png) here.")
    assert found.text == "A diagram pump layout here."
    assert found.links == ()


def test_a_link_inside_a_link_leaves_the_outer_brackets_as_text() -> None:
    found = strip_inline("[a [b](x.md) c](y.md)")
    assert found.text == "[a b c](y.md)"
    assert [link.destination for link in found.links] == ["x.md"]


def test_html_autolinks_entities_comments_and_footnotes() -> None:
    found = strip_inline("A <b>bold</b> &amp; <https://a.example/x> &#1; note[^1] <!-- hidden --> a < b.")
    assert found.text == "A bold & https://a.example/x  note  a < b."  # &#1; is no character


def test_line_breaks_become_spaces_and_are_remembered() -> None:
    found = strip_inline("one\ntwo\\\nthree")
    assert found.text == "one two three"
    assert [found.line_offset(found.text.index(word)) for word in ("one", "two", "three")] == [0, 1, 2]


@pytest.mark.parametrize(
    "hostile",
    [
        "[" * 100_000,
        "]" * 100_000,
        "[](" * 33_000,
        "[a](" * 25_000,
        "` " * 50_000,
        "*a " * 33_000,
        "~~a " * 25_000,
        "<a " * 33_000,
        "<!-- " * 20_000,
        "&" * 100_000,
        "![" * 50_000,
        "[a][" * 25_000,
    ],
)
def test_hostile_inline_text_is_read_in_one_pass(hostile: str) -> None:
    found = strip_inline(hostile)
    assert len(found.text) <= len(hostile)  # finishing is the point: each case is quadratic when done naively


@pytest.mark.parametrize(
    "line",
    ["#" * 6 + " " * 99_990 + "x", "# a" + " " * 99_990 + "#", ">" * 100_000, "- " * 50_000, "`" * 100_000],
)
def test_hostile_lines_are_parsed_in_one_pass(line: str) -> None:
    assert parse_blocks([line, line]).blocks is not None

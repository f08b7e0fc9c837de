"""The block structure of a document: headings, paragraphs, list items, table rows and code.

:func:`parse_blocks` reads a document's lines (after its front matter) into :class:`Block` s,
keeping each block's first line number. In Markdown it understands:

* ATX headings (``#`` … ``######``) and setext headings (a paragraph underlined with ``===`` or
  ``---``); thematic breaks (``---``, ``***``, ``___``) end a paragraph;
* paragraphs (lines up to a blank line); list items (``-``, ``*``, ``+``, ``1.``, ``1)``; a task
  box ``[ ]``/``[x]`` dropped), each item a paragraph of its own, nested items too; an indented
  paragraph after a blank line inside a list is a paragraph of that list;
* block quotes (``>`` markers, nested or not, stripped; their content is read like any other);
* fenced code (``````` or ``~~~``, closed by a fence of the same character at least as long; a
  fence never closed runs to the end, as in CommonMark, and is reported) and indented code (four
  spaces, after a blank line, outside a list);
* GitHub tables: a header row, a delimiter row (``|---|:--:|``) with as many cells, then one
  :class:`Block` per body row with its cells and the header's;
* link reference definitions (``[label]: destination "title"``), collected for the inline pass and
  not text; HTML comment blocks (dropped); footnote definitions (``[^1]: text``, read as text).

Plain text (``markdown=False``) has only paragraphs and list items: no headings, code, tables,
quotes or markup, because a ``#`` or ``|`` in a ``.txt`` file is just a character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from contextmesh.knowledge.inline import normalize_label

__all__ = ["Block", "Blocks", "parse_blocks"]

_QUOTES = re.compile(r"(?: {0,3}>[ ]?)+")
_FENCE = re.compile(r"(\s*)(`{3,}|~{3,})(.*)")
_ATX = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_BREAK = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")
_ITEM = re.compile(r"(\s*)([-*+]|(\d{1,9})[.)])(?:[ \t]+(.*))?")
_TASK = re.compile(r"\[[ xX]\][ \t]+")
_DEFINITION = re.compile(
    r" {0,3}\[([^\]]{1,999})\]:[ \t]*(<[^<>\n]*>|\S+)(?:[ \t]+(\"[^\"]*\"|'[^']*'|\([^)]*\)))?[ \t]*"
)
_FOOTNOTE_DEFINITION = re.compile(r" {0,3}\[\^[^\]\s]{1,64}\]:[ \t]*(.*)")
_DELIMITER_CELL = re.compile(r"\s*:?-+:?\s*")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class Block:
    """One block: its kind, raw inline text, first line number and kind-specific parts.

    ``kind`` is ``heading`` (with ``level``), ``paragraph``, ``item``, ``row`` (with ``cells`` and
    the table's ``header``) or ``code`` (``text`` is the code, ``info`` the fence's info string).
    """

    kind: str
    text: str
    line: int
    level: int = 0
    cells: tuple[str, ...] = ()
    header: tuple[str, ...] = ()
    info: str = ""


@dataclass
class Blocks:
    """The blocks of a document, its link definitions and notes about what was odd in it."""

    blocks: list[Block] = field(default_factory=list)
    references: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    notes: list[tuple[int, str]] = field(default_factory=list)


def _indent(text: str) -> int:
    width = 0
    for char in text:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
    return width


def _heading_text(rest: str) -> str:
    """An ATX heading's text without its optional closing ``#`` run (a scan, not a backtracking pattern)."""
    content = rest.strip()
    bare = content.rstrip("#")
    if bare != content and (not bare or bare[-1] in " \t"):
        content = bare.strip()
    return content


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.strip() for cell in _CELL_SPLIT.split(body)]


def _is_delimiter_row(line: str, columns: int) -> bool:
    if "-" not in line:
        return False
    cells = _cells(line)
    return len(cells) == columns and all(_DELIMITER_CELL.fullmatch(cell) for cell in cells)


def _strip_quotes(lines: list[str], markdown: bool) -> list[tuple[str, bool]]:
    out = []
    for line in lines:
        match = _QUOTES.match(line) if markdown else None
        out.append((line, False) if match is None else (line[match.end() :], True))
    return out


class _Parser:
    def __init__(self, lines: list[str], first_line: int, markdown: bool) -> None:
        self.lines = _strip_quotes(lines, markdown)
        self.first_line = first_line
        self.markdown = markdown
        self.out = Blocks()
        self.para: list[str] = []
        self.para_line = 0
        self.para_kind = "paragraph"
        self.para_quoted = False
        self.list_open = False

    def number(self, index: int) -> int:
        return self.first_line + index

    def flush(self) -> None:
        if self.para:
            self.out.blocks.append(Block(self.para_kind, "\n".join(self.para), self.para_line))
        self.para = []

    def start(self, kind: str, text: str, index: int, quoted: bool) -> None:
        self.flush()
        self.para, self.para_kind, self.para_line, self.para_quoted = [text], kind, self.number(index), quoted

    def parse(self) -> Blocks:
        index = 0
        while index < len(self.lines):
            text, quoted = self.lines[index]
            if self.para and quoted != self.para_quoted:
                self.flush()
            index = self.markdown_line(index, text, quoted) if self.markdown else self.text_line(index, text, quoted)
        self.flush()
        return self.out

    def text_line(self, index: int, text: str, quoted: bool) -> int:
        if not text.strip():
            self.flush()
        elif not self.item(index, text, quoted):
            self.continue_paragraph(index, text, quoted)
        return index + 1

    def item(self, index: int, text: str, quoted: bool) -> bool:
        match = _ITEM.fullmatch(text)
        if match is None:
            return False
        number = match.group(3)
        if number is not None and number != "1" and self.para and self.para_kind == "paragraph":
            return False  # an ordered item interrupts a paragraph only when it starts at 1, as in CommonMark
        content = match.group(4) or ""
        task = _TASK.match(content)
        self.start("item", content[task.end() :] if task else content, index, quoted)
        self.list_open = True
        return True

    def continue_paragraph(self, index: int, text: str, quoted: bool) -> None:
        if self.para:
            self.para.append(text.strip())
            return
        blank_before = index > 0 and not self.lines[index - 1][0].strip()
        if blank_before and _indent(text) < 2:
            self.list_open = False
        self.start("paragraph", text.strip(), index, quoted)

    def markdown_line(self, index: int, text: str, quoted: bool) -> int:
        if not text.strip():
            self.flush()
            return index + 1
        fence = _FENCE.fullmatch(text)
        if fence is not None and not (fence.group(2)[0] == "`" and "`" in fence.group(3)):
            return self.code_fence(index, fence, quoted)
        if text.lstrip().startswith("<!--") and not self.para:
            return self.comment(index, text)
        if _indent(text) >= 4 and not self.para and not self.list_open:
            return self.indented_code(index)
        heading = _ATX.match(text)
        if heading is not None:
            self.flush()
            level, content = len(heading.group(1)), _heading_text(text[heading.end() :])
            self.out.blocks.append(Block("heading", content, self.number(index), level))
            self.list_open = False
            return index + 1
        setext = _SETEXT.fullmatch(text)
        if setext is not None and self.para and self.para_kind == "paragraph":
            level = 1 if setext.group(1)[0] == "=" else 2
            self.out.blocks.append(Block("heading", " ".join(self.para), self.para_line, level))
            self.para = []
            return index + 1
        if _BREAK.fullmatch(text) is not None:
            self.flush()
            self.list_open = False
            return index + 1
        if not self.para and self.definition(text):
            return index + 1
        footnote = _FOOTNOTE_DEFINITION.fullmatch(text)
        if footnote is not None:
            self.start("paragraph", footnote.group(1), index, quoted)
            return index + 1
        if self.item(index, text, quoted):
            return index + 1
        if not self.para and "|" in text:
            end = self.table(index, quoted)
            if end > index:
                return end
        self.continue_paragraph(index, text, quoted)
        return index + 1

    def definition(self, text: str) -> bool:
        match = _DEFINITION.fullmatch(text)
        if match is None or match.group(1).startswith("^"):
            return False
        destination = match.group(2)
        if destination.startswith("<"):
            destination = destination[1:-1]
        title = match.group(3)[1:-1] if match.group(3) else None
        self.out.references.setdefault(normalize_label(match.group(1)), (destination, title))
        return True

    def table(self, index: int, quoted: bool) -> int:
        header = _cells(self.lines[index][0])
        following = index + 1
        if following >= len(self.lines) or not _is_delimiter_row(self.lines[following][0], len(header)):
            return index
        self.flush()
        row = following + 1
        while row < len(self.lines):
            text, row_quoted = self.lines[row]
            if not text.strip() or "|" not in text or row_quoted != quoted:
                break
            cells = (_cells(text) + [""] * len(header))[: len(header)]
            self.out.blocks.append(Block("row", text, self.number(row), cells=tuple(cells), header=tuple(header)))
            row += 1
        self.list_open = False
        return row

    def code_fence(self, index: int, fence: re.Match[str], quoted: bool) -> int:
        self.flush()
        marker = fence.group(2)
        closer = re.compile(r"\s*" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}\s*")
        body: list[str] = []
        row = index + 1
        while row < len(self.lines):
            text, row_quoted = self.lines[row]
            if row_quoted != quoted or closer.fullmatch(text):
                break
            body.append(text)
            row += 1
        else:
            self.out.notes.append(
                (self.number(index), "a code fence is never closed; the rest of the document is read as code")
            )
        self.out.blocks.append(Block("code", "\n".join(body), self.number(index), info=fence.group(3).strip()))
        closed = row < len(self.lines) and self.lines[row][1] == quoted
        return row + 1 if closed else row

    def comment(self, index: int, text: str) -> int:
        self.flush()
        row, rest = index, text.split("<!--", 1)[1]
        while "-->" not in rest:
            row += 1
            if row >= len(self.lines):
                self.out.notes.append((self.number(index), "an HTML comment is never closed; the rest is ignored"))
                return row
            rest = self.lines[row][0]
        return row + 1

    def indented_code(self, index: int) -> int:
        body: list[str] = []
        row = index
        while row < len(self.lines) and (_indent(self.lines[row][0]) >= 4 or not self.lines[row][0].strip()):
            body.append(self.lines[row][0])
            row += 1
        while body and not body[-1].strip():
            body.pop()
        self.out.blocks.append(Block("code", "\n".join(line[4:] for line in body), self.number(index)))
        return index + len(body)


def parse_blocks(lines: list[str], first_line: int = 1, *, markdown: bool = True) -> Blocks:
    """The blocks of ``lines``, whose first is line ``first_line`` of its file."""
    return _Parser(lines, first_line, markdown).parse()

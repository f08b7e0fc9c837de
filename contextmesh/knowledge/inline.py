"""Markdown inline markup reduced to the text a reader sees, with the links and code spans in it.

:func:`strip_inline` takes the raw text of one block (a paragraph, a list item, a table cell) and
returns its plain text, every link in it (where its text sits in the plain text, its destination
and title) and every code span (where it sits). What it understands:

* backslash escapes; code spans (any backtick run closed by a run of the same length; the content
  kept verbatim, markup inside it not interpreted);
* links ``[text](destination "title")`` (``<destination>`` too), reference links ``[text][label]``,
  ``[label][]`` and ``[label]`` against the document's link definitions, images ``![alt](src)``
  (the alt text kept, no link recorded), footnote references ``[^1]`` (dropped);
* emphasis with ``*`` and ``_`` (a delimiter run is dropped when it flanks a word and another run
  of the same character exists to pair with it; ``_`` inside a word is kept, so ``snake_case``
  survives), and strikethrough ``~~…~~`` — struck text is dropped, because the author retracted it;
* autolinks ``<https://…>`` (the address kept as text), HTML tags (dropped), HTML comments
  (dropped) and character references (``&amp;`` → ``&``).

Every scan is bounded: a destination or title is looked for within a fixed window, and matching
backtick and tilde runs are found through an index of run positions, so the work is linear in
the length of the text (no pattern is retried over the whole remainder at every position).
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Inline", "InlineLink", "normalize_label", "strip_inline"]

_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_SPECIAL = re.compile(r"[\\`!\[\]<&*_~\n]")
_DESTINATION = re.compile(
    r"\([ \t\n]{0,64}(?:<([^<>\n]{0,2048})>|([^\s()<>]{0,2048}))"
    r"(?:[ \t\n]{1,64}(?:\"([^\"\n]{0,512})\"|'([^'\n]{0,512})'|\(([^()\n]{0,512})\)))?[ \t\n]{0,64}\)"
)
_REFERENCE = re.compile(r"\[([^\[\]]{0,999})\]")
_FOOTNOTE = re.compile(r"\[\^[^\]\s]{1,64}\]")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]{1,2048}|[^\s<>@]{1,256}@[^\s<>@]{1,256})>")
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]{0,31}(?:\s[^<>]{0,1024})?/?>")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MAX_LABEL = 999
_RUNS = {char: re.compile(re.escape(char) + "+") for char in "`~*_"}


@dataclass(frozen=True)
class InlineLink:
    """A link: its text's place in the plain text (``start``–``end``), destination and title."""

    start: int
    end: int
    destination: str
    title: str | None


@dataclass(frozen=True)
class Inline:
    """Plain text, its links, its code spans (``(start, end)``) and where its source lines broke."""

    text: str
    links: tuple[InlineLink, ...]
    code: tuple[tuple[int, int], ...]
    breaks: tuple[int, ...] = ()

    def line_offset(self, position: int) -> int:
        """How many source line breaks come before ``position`` of the plain text."""
        return bisect_right(self.breaks, position)


def normalize_label(label: str) -> str:
    """A link label as Markdown compares them: case folded, runs of white space made one space."""
    return " ".join(label.split()).casefold()


class _Runs:
    """Maximal runs of one character, by length, to find a closing run without rescanning."""

    def __init__(self, raw: str, char: str) -> None:
        self.by_length: dict[int, list[int]] = {}
        for match in _RUNS[char].finditer(raw):
            self.by_length.setdefault(match.end() - match.start(), []).append(match.start())

    def next_after(self, position: int, length: int) -> int | None:
        starts = self.by_length.get(length, [])
        index = bisect_right(starts, position)
        return starts[index] if index < len(starts) else None


def _flanks(raw: str, start: int, end: int, char: str) -> bool:
    before = raw[start - 1] if start > 0 else " "
    after = raw[end] if end < len(raw) else " "
    opens, closes = not after.isspace(), not before.isspace()
    if char == "_":
        return (opens and not before.isalnum()) or (closes and not after.isalnum())
    return opens or closes


def _pairable_emphasis(raw: str) -> set[int]:
    """Starts of ``*`` and ``_`` runs to drop: flanking runs with a partner of the same character."""
    drop: set[int] = set()
    for char in "*_":
        starts = [m.start() for m in _RUNS[char].finditer(raw) if _flanks(raw, m.start(), m.end(), char)]
        if len(starts) >= 2:
            drop.update(starts)
    return drop


class _Scanner:
    """One left-to-right pass over ``raw``, emitting pieces of plain text."""

    def __init__(self, raw: str, references: Mapping[str, tuple[str, str | None]]) -> None:
        self.raw = raw
        self.references = references
        self.pieces: list[str] = []
        self.links: list[tuple[int, int, str, str | None]] = []
        self.code: list[int] = []
        self.breaks: list[int] = []  # piece indices of the spaces that stand for line breaks
        self.opens: list[tuple[int, int, bool]] = []  # (piece index, raw position of "[", image?)
        self.barrier = 0  # openers below this index were opened before a link closed: plain brackets
        self.backticks = _Runs(raw, "`")
        self.tildes = _Runs(raw, "~")
        self.emphasis = _pairable_emphasis(raw)
        self.comment_free_after: int | None = None  # no "-->" at or after this raw position

    def run(self) -> Inline:
        raw, i = self.raw, 0
        while i < len(raw):
            special = _SPECIAL.search(raw, i)
            if special is None:
                self.pieces.append(raw[i:])
                break
            if special.start() > i:
                self.pieces.append(raw[i : special.start()])
            i = self.step(special.start())
        return self.assemble()

    def step(self, i: int) -> int:
        """Handle the special character at ``i``; return where scanning continues."""
        raw, char = self.raw, self.raw[i]
        if char == "\n":
            self.breaks.append(len(self.pieces))
            self.pieces.append(" ")
            return i + 1
        if char == "\\":
            following = raw[i + 1] if i + 1 < len(raw) else ""
            if following in _ASCII_PUNCTUATION and following:
                self.pieces.append(following)
                return i + 2
            if following == "\n":
                self.breaks.append(len(self.pieces))
            self.pieces.append(" " if following == "\n" else "\\")
            return i + (2 if following == "\n" else 1)
        if char == "`":
            return self.code_span(i)
        if char == "~":
            return self.strikethrough(i)
        if char in "*_":
            end = _RUNS[char].match(raw, i)
            assert end is not None
            if i not in self.emphasis:
                self.pieces.append(end.group())
            return end.end()
        if char == "!" and raw.startswith("[", i + 1):
            self.opens.append((len(self.pieces), i + 1, True))
            self.pieces.append("![")
            return i + 2
        if char == "[":
            footnote = _FOOTNOTE.match(raw, i)
            if footnote is not None:
                return footnote.end()
            self.opens.append((len(self.pieces), i, False))
            self.pieces.append("[")
            return i + 1
        if char == "]":
            return self.close_bracket(i)
        if char == "<":
            return self.angle(i)
        if char == "&":
            entity = _ENTITY.match(raw, i)
            if entity is not None:
                self.pieces.append(_CONTROL.sub("\ufffd", html.unescape(entity.group())))
                return entity.end()
        self.pieces.append(char)
        return i + 1

    def code_span(self, i: int) -> int:
        run = _RUNS["`"].match(self.raw, i)
        assert run is not None
        length = run.end() - i
        closer = self.backticks.next_after(i, length)
        if closer is None:
            self.pieces.append(run.group())
            return run.end()
        content = self.raw[run.end() : closer].replace("\n", " ")
        if len(content) >= 2 and content[0] == " " and content[-1] == " " and content.strip():
            content = content[1:-1]
        self.code.append(len(self.pieces))
        self.pieces.append(content)
        return closer + length

    def strikethrough(self, i: int) -> int:
        run = _RUNS["~"].match(self.raw, i)
        assert run is not None
        length = run.end() - i
        closer = self.tildes.next_after(i, length) if length <= 2 else None
        if closer is None or not _flanks(self.raw, i, run.end(), "~"):
            self.pieces.append(run.group())
            return run.end()
        return closer + length

    def close_bracket(self, i: int) -> int:
        if not self.opens:
            self.pieces.append("]")
            return i + 1
        piece, raw_open, image = self.opens.pop()
        # A link cannot contain another link: an opener older than a closed link is a plain bracket.
        inactive = not image and len(self.opens) < self.barrier
        self.barrier = min(self.barrier, len(self.opens))
        target = None if inactive else self.destination(i + 1, raw_open + 1, i)
        if target is None:
            self.pieces.append("]")
            return i + 1
        destination, title, end = target
        self.pieces[piece] = ""
        if not image:
            self.links.append((piece, len(self.pieces), destination, title))
            self.barrier = len(self.opens)
        return end

    def destination(self, at: int, text_start: int, text_end: int) -> tuple[str, str | None, int] | None:
        inline = _DESTINATION.match(self.raw, at)
        if inline is not None:
            destination = inline.group(1) if inline.group(1) is not None else inline.group(2) or ""
            title = next((g for g in inline.groups()[2:] if g is not None), None)
            return destination, title, inline.end()
        reference = _REFERENCE.match(self.raw, at)
        if reference is not None and reference.group(1).strip():
            label = reference.group(1)
        elif text_end - text_start <= _MAX_LABEL:  # longer text is no label; never slice it
            label = self.raw[text_start:text_end]
        else:
            return None
        found = self.references.get(normalize_label(label))
        if found is None:
            return None
        return found[0], found[1], reference.end() if reference is not None else at

    def angle(self, i: int) -> int:
        raw = self.raw
        if raw.startswith("<!--", i):
            close = -1 if self.comment_free_after is not None and i >= self.comment_free_after else raw.find("-->", i)
            if close >= 0:
                return close + 3
            self.comment_free_after = i
        for pattern, keep in ((_AUTOLINK, True), (_HTML_TAG, False)):
            match = pattern.match(raw, i)
            if match is not None:
                if keep:
                    self.pieces.append(match.group(1))
                return match.end()
        self.pieces.append("<")
        return i + 1

    def assemble(self) -> Inline:
        offsets = [0]
        for piece in self.pieces:
            offsets.append(offsets[-1] + len(piece))
        links = tuple(InlineLink(offsets[a], offsets[b], dest, title) for a, b, dest, title in self.links)
        code = tuple((offsets[p], offsets[p] + len(self.pieces[p])) for p in self.code)
        breaks = tuple(offsets[p] for p in self.breaks)
        return Inline("".join(self.pieces), tuple(sorted(links, key=lambda link: link.start)), code, breaks)


def strip_inline(raw: str, references: Mapping[str, tuple[str, str | None]] | None = None) -> Inline:
    """The plain text of ``raw``, its links and its code spans (see the module docstring)."""
    return _Scanner(raw, references or {}).run()

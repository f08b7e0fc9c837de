"""One document file into one source: a span per sentence, with keys derived from its content.

:func:`read_document` takes a file's name (its path inside the folder, ``/``-separated) and its
bytes, applies the byte rules (:mod:`~contextmesh.knowledge.decoding`), the front matter
(:mod:`~contextmesh.knowledge.front_matter`) and the block and inline structure, and returns a
:class:`Document`: the :class:`~contextmesh.knowledge.corpus.SourceSpec` (no relations yet — links are
resolved across the folder by :mod:`~contextmesh.knowledge.links`) with what the later passes need
(line numbers, sections, links, prose for entity discovery, code).

Spans, in document order:

* every sentence of every paragraph, list item and block quote is a span; its ``text`` is the
  sentence and its ``body`` the rest of its paragraph (the sentences before and after it, in order;
  in a paragraph longer than :data:`MAX_BODY_CHARS` the nearest sentences up to that length), so a
  fact in the middle of a paragraph is a claim of its own and carries its context with it;
* a list item's last sentence, and a table row, end with a full stop even where the author wrote
  none — a bullet's end is a sentence's end;
* a table body row is one span, ``Header: cell; Header: cell.`` (empty cells left out);
* headings and code are not spans: a heading names a section, code asserts nothing.

A span's key is ``<document>#<digest>`` — the document's name (white space, ``%`` and ``#``
percent-encoded) and the first ten hex digits of SHA-1 over the sentence in Unicode NFC with its
white space collapsed — with ``.2``, ``.3`` … for a second and third identical sentence in the
same document. It depends on nothing else, so re-reading an unchanged file yields the same keys,
moving a paragraph keeps them, and editing a sentence changes that sentence's key only.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import PurePosixPath

from contextmesh.core.canonical import text_hash
from contextmesh.knowledge.blocks import Block, parse_blocks
from contextmesh.knowledge.corpus import SourceSpec, SpanSpec
from contextmesh.knowledge.decoding import DocumentError, decode_document
from contextmesh.knowledge.front_matter import parse_front_matter
from contextmesh.knowledge.inline import Inline, strip_inline
from contextmesh.knowledge.sentences import split_sentences

__all__ = [
    "DOCUMENT_SUFFIXES",
    "MAX_BODY_CHARS",
    "DocLink",
    "Document",
    "Heading",
    "ReadWarning",
    "SpanInfo",
    "Unit",
    "heading_slug",
    "read_document",
    "span_key_prefix",
]

DOCUMENT_SUFFIXES = {".md": True, ".markdown": True, ".txt": False}  # suffix → is Markdown
MAX_BODY_CHARS = 1000
_DIGEST_LENGTH = 10
_NOT_SLUG = re.compile(r"[^\w\- ]")
_CLOSERS = "\"'”’»)]*_"
_ENDS_SENTENCE = tuple(".!?…:;")


@dataclass(frozen=True)
class ReadWarning:
    """Something a reader should know that did not stop the read, at ``file:line`` (line 0: the whole file)."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        place = f"{self.file}:{self.line}" if self.line else self.file
        return f"{place}: {self.message}"


@dataclass(frozen=True)
class SpanInfo:
    """A span with where it came from: its line, its paragraph's text and its offset in it."""

    spec: SpanSpec
    line: int
    paragraph: str
    offset: int


@dataclass(frozen=True)
class Heading:
    """A heading: its slug (as a link fragment names it), level, line and the spans of its section."""

    slug: str
    level: int
    line: int
    first_span: int
    end_span: int


@dataclass(frozen=True)
class DocLink:
    """A link written in the span at index ``span``, before it is resolved."""

    span: int
    line: int
    destination: str
    title: str | None


@dataclass(frozen=True)
class Unit:
    """A stretch of prose for entity discovery: a sentence or a table cell, with its code spans."""

    text: str
    line: int
    code: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Document:
    """One file read: its source, spans with lines, headings, links, prose, code and notes."""

    name: str
    source: SourceSpec
    spans: tuple[SpanInfo, ...]
    headings: tuple[Heading, ...]
    links: tuple[DocLink, ...]
    units: tuple[Unit, ...]
    code: tuple[tuple[int, str], ...]
    notes: tuple[ReadWarning, ...]
    # The front matter's title and every heading, for entity discovery only: a label names what its
    # document or section is about, so it confirms a name the prose uses (never makes one alone).
    labels: tuple[Unit, ...] = ()


def heading_slug(text: str) -> str:
    """The fragment GitHub gives a heading: lower case, punctuation dropped, each space a hyphen."""
    return _NOT_SLUG.sub("", text.strip().lower()).replace(" ", "-")


def span_key_prefix(name: str) -> str:
    """A document name as the first part of its span keys: white space, ``%`` and ``#`` percent-encoded."""
    out = []
    for char in name:
        if char.isspace() or char in "%#" or unicodedata.category(char) in {"Cc", "Cf"}:
            out.append("".join(f"%{byte:02X}" for byte in char.encode("utf-8")))
        else:
            out.append(char)
    return "".join(out)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _body(sentences: list[str], total: int, index: int) -> str:
    """The rest of the paragraph, or in a long one the nearest sentences that fit :data:`MAX_BODY_CHARS`.

    ``total`` is the paragraph's length with a separator per sentence, computed once, so a
    paragraph of many sentences costs at most the window per sentence, never the whole paragraph.
    """
    if total - len(sentences[index]) - 1 <= MAX_BODY_CHARS:
        return " ".join(s for i, s in enumerate(sentences) if i != index)
    budget, left, right = MAX_BODY_CHARS, index - 1, index + 1
    open_left, open_right = left >= 0, right < len(sentences)
    while open_left or open_right:
        if open_left and len(sentences[left]) + 1 <= budget:
            budget -= len(sentences[left]) + 1
            left -= 1
            open_left = left >= 0
        else:
            open_left = False
        if open_right and len(sentences[right]) + 1 <= budget:
            budget -= len(sentences[right]) + 1
            right += 1
            open_right = right < len(sentences)
        else:
            open_right = False
    return " ".join([*sentences[left + 1 : index], *sentences[index + 1 : right]])


def _with_full_stop(text: str) -> str:
    return text if text.rstrip(_CLOSERS).endswith(_ENDS_SENTENCE) else text + "."


class _Reader:
    def __init__(self, name: str, markdown: bool) -> None:
        self.name = name
        self.markdown = markdown
        self.spans: list[tuple[str, str, int, str, int]] = []  # text, body, line, paragraph, offset
        self.links: list[DocLink] = []
        self.headings: list[tuple[str, int, int, int]] = []  # slug, level, line, first span
        self.labels: list[Unit] = []
        self.units: list[Unit] = []
        self.code: list[tuple[int, str]] = []
        self.notes: list[ReadWarning] = []
        self.first_title: str | None = None
        self.references: dict[str, tuple[str, str | None]] = {}

    def inline(self, raw: str) -> Inline:
        if self.markdown:
            return strip_inline(raw, self.references)
        breaks = tuple(i for i, char in enumerate(raw) if char == "\n")
        return Inline(raw.replace("\n", " "), (), (), breaks)

    def block(self, block: Block) -> None:
        if block.kind == "code":
            self.code.append((block.line, block.text))
        elif block.kind == "heading":
            self.heading(block)
        elif block.kind == "row":
            self.row(block)
        else:
            self.paragraph(block)

    def heading(self, block: Block) -> None:
        plain = self.inline(block.text)
        text = _collapse(plain.text)
        if plain.links:
            self.notes.append(ReadWarning(self.name, block.line, "a link in a heading is not a relation"))
        if block.level == 1 and self.first_title is None and text:
            self.first_title = text
        if text:
            self.labels.append(Unit(plain.text, block.line, plain.code))
        self.headings.append((heading_slug(text), block.level, block.line, len(self.spans)))

    def paragraph(self, block: Block) -> None:
        plain = self.inline(block.text)
        units = len(self.units)
        self.sentences(block, plain)
        cuts = [0, *plain.breaks, len(plain.text)]
        lines = [(a, plain.text[a:b]) for a, b in itertools.pairwise(cuts) if plain.text[a:b].strip()]
        if (
            not self.markdown
            and len(lines) >= 2
            and not plain.code
            and not lines[-1][1].rstrip().endswith(_ENDS_SENTENCE)
        ):
            # Lines of which the last does not end a sentence are a list of lines — a letterhead, an
            # address, a signature — not wrapped prose: discovery reads each line by itself, so a
            # name does not run on into the next line's. The spans stay sentences.
            del self.units[units:]
            self.units.extend(Unit(text, block.line + plain.line_offset(a), ()) for a, text in lines)

    def sentences(self, block: Block, plain: Inline) -> None:
        bounds = split_sentences(plain.text, plain.code)
        sentences = [_collapse(plain.text[a:b]) for a, b in bounds]
        if block.kind == "item" and sentences:
            sentences[-1] = _with_full_stop(sentences[-1])
        paragraph = " ".join(sentences)
        total = sum(len(sentence) + 1 for sentence in sentences)
        first, offset, next_code = len(self.spans), 0, 0
        for index, (start, end) in enumerate(bounds):
            line = block.line + plain.line_offset(start)
            self.spans.append((sentences[index], _body(sentences, total, index), line, paragraph, offset))
            offset += len(sentences[index]) + 1
            # Code spans are sorted and never straddle a boundary (the splitter does not split inside one).
            while next_code < len(plain.code) and plain.code[next_code][1] <= start:
                next_code += 1
            code, scan = [], next_code
            while scan < len(plain.code) and plain.code[scan][0] < end:
                code.append((max(plain.code[scan][0], start) - start, min(plain.code[scan][1], end) - start))
                scan += 1
            self.units.append(Unit(plain.text[start:end], line, tuple(code)))
        starts = [start for start, _ in bounds]
        for link in plain.links:
            line = block.line + plain.line_offset(link.start)
            if not bounds:
                self.notes.append(ReadWarning(self.name, line, "a link with no sentence around it is not a relation"))
                continue
            holder = max(0, bisect_right(starts, link.start) - 1)
            self.links.append(DocLink(first + holder, line, link.destination, link.title))

    def row(self, block: Block) -> None:
        parts: list[str] = []
        links: list[DocLink] = []
        for header, cell in zip(block.header, block.cells, strict=True):
            plain = self.inline(cell)
            text = _collapse(plain.text)
            if not text:
                continue
            label = _collapse(self.inline(header).text)
            parts.append(f"{label}: {text}" if label else text)
            self.units.append(Unit(plain.text, block.line, plain.code))
            links.extend(DocLink(len(self.spans), block.line, link.destination, link.title) for link in plain.links)
        if parts:
            text = _with_full_stop("; ".join(parts))
            self.spans.append((text, "", block.line, text, 0))
            self.links.extend(links)

    def document(self, title: str | None, origin: str | None, date: str | None) -> Document:
        keys = _span_keys(self.name, [text for text, *_ in self.spans])
        infos = tuple(
            SpanInfo(SpanSpec(key, text, body, ()), line, paragraph, offset)
            for key, (text, body, line, paragraph, offset) in zip(keys, self.spans, strict=True)
        )
        headings = []
        for index, (slug, level, line, first) in enumerate(self.headings):
            end = next((h[3] for h in self.headings[index + 1 :] if h[1] <= level), len(self.spans))
            headings.append(Heading(slug, level, line, first, end))
        source = SourceSpec(
            self.name,
            title or self.first_title or PurePosixPath(self.name).stem or self.name,
            origin or self.name,
            date,
            tuple(info.spec for info in infos),
        )
        if not infos:
            self.notes.append(ReadWarning(self.name, 1, "the document has no sentences"))
        return Document(
            self.name,
            source,
            infos,
            _unique_slugs(headings),
            tuple(self.links),
            tuple(self.units),
            tuple(self.code),
            tuple(self.notes),
            self._labels(title),
        )

    def _labels(self, title: str | None) -> tuple[Unit, ...]:
        """The headings, after the front matter's title unless a heading already says it."""
        said = {_collapse(unit.text) for unit in self.labels}
        if title is None or _collapse(title) in said:
            return tuple(self.labels)
        return (Unit(title, 1, ()), *self.labels)


def _span_keys(name: str, texts: list[str]) -> list[str]:
    prefix = span_key_prefix(name)
    seen: dict[str, int] = {}
    keys = []
    for text in texts:
        digest = text_hash(unicodedata.normalize("NFC", _collapse(text)), _DIGEST_LENGTH)
        seen[digest] = seen.get(digest, 0) + 1
        keys.append(f"{prefix}#{digest}" + (f".{seen[digest]}" if seen[digest] > 1 else ""))
    return keys


def _unique_slugs(headings: list[Heading]) -> tuple[Heading, ...]:
    """Repeated headings get ``-1``, ``-2`` … as GitHub numbers them."""
    used: set[str] = set()
    out = []
    for heading in headings:
        slug, count = heading.slug, 0
        while slug in used:
            count += 1
            slug = f"{heading.slug}-{count}"
        used.add(slug)
        out.append(Heading(slug, heading.level, heading.line, heading.first_span, heading.end_span))
    return tuple(out)


def read_document(name: str, data: bytes) -> Document:
    """Read the document ``name`` from its bytes, or raise a :class:`DocumentError` naming the place."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in DOCUMENT_SUFFIXES:
        raise DocumentError(name, f"the suffix {suffix!r}", f"documents are {', '.join(DOCUMENT_SUFFIXES)} files")
    lines = decode_document(name, data).split("\n")
    header = parse_front_matter(name, lines)
    reader = _Reader(name, DOCUMENT_SUFFIXES[suffix])
    parsed = parse_blocks(lines[header.body_start :], header.body_start + 1, markdown=reader.markdown)
    reader.references = parsed.references
    reader.notes.extend(ReadWarning(name, line, message) for line, message in parsed.notes)
    for block in parsed.blocks:
        reader.block(block)
    return reader.document(header.title, header.origin, header.date)

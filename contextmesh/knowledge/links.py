"""Links between the documents of a folder, resolved into claim-to-claim relations.

A Markdown link from a sentence to another document of the folder becomes a
:class:`~contextmesh.knowledge.corpus.Relation` on that sentence's span. :func:`resolve_links` runs after
every file has been read, so a link may point at any document, earlier or later in the order.

* **Which document.** The destination's path, percent-decoded, relative to the linking file
  (``/`` at its start: relative to the folder). A destination with a scheme (``https:``,
  ``mailto:``) or a host is not a document link; neither is a path whose suffix is not a document
  suffix (an image, a PDF). An empty path with a fragment points into the same document.
* **Which relation.** The link title: none, or ``cites``, means *cites*; ``supersedes`` and
  ``contradicts`` name those relations (case ignored). A title close to one of the three
  (``supercedes``) makes no relation, because reading it as *cites* would silently turn a
  replacement into a citation; any other title is a tooltip and the link *cites*.
* **Which sentence.** No fragment: the document's first claim (the first span EXTRACT keeps).
  ``#slug``: the first claim in the section under the heading with that slug. ``#:~:text=`` (a URL
  text fragment, ``[prefix-,]start[,end][,-suffix]``, percent-encoded): the one sentence containing
  ``start`` (case and runs of white space ignored), with ``end`` after it in the same paragraph,
  ``prefix`` right before and ``suffix`` right after; ``#slug:~:text=…`` looks only in that
  section. A text that matches more than one sentence picks none.

Every link that cannot be resolved exactly — a missing document, a path out of the folder, an
unknown heading, a text matching no sentence or several, a link to its own sentence — is a
:class:`~contextmesh.knowledge.documents.ReadWarning` at the link's ``file:line`` and makes no
relation; it never raises and never picks another target. A link whose own sentence (or whose
text-fragment target) is not a claim is kept, with a warning: the pipeline's LINK stage drops it
and says why.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from contextmesh.knowledge.corpus import Relation
from contextmesh.knowledge.documents import DOCUMENT_SUFFIXES, DocLink, Document, ReadWarning, SpanInfo
from contextmesh.knowledge.extract import drop_reason

__all__ = ["RELATION_TITLES", "link_target", "link_targets", "resolve_links"]

RELATION_TITLES = ("cites", "supersedes", "contradicts")
_TEXT_DIRECTIVE = ":~:"


@dataclass(frozen=True)
class _TextFragment:
    prefix: str | None
    start: str
    end: str | None
    suffix: str | None


def _parse_text_fragment(directive: str) -> _TextFragment | str:
    """The parts of ``text=…``, or the reason it cannot be read."""
    texts = [part for part in directive.split("&") if part.startswith("text=")]
    if len(texts) != 1:
        return "a text fragment names exactly one 'text=' directive"
    parts = [unquote(part) for part in texts[0][len("text=") :].split(",")]
    prefix = parts.pop(0)[:-1] if len(parts) > 1 and parts[0].endswith("-") else None
    suffix = parts.pop()[1:] if len(parts) > 1 and parts[-1].startswith("-") else None
    if not 1 <= len(parts) <= 2 or not all(" ".join(p.split()) for p in parts):
        return "a text fragment is 'text=[prefix-,]start[,end][,-suffix]'"
    return _TextFragment(prefix, parts[0], parts[1] if len(parts) == 2 else None, suffix)


def _loose(text: str) -> str:
    """A pattern for ``text`` in which any run of white space stands for any other."""
    return r"\s+".join(re.escape(word) for word in text.split())


class _Flat:
    """A document's sentences joined by line feeds, so one search covers them all at the speed of ``re``."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.starts: list[int] = []
        position = 0
        for info in document.spans:
            self.starts.append(position)
            position += len(info.spec.text) + 1
        self.text = "\n".join(info.spec.text for info in document.spans)

    def matching_spans(self, fragment: _TextFragment, start: int, end: int) -> list[int]:
        """Indices of the spans in ``[start, end)`` holding the fragment; stops once two are found."""
        if start >= end:
            return []
        begin = self.starts[start]
        finish = self.starts[end - 1] + len(self.document.spans[end - 1].spec.text)
        found: list[int] = []
        for match in re.finditer(_loose(fragment.start), self.text[begin:finish], re.IGNORECASE):
            index = bisect_right(self.starts, begin + match.start()) - 1
            local = begin + match.start() - self.starts[index]
            if (found and found[-1] == index) or local + len(match.group()) > len(self.document.spans[index].spec.text):
                continue  # the same span again, or a match running into the next sentence
            if _context_holds(self.document.spans[index], local, local + len(match.group()), fragment):
                found.append(index)
                if len(found) == 2:
                    break
        return found


def _context_holds(info: SpanInfo, start: int, end: int, fragment: _TextFragment) -> bool:
    """The fragment's ``end``, ``prefix`` and ``suffix`` around a match of its ``start`` in the paragraph."""
    paragraph, begin, finish = info.paragraph, info.offset + start, info.offset + end
    if fragment.end is not None:
        found = re.compile(_loose(fragment.end), re.IGNORECASE).search(paragraph, finish)
        if found is None:
            return False
        finish = found.end()
    if fragment.prefix is not None:
        before = re.compile(_loose(fragment.prefix) + r"\s*\Z", re.IGNORECASE)
        if before.search(paragraph, 0, begin) is None:
            return False
    if fragment.suffix is not None:
        after = re.compile(r"\s*" + _loose(fragment.suffix), re.IGNORECASE)
        if after.match(paragraph, finish) is None:
            return False
    return True


class _Resolver:
    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = {document.name: document for document in documents}
        self.folded = {name.casefold(): name for name in self.documents}
        self.relations: dict[str, list[Relation]] = {}
        self.warnings: list[ReadWarning] = []
        self.flat: dict[str, _Flat] = {}

    def warn(self, document: Document, link: DocLink, message: str) -> None:
        self.warnings.append(ReadWarning(document.name, link.line, message))

    def target_document(self, document: Document, link: DocLink, path: str) -> Document | None:
        if not path:
            return document
        joined = _joined(document.name, path)
        if joined == ".." or joined.startswith("../"):
            self.warn(document, link, f"the link to {path!r} points outside the folder; no relation")
            return None
        target = self.documents.get(joined)
        if target is None:
            near = self.folded.get(joined.casefold())
            hint = f" (did you mean {near!r}? names are case-sensitive)" if near else ""
            self.warn(document, link, f"the link to {path!r} names no document of this folder{hint}; no relation")
        return target

    def relation_type(self, document: Document, link: DocLink) -> str | None:
        if link.title is None:
            return "cites"
        title = link.title.strip().lower()
        if title in RELATION_TITLES:
            return title
        close = difflib.get_close_matches(title, RELATION_TITLES, n=1, cutoff=0.75)
        if close:
            self.warn(
                document,
                link,
                f"the link title {link.title!r} is not a relation; did you mean {close[0]!r}? (no relation made)",
            )
            return None
        self.warn(
            document,
            link,
            f"the link title {link.title!r} is not one of {', '.join(RELATION_TITLES)}; the link is read as cites",
        )
        return "cites"

    def first_claim(self, target: Document, start: int, end: int) -> int | None:
        return next((i for i in range(start, end) if drop_reason(target.spans[i].spec.text) is None), None)

    def target_span(self, document: Document, link: DocLink, target: Document, fragment: str) -> int | None:
        heading_part, _, directive = fragment.partition(_TEXT_DIRECTIVE)
        where = f"{target.name}#{heading_part}" if heading_part else target.name
        start, end = 0, len(target.spans)
        if heading_part:
            slug = unquote(heading_part)
            heading = next((h for h in target.headings if h.slug == slug), None)
            if heading is None:
                near = difflib.get_close_matches(slug, [h.slug for h in target.headings], n=1)
                hint = f" (did you mean #{near[0]}?)" if near else ""
                self.warn(document, link, f"{target.name} has no heading #{slug}{hint}; no relation")
                return None
            start, end = heading.first_span, heading.end_span
        if not directive:
            found = self.first_claim(target, start, end)
            if found is None:
                self.warn(document, link, f"{where} holds no claim to point at; no relation")
            return found
        parsed = _parse_text_fragment(directive)
        if isinstance(parsed, str):
            self.warn(document, link, f"the fragment {fragment!r}: {parsed}; no relation")
            return None
        flat = self.flat.get(target.name)
        if flat is None:
            flat = self.flat[target.name] = _Flat(target)
        matches = flat.matching_spans(parsed, start, end)
        if len(matches) != 1:
            lines = " and ".join(str(target.spans[i].line) for i in matches)
            found_where = f"sentences on lines {lines} (and maybe more)" if matches else "no sentence"
            self.warn(
                document,
                link,
                f"the text {parsed.start!r} matches {found_where} of {where}; a text fragment must match exactly one; "
                "no relation",
            )
            return None
        reason = drop_reason(target.spans[matches[0]].spec.text)
        if reason is not None:
            self.warn(document, link, f"the linked sentence of {where} is not a claim ({reason}); LINK will drop it")
        return matches[0]

    def resolve(self, document: Document, link: DocLink) -> None:
        parts = urlsplit(link.destination)
        path = _document_path(link.destination)
        if path is None or (not path and not parts.fragment):
            return
        relation_type = self.relation_type(document, link)
        target = self.target_document(document, link, path)
        if relation_type is None or target is None:
            return
        index = self.target_span(document, link, target, parts.fragment)
        if index is None:
            return
        source = document.spans[link.span].spec
        target_key = target.spans[index].spec.key
        if target_key == source.key:
            self.warn(document, link, "the link points at its own sentence; no relation")
            return
        reason = drop_reason(source.text)
        if reason is not None:
            self.warn(document, link, f"the sentence holding this link is not a claim ({reason}); LINK will drop it")
        relations = self.relations.setdefault(source.key, [])
        relation = Relation(relation_type, target_key)
        if relation not in relations:
            relations.append(relation)


def _joined(name: str, path: str) -> str:
    """Where ``path``, written in the document ``name``, leads from the root (``..`` when it leaves it)."""
    if path.startswith("/"):
        return posixpath.normpath(path.lstrip("/"))
    return posixpath.normpath(posixpath.join(posixpath.dirname(name), path))


def _document_path(destination: str) -> str | None:
    """The percent-decoded path of a link to a document (``""``: into its own), or ``None`` for any other link."""
    parts = urlsplit(destination)
    if parts.scheme or parts.netloc:
        return None
    path = unquote(parts.path)
    if path and posixpath.splitext(path)[1].lower() not in DOCUMENT_SUFFIXES:
        return None
    return path


def link_target(name: str, destination: str) -> str | None:
    """The name of the other document a link written in ``name`` points to (it may not exist), or ``None``."""
    path = _document_path(destination)
    if not path:
        return None
    joined = _joined(name, path)
    if joined == ".." or joined.startswith("../") or joined == name:
        return None
    return joined


def link_targets(document: Document) -> tuple[str, ...]:
    """The names of the other documents ``document`` links to, whether or not they exist, sorted."""
    return tuple(sorted({t for link in document.links if (t := link_target(document.name, link.destination))}))


def resolve_links(documents: Sequence[Document]) -> tuple[dict[str, tuple[Relation, ...]], list[ReadWarning]]:
    """Relations by span key, and a warning for every link that made none it was meant to."""
    resolver = _Resolver(documents)
    for document in documents:
        for link in document.links:
            resolver.resolve(document, link)
    return {key: tuple(value) for key, value in resolver.relations.items()}, resolver.warnings

"""A graph's documents: each a chain of revisions, and references that name a document or a sentence.

Ingestion (:mod:`~contextmesh.knowledge.increment`) writes every revision of a document as a
``source`` node whose attributes say which document (its name from the folder's root), which
revision (1, 2, …), the SHA-256 of the file's bytes and whether it is the empty revision a deletion
leaves. The *current* revision of a document is its highest-numbered one; the claims of a revision
are the live claims ``derived_from`` it. This module reads that back; it writes nothing.

A :class:`DocumentRef` names what a plan's task rests on: a document (every claim its current
revision makes), or one sentence of it by a quote — the claim of the current revision whose text
holds the quote (letter case and runs of white space ignored), exactly one of them, as the
decisions sidecar of a document folder names sentences. :func:`resolve_refs` turns references into
the revision and claim ids they name *now*, or says which reference names nothing and why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from contextmesh.core.errors import InputError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.core.model import NodeRecord
from contextmesh.knowledge.text import normalize

__all__ = [
    "CHANNELS",
    "DocumentRef",
    "Grounds",
    "Revision",
    "claims_of",
    "current_revisions",
    "find_entity",
    "resolve_refs",
    "revision_id",
    "revision_of",
]

# Where a revision came from: a folder ingestion, or a document that arrived with evidence. Only
# folder documents are judged deleted when a folder no longer holds them.
CHANNELS = ("folder", "evidence")


@dataclass(frozen=True)
class Revision:
    """One revision of a document, as its source node records it."""

    id: str
    document: str
    number: int
    digest: str
    deleted: bool
    channel: str
    title: str


def revision_id(document: str, number: int, digest: str) -> str:
    """The node id of revision ``number`` of ``document`` (``digest``: its bytes' SHA-256, ``""`` if deleted)."""
    return slug(f"{document}|{number}|{digest}", "source")


def revision_of(node: NodeRecord) -> Revision | None:
    """The revision a source node records, or ``None`` for a source that is no document revision."""
    attrs = node.attrs
    document, number, digest = attrs.get("document"), attrs.get("revision"), attrs.get("digest")
    if node.type != "source" or type(document) is not str or type(number) is not int or type(digest) is not str:
        return None
    channel = attrs.get("channel")
    return Revision(
        node.id,
        document,
        number,
        digest,
        attrs.get("deleted") is True,
        channel if isinstance(channel, str) else "folder",
        node.label,
    )


def current_revisions(graph: ContextGraph) -> dict[str, Revision]:
    """Each document's current (highest-numbered) revision, by document name, in name order."""
    current: dict[str, Revision] = {}
    for node in graph.nodes.values():
        if node.type != "source":
            continue
        revision = revision_of(node)
        if revision is not None and (
            revision.document not in current or current[revision.document].number < revision.number
        ):
            current[revision.document] = revision
    return dict(sorted(current.items()))


def claims_of(graph: ContextGraph, revision: str) -> dict[str, str]:
    """The live claims a revision makes: span key → claim id, in the order they were linked."""
    claims: dict[str, str] = {}
    for edge in graph.in_edges(revision, ("derived_from",)):
        node = graph.nodes[edge.src]
        key = node.attrs.get("key")
        if node.type == "claim" and isinstance(key, str):
            claims.setdefault(key, node.id)
    return claims


@dataclass(frozen=True)
class DocumentRef:
    """A document a task rests on (``quote=None``: every claim of it), or one sentence of it."""

    doc: str
    quote: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.doc, str) or not self.doc.strip():
            raise InputError("doc", repr(self.doc), "a reference names a document by its name, non-empty text")
        if self.quote is not None and (not isinstance(self.quote, str) or not self.quote.strip()):
            raise InputError("quote", repr(self.quote), "a quote is non-empty text, or None for the whole document")

    def __str__(self) -> str:
        return self.doc if self.quote is None else f"{self.doc}: '{self.quote}'"

    def to_data(self) -> dict[str, str | None]:
        """Plain data, as an execution snapshot stores it."""
        return {"doc": self.doc, "quote": self.quote}

    @classmethod
    def from_data(cls, value: Any, where: str) -> DocumentRef:
        """A reference from plain data (untrusted): exactly ``doc`` and ``quote``."""
        if type(value) is not dict or set(value) != {"doc", "quote"}:
            raise InputError(where, repr(value), "a reference is an object with exactly 'doc' and 'quote'")
        try:
            return cls(value["doc"], value["quote"])
        except InputError as exc:
            raise InputError(f"{where}.{exc.path}", exc.found, exc.rule) from None


@dataclass(frozen=True)
class Grounds:
    """What references name now: the revisions cited and the claims rested on, each once, in order."""

    sources: tuple[str, ...]
    claims: tuple[str, ...]


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _claims_quoting(graph: ContextGraph, claims: Iterable[str], quote: str) -> list[str]:
    wanted = _folded(quote)
    return [claim for claim in claims if wanted in _folded(graph.nodes[claim].label)]


def resolve_refs(
    graph: ContextGraph, refs: Iterable[DocumentRef], index: Mapping[str, Revision] | None = None
) -> Grounds | str:
    """The ids ``refs`` name in the current revisions, or the first reference that names nothing, and why."""
    refs = tuple(refs)
    if not refs:
        return Grounds((), ())
    current = current_revisions(graph) if index is None else index
    sources: dict[str, None] = {}
    claims: dict[str, None] = {}
    for ref in refs:
        revision = current.get(ref.doc)
        if revision is None:
            return f"{ref} names no document of this graph"
        if revision.deleted:
            return f"{ref} names a document that was deleted (revision {revision.number})"
        made = list(claims_of(graph, revision.id).values())
        if ref.quote is None:
            if not made:
                return f"{ref} makes no claim in its current revision ({revision.number})"
            sources.setdefault(revision.id)
            claims.update(dict.fromkeys(made))
            continue
        found = _claims_quoting(graph, made, ref.quote)
        if len(found) != 1:
            many = f"{len(found)} sentences" if found else "no sentence"
            verb = "hold" if found else "holds"
            return (
                f"{ref}: {many} of its current revision ({revision.number}) {verb} the quote; a quote names exactly one"
            )
        sources.setdefault(revision.id)
        claims.setdefault(found[0])
    return Grounds(tuple(sources), tuple(claims))


def find_entity(graph: ContextGraph, name: str) -> str | None:
    """The one live entity whose canonical name or an alias reads as ``name`` (``normalize``), if exactly one."""
    wanted = normalize(name)
    if not wanted:
        return None
    found: list[str] = []
    for node in graph.nodes.values():
        if node.type != "entity" or not node.live:
            continue
        aliases = node.attrs.get("aliases")
        surfaces = (
            [node.label, *(a for a in aliases if isinstance(a, str))] if isinstance(aliases, list) else [node.label]
        )
        if any(normalize(surface) == wanted for surface in surfaces):
            found.append(node.id)
    return found[0] if len(found) == 1 else None

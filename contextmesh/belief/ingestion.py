"""A folder of documents into a graph, incrementally and belief-aware: :func:`ingest`.

One call is one increment: :func:`~contextmesh.knowledge.survey.survey` compares the files under
the paths with the revisions the graph holds, :func:`~contextmesh.knowledge.increment.apply_increment`
writes what the new, revised and deleted documents add (a new revision each, their new claims, the
catalogue's new entities and aliases, their mentions and links), and
:func:`~contextmesh.belief.revision.supersede` lets every claim a revision no longer makes be
superseded — kept, flagged out of walks — with what rested on it falling, each with its reason chain.

* An unchanged folder is a no-op: nothing is written (``Ingestion.wrote`` is false), so a session
  commits nothing.
* ``dry_run=True`` runs the same increment on a copy of the graph and resolver and returns the same
  report; the graph and resolver given are not touched.
* A graph's build counter is moved from 0 to 1 by its first ingestion and never again by another
  one, so the provenance a claim records does not depend on how many increments came before it
  (see :mod:`~contextmesh.knowledge.increment` for what "the same graph" means across orders of arrival).
"""

from __future__ import annotations

import copy
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from contextmesh.belief.revision import RevisionReport, revision_fallout, supersede
from contextmesh.core.canonical import sha256_hex
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.catalogue import CATALOGUE_ATTR
from contextmesh.knowledge.corpus import EntitySpec
from contextmesh.knowledge.decoding import MAX_DOCUMENT_BYTES, DocumentError
from contextmesh.knowledge.documents import DOCUMENT_SUFFIXES
from contextmesh.knowledge.embed import Embedder, HashedEmbedder
from contextmesh.knowledge.entities_file import EntitiesFile
from contextmesh.knowledge.increment import Increment, apply_increment
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.revisions import current_revisions
from contextmesh.knowledge.survey import DocumentChange, Survey, survey

__all__ = ["Ingestion", "document_name_problem", "ingest", "ingest_text"]


@dataclass
class Ingestion:
    """What one ingestion did (or, in a dry run, would do)."""

    increment: Increment
    fallout: RevisionReport
    dry_run: bool

    @property
    def wrote(self) -> bool:
        """True when the graph or the resolver changed (in a dry run: would change)."""
        return self.increment.wrote

    def to_dict(self) -> dict[str, object]:
        """Plain data for ``--json``: the documents by status, the stage report and the fallout."""
        increment = self.increment
        return {
            "dry_run": self.dry_run,
            "wrote": self.wrote,
            "documents": [{"name": change.name, "status": change.status} for change in increment.survey.changes],
            "revisions": dict(increment.revisions),
            "new_claims": len(increment.new_claims),
            "carried_claims": len(increment.carried_claims),
            "new_entities": list(increment.entities.new_entities),
            "new_aliases": {k: list(v) for k, v in increment.entities.new_aliases.items()},
            "divergences": list(increment.divergences),
            "stages": [
                {**stage.to_dict(), "drops": [{"item": d.item, "reason": d.reason} for d in stage.drops]}
                for stage in increment.report.stages
            ],
            "warnings": [str(w) for w in increment.warnings],
            **self.fallout.to_dict(),
        }


def ingest(
    graph: ContextGraph,
    resolver: Resolver,
    paths: Sequence[Path | str],
    *,
    root: Path | str | None = None,
    entities: Path | str | None = None,
    embedder: Embedder | None = None,
    dry_run: bool = False,
) -> Ingestion:
    """Bring ``graph`` and ``resolver`` up to the documents under ``paths`` (see the module docstring).

    Every file is read and checked before anything is written, so a refused document
    (:class:`~contextmesh.knowledge.decoding.DocumentError`) changes nothing.
    """
    return _apply(graph, resolver, survey(graph, paths, root=root, entities=entities), embedder, dry_run)


def ingest_text(
    graph: ContextGraph,
    resolver: Resolver,
    name: str,
    text: str,
    *,
    embedder: Embedder | None = None,
    dry_run: bool = False,
) -> Ingestion:
    """One document that arrived with evidence rather than in a folder, by its name, as one increment.

    The same increment as :func:`ingest` (its revision's ``channel`` is ``evidence``, so no folder
    ingestion ever judges it deleted): a name seen before with other text is a new revision, the
    same text is a no-op. A name a folder document holds is refused — revise it in its folder.
    """
    problem = document_name_problem(name)
    if problem is not None:
        raise DocumentError("document_name", repr(name)[:80], problem)
    data = text.encode("utf-8")
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentError(name, f"{len(data)} bytes", f"a document is at most {MAX_DOCUMENT_BYTES} bytes")
    previous = current_revisions(graph).get(name)
    if previous is not None and previous.channel != "evidence":
        raise DocumentError(name, "a document of a folder", "revise a folder's document in its folder, not as evidence")
    digest = sha256_hex(data)
    status = (
        "new" if previous is None or previous.deleted else ("unchanged" if previous.digest == digest else "revised")
    )
    change = DocumentChange(name, status, previous, data, digest)
    found = Survey(Path(), (change,), (), _held_catalogue(graph), channel="evidence")
    return _apply(graph, resolver, found, embedder, dry_run)


def _held_catalogue(graph: ContextGraph) -> EntitiesFile:
    """The catalogue the graph holds, as an entities file: a document arriving alone adds to it, never takes."""
    held = []
    for node in graph.nodes.values():
        if node.type == "entity" and node.attrs.get(CATALOGUE_ATTR) is True:
            aliases = node.attrs.get("aliases")
            names = tuple(a for a in aliases if isinstance(a, str)) if isinstance(aliases, list) else ()
            held.append(EntitySpec(node.label, names))
    return EntitiesFile(tuple(held), ())


def document_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a document that arrives with evidence, or ``None``."""
    if not isinstance(name, str) or not name.strip():
        return "a document name is non-empty text"
    if any(unicodedata.category(char) in {"Cc", "Cf"} for char in name):
        return "a document name holds no control or format character"
    parts = name.split("/")
    if name.startswith("/") or any(part in {"", ".", ".."} for part in parts):
        return "a document name is a relative path of names, '/'-separated, with no '.' or '..' part"
    if PurePosixPath(name).suffix.lower() not in DOCUMENT_SUFFIXES:
        return f"a document name ends in one of {', '.join(DOCUMENT_SUFFIXES)}"
    return None


def _apply(
    graph: ContextGraph, resolver: Resolver, found: Survey, embedder: Embedder | None, dry_run: bool
) -> Ingestion:
    if dry_run:
        # The ontology is immutable (and holds mapping proxies, which do not copy): shared, not copied.
        graph = copy.deepcopy(graph, {id(graph.ontology): graph.ontology})
        resolver = copy.deepcopy(resolver)
    if graph.build == 0:
        graph.next_build()
    increment = apply_increment(graph, resolver, found, embedder or HashedEmbedder())
    if dry_run:
        fallout = revision_fallout(graph, increment.removed, increment.revisions)
    else:
        fallout = supersede(graph, increment.removed, increment.revisions, increment.previous)
    return Ingestion(increment, fallout, dry_run)

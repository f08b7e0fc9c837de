"""What a folder holds now, against what a graph last read of it: new, revised, unchanged, deleted.

:func:`survey` finds the documents under the paths given (:func:`~contextmesh.knowledge.folder.find_documents`,
the same names, the same rules), reads each file's bytes — bounded, as every reader does — and
compares their SHA-256 with the digest the document's current revision records
(:mod:`~contextmesh.knowledge.revisions`). Nothing is parsed: an unchanged file costs one read and
one hash. A document of the graph that the paths cover (it lies under a folder given, or is a file
given) and that is no longer there was deleted; one the paths do not cover is not judged at all,
and neither is a document that arrived with evidence rather than from a folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from contextmesh.core.canonical import sha256_hex
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.decoding import MAX_DOCUMENT_BYTES, DocumentError, read_bounded
from contextmesh.knowledge.documents import DOCUMENT_SUFFIXES, ReadWarning
from contextmesh.knowledge.entities_file import EntitiesFile
from contextmesh.knowledge.folder import find_documents, folder_entities
from contextmesh.knowledge.revisions import Revision, current_revisions

__all__ = ["STATUSES", "DocumentChange", "Survey", "survey"]

STATUSES = ("new", "revised", "unchanged", "deleted")


@dataclass(frozen=True)
class DocumentChange:
    """One document's state: its status, the revision the graph holds (if any) and its bytes now."""

    name: str
    status: str
    previous: Revision | None
    data: bytes | None  # None when deleted
    digest: str  # "" when deleted

    @property
    def changed(self) -> bool:
        """True unless the file is byte for byte the revision the graph holds."""
        return self.status != "unchanged"


@dataclass(frozen=True)
class Survey:
    """Every document the paths cover, by name, with the folder's warnings and entities file."""

    root: Path
    changes: tuple[DocumentChange, ...]
    warnings: tuple[ReadWarning, ...]
    registered: EntitiesFile | None
    channel: str = "folder"  # where the documents came from (``revisions.CHANNELS``)

    @property
    def changed(self) -> tuple[DocumentChange, ...]:
        """The documents that are new, revised or deleted, in name order."""
        return tuple(change for change in self.changes if change.changed)

    def count(self, status: str) -> int:
        """How many documents have ``status``."""
        return sum(1 for change in self.changes if change.status == status)


def survey(
    graph: ContextGraph,
    paths: Sequence[Path | str],
    *,
    root: Path | str | None = None,
    entities: Path | str | None = None,
    index: Mapping[str, Revision] | None = None,
) -> Survey:
    """Compare the documents under ``paths`` with the revisions ``graph`` holds (see the module docstring)."""
    found = find_documents(paths, root=root)
    if not found.files:
        raise DocumentError(
            str(found.root), "no document", f"a folder to ingest holds at least one {', '.join(DOCUMENT_SUFFIXES)} file"
        )
    current = current_revisions(graph) if index is None else index
    changes: dict[str, DocumentChange] = {}
    for name, real in found.files:
        data = read_bounded(real, name, MAX_DOCUMENT_BYTES)
        digest = sha256_hex(data)
        previous = current.get(name)
        if previous is None or previous.deleted:
            status = "new"
        else:
            status = "unchanged" if previous.digest == digest else "revised"
        changes[name] = DocumentChange(name, status, previous, data, digest)
    for name, revision in current.items():
        if name in changes or revision.deleted or revision.channel != "folder" or not found.covers(name):
            continue
        changes[name] = DocumentChange(name, "deleted", revision, None, "")
    ordered = tuple(changes[name] for name in sorted(changes))
    return Survey(found.root, ordered, found.warnings, folder_entities(found.root, entities))

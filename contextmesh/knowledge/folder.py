"""A folder of documents in, a corpus and a list of warnings out: :func:`read_folder`.

``paths`` are files and folders; folders are read recursively. What is read, and how it is named:

* **the root** is ``root`` when given (every path must lie inside it), otherwise the deepest
  folder holding every path given (a folder holds itself; a file, its parent). Each document is
  named by its path from the root, ``/``-separated, and that name is its source key and the first
  part of its span keys, so the same files read from the same root give the same corpus whatever
  the order of ``paths`` and whatever else the folder holds;
* ``.md``, ``.markdown`` and ``.txt`` files are documents; any other file is reported and skipped,
  except the sidecars a folder may hold (``entities.json``, ``entities.candidates.json``,
  ``decisions.json``, ``scenarios.json``); names starting with ``.`` (``.git``, ``.obsidian``) are
  skipped without a word, unless named explicitly;
* a symbolic link is followed only to a file inside the root; a link out of the root, and a link to
  a folder (which could loop), are reported and not followed; a file reached under two names is
  read once, under its own name when that is one of them (a link never takes a file's name away),
  else under the first in sorted order;
* a file whose name is not UTF-8 or holds a control or format character is reported and skipped
  (its name would become a key and a warning's place);
* files are read in sorted name order. A document that breaks a rule of
  :mod:`~contextmesh.knowledge.decoding` or :mod:`~contextmesh.knowledge.front_matter` stops the
  whole read with its :class:`~contextmesh.knowledge.decoding.DocumentError` — nothing half-read is
  returned; a path that does not exist or cannot be read does too;
* the entities file is ``entities`` when given, else the root's ``entities.json`` if there is one.

Links are resolved (:mod:`~contextmesh.knowledge.links`) and entities folded
(:mod:`~contextmesh.knowledge.candidates`) once every file is read.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from contextmesh.knowledge.candidates import discover, fold_entities
from contextmesh.knowledge.corpus import Corpus, SourceSpec, SpanSpec
from contextmesh.knowledge.decoding import MAX_DOCUMENT_BYTES, DocumentError, read_bounded
from contextmesh.knowledge.documents import DOCUMENT_SUFFIXES, Document, ReadWarning, read_document
from contextmesh.knowledge.entities_file import EntitiesFile, load_entities
from contextmesh.knowledge.links import resolve_links

__all__ = [
    "ENTITIES_FILE",
    "SIDECAR_NAMES",
    "FolderFiles",
    "FolderRead",
    "find_documents",
    "folder_entities",
    "read_documents",
    "read_folder",
]

ENTITIES_FILE = "entities.json"
SIDECAR_NAMES = frozenset([ENTITIES_FILE, "entities.candidates.json", "decisions.json", "scenarios.json"])


@dataclass(frozen=True)
class FolderRead:
    """The documents of a folder, read and sorted by name, with the root and the entities file."""

    root: Path
    documents: tuple[Document, ...]
    warnings: tuple[ReadWarning, ...]
    registered: EntitiesFile | None


def _place(warning: ReadWarning) -> tuple[str, int]:
    """Warnings sort by file and line; the sort is stable, so one line's warnings keep their order."""
    return warning.file, warning.line


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _name(path: Path, root: Path) -> str:
    return PurePosixPath(*path.relative_to(root).parts).as_posix()


def _name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a document (it becomes a source key, a span key and a warning's place)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "that is not UTF-8"
    if any(unicodedata.category(char) in {"Cc", "Cf"} for char in name):
        return "with a control or format character"
    return None


def _resolve(path: Path | str) -> Path:
    given = Path(path)
    try:
        resolved = given.resolve(strict=True)
    except FileNotFoundError:
        raise DocumentError(str(given), "no such file or folder", "every path given must exist") from None
    except (OSError, RuntimeError) as exc:  # a symlink loop raises RuntimeError
        raise DocumentError(str(given), str(exc) or "an unresolvable path", "every path given must resolve") from None
    return resolved


class _Walk:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, Path] = {}  # name → real path
        self.warnings: list[ReadWarning] = []

    def note(self, name: str, message: str) -> None:
        self.warnings.append(ReadWarning(name, 0, message))

    def offer(self, path: Path, *, explicit: bool = False) -> None:
        name = _name(path, self.root)
        problem = _name_problem(name)
        if problem is not None:
            self.note(ascii(name), f"a file name {problem}; not read")
            return
        real = path
        if path.is_symlink():
            real = Path(os.path.realpath(path))
            if not _inside(real, self.root):
                self.note(name, "a link to outside the folder; not followed")
                return
            if real.is_dir():
                self.note(name, "a link to a folder; not followed")
                return
        suffix = path.suffix.lower()
        if suffix in DOCUMENT_SUFFIXES:
            self.files[name] = real
        elif path.name in SIDECAR_NAMES and not explicit:
            return
        else:
            self.note(name, f"not a document (only {', '.join(DOCUMENT_SUFFIXES)} files are read)")

    def folder(self, folder: Path) -> None:
        def refuse(error: OSError) -> None:
            place = str(error.filename) if error.filename else str(folder)
            raise DocumentError(place, error.strerror or "an unreadable folder", "every folder must be readable")

        for current, dirs, files in os.walk(folder, onerror=refuse, followlinks=False):
            here = Path(current)
            kept = []
            for entry in sorted(dirs):
                if entry.startswith("."):
                    continue
                if (here / entry).is_symlink():
                    self.offer(here / entry)
                    continue
                kept.append(entry)
            dirs[:] = kept
            for entry in sorted(files):
                if not entry.startswith("."):
                    self.offer(here / entry)

    def once_each(self) -> list[tuple[str, Path]]:
        """Sorted (name, real path) pairs, one per real file: under its own name, else its first link's."""
        names: dict[Path, list[str]] = {}
        for name in sorted(self.files):
            names.setdefault(self.files[name], []).append(name)
        chosen = []
        for real, found in names.items():
            own = _name(real, self.root)
            keep = own if own in found else found[0]
            self.warnings.extend(
                ReadWarning(name, 0, f"the same file as {keep}; read once") for name in found if name != keep
            )
            chosen.append((keep, real))
        return sorted(chosen)


def _root(resolved: list[Path], root: Path | str | None) -> Path:
    if root is not None:
        base = _resolve(root)
        for path in resolved:
            if not _inside(path, base):
                raise DocumentError(str(path), f"a path outside the root {base}", "every path lies inside the root")
        return base
    holders = sorted({str(path if path.is_dir() else path.parent) for path in resolved})
    return Path(os.path.commonpath(holders))


@dataclass(frozen=True)
class FolderFiles:
    """The documents under some paths, found but not read: (name, real path) in name order.

    ``scope`` says what the paths cover, as names from the root: a folder's name followed by ``/``
    (``""`` for the root itself) covers every document under it, a file's name covers that file.
    """

    root: Path
    files: tuple[tuple[str, Path], ...]
    warnings: tuple[ReadWarning, ...]
    scope: tuple[str, ...]

    def covers(self, name: str) -> bool:
        """True when ``name`` lies under one of the paths (a document there that is gone was deleted)."""
        return any(name == part or ((part.endswith("/") or not part) and name.startswith(part)) for part in self.scope)


def find_documents(paths: Sequence[Path | str], *, root: Path | str | None = None) -> FolderFiles:
    """Every document under ``paths`` (see the module docstring), named and sorted; nothing read."""
    if not paths:
        raise DocumentError("paths", "nothing", "name at least one file or folder to read")
    resolved = sorted({_resolve(path) for path in paths})
    base = _root(resolved, root)
    walk = _Walk(base)
    scope = []
    for path in resolved:
        if path.is_dir():
            walk.folder(path)
            scope.append("" if path == base else _name(path, base) + "/")
        else:
            walk.offer(path, explicit=True)
            scope.append(_name(path, base))
    return FolderFiles(base, tuple(walk.once_each()), tuple(walk.warnings), tuple(sorted(set(scope))))


def folder_entities(root: Path, entities: Path | str | None) -> EntitiesFile | None:
    """The entities file: ``entities`` when given, else the root's ``entities.json`` if there is one."""
    if entities is not None:
        return load_entities(Path(entities))
    if (root / ENTITIES_FILE).is_file():
        return load_entities(root / ENTITIES_FILE, ENTITIES_FILE)
    return None


def read_documents(
    paths: Sequence[Path | str], *, root: Path | str | None = None, entities: Path | str | None = None
) -> FolderRead:
    """Read every document under ``paths`` (see the module docstring); links and entities untouched."""
    found = find_documents(paths, root=root)
    documents = tuple(read_document(name, read_bounded(real, name, MAX_DOCUMENT_BYTES)) for name, real in found.files)
    if not documents:
        raise DocumentError(
            str(found.root), "no document", f"a folder to read holds at least one {', '.join(DOCUMENT_SUFFIXES)} file"
        )
    registered = folder_entities(found.root, entities)
    warnings = sorted([*found.warnings, *(note for document in documents for note in document.notes)], key=_place)
    return FolderRead(found.root, documents, tuple(warnings), registered)


def read_folder(
    paths: Sequence[Path | str], *, root: Path | str | None = None, entities: Path | str | None = None
) -> tuple[Corpus, list[ReadWarning]]:
    """The corpus of the documents under ``paths`` and every warning met while reading them."""
    read = read_documents(paths, root=root, entities=entities)
    relations, link_warnings = resolve_links(read.documents)
    folded = fold_entities(discover(read.documents), read.registered)
    sources = tuple(
        SourceSpec(
            d.source.key,
            d.source.title,
            d.source.origin,
            d.source.retrieved_at,
            tuple(SpanSpec(s.key, s.text, s.body, relations.get(s.key, ())) for s in d.source.spans),
        )
        for d in read.documents
    )
    return Corpus(folded.entities, sources), sorted([*read.warnings, *link_warnings], key=_place)

"""Entity candidates folded with the entities file into the corpus's entities, and suggestions to edit.

Discovery is :mod:`~contextmesh.knowledge.discovery` (re-exported here as :func:`discover`).

Folding (:func:`fold_entities`) decides, precision before recall — a wrong entity costs more than
a missing one, because a wrong merge corrupts every walk:

1. every entity of the entities file, in file order, with its aliases;
2. a candidate the file names, or ignores, is left to the file;
3. an acronym with one expansion becomes the expansion's entity with the acronym as its alias; an
   acronym defined two ways is held back;
4. a candidate other than an identifier seen only in titles and headings is held back (a label
   confirms a name the prose uses, never makes one); a phrase seen at least twice is admitted if it
   was seen once inside a sentence, or if its first
   word is never written in lower case in the documents (a table cell and the text after a colon
   open with a capital, and ``Tomas Berg`` in a cell is still a name; ``Rerun the LNA`` is not);
   one seen once inside a sentence is admitted beside an admitted phrase that differs from it in
   one word only, both with a digit (``Berth 5`` beside ``Berth 3``: a numbered series);
5. an undefined acronym seen at least twice is admitted, unless its letters are the initials of
   exactly one entity already admitted (the resolver's acronym rule reads it as that entity);
6. an identifier seen twice in prose, or once in prose with a compound shape (``_``, ``-``, ``.``,
   ``/``, an inner capital, letters and digits), is admitted; one seen only in code blocks is not;
7. an identifier or undefined acronym only ever written inside a longer capitalised phrase
   (``HA-400`` in ``Halden HA-400``) is held back: the phrase names the thing;
8. anything else is held back with its reason; last, the admitted entities are registered in a
   scratch :class:`~contextmesh.knowledge.resolve.Resolver`, and one it refuses is held back too, so the
   pipeline's RESOLVE stage never meets a surface that means two entities.

Discovered entities follow the file's, sorted by name, so a new document never reorders them.
:func:`suggest_entities` writes what folding decided as an entities file a person can edit, and
every candidate with its counts, first sighting and verdict as a second JSON file beside it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from contextmesh.core.canonical import file_bytes
from contextmesh.core.errors import IdentityError
from contextmesh.core.ids import slug
from contextmesh.knowledge.corpus import EntitySpec
from contextmesh.knowledge.decoding import DocumentError
from contextmesh.knowledge.discovery import Candidate, Discovery, compound_shape, discover
from contextmesh.knowledge.documents import Document
from contextmesh.knowledge.entities_file import EntitiesFile, entities_file_bytes
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.text import normalize

__all__ = [
    "Candidate",
    "Discovery",
    "Folded",
    "Verdict",
    "candidates_file_bytes",
    "discover",
    "fold_entities",
    "suggest_entities",
]


@dataclass(frozen=True)
class Verdict:
    """What folding decided for one candidate: ``status`` (registered, admitted, held, ignored) and why."""

    candidate: Candidate
    status: str
    entity: str | None
    reason: str


@dataclass(frozen=True)
class Folded:
    """The corpus's entities and a verdict for every candidate."""

    entities: tuple[EntitySpec, ...]
    verdicts: tuple[Verdict, ...]


def _initials(name: str) -> str:
    """Initials as the resolver's acronym rule takes them: of the normalised words."""
    return "".join(word[0] for word in normalize(name).split())


class _Folder:
    def __init__(self, discovery: Discovery, registered: EntitiesFile | None) -> None:
        self.discovery = discovery
        self.registered = registered or EntitiesFile((), ())
        self.owners = self.registered.surfaces()
        self.ignored = {normalize(surface) for surface in self.registered.ignore}
        self.by_key = {c.key: c for c in discovery.candidates}
        self.verdicts: dict[str, Verdict] = {}
        self.admitted: dict[str, EntitySpec] = {}  # candidate key → entity

    def decide(self, candidate: Candidate, status: str, reason: str, entity: str | None = None) -> None:
        self.verdicts.setdefault(candidate.key, Verdict(candidate, status, entity, reason))

    def admit(self, candidate: Candidate, name: str, aliases: tuple[str, ...], reason: str) -> None:
        self.admitted[candidate.key] = EntitySpec(name, aliases)
        self.decide(candidate, "admitted", reason, name)

    def left_to_the_file(self, candidate: Candidate) -> bool:
        if candidate.key in self.owners:
            self.decide(candidate, "registered", "the entities file names it", self.owners[candidate.key])
            return True
        if candidate.key in self.ignored:
            self.decide(candidate, "ignored", "the entities file ignores it")
            return True
        return False

    def acronyms(self) -> None:
        for candidate in self.discovery.candidates:
            if candidate.kind != "acronym" or self.left_to_the_file(candidate):
                continue
            expansions = self.discovery.expansions.get(candidate.name, ())
            if len(expansions) > 1:
                self.decide(candidate, "held", "defined two ways: " + "; ".join(expansions))
                continue
            if not expansions:
                continue
            expansion = self.by_key.get(normalize(expansions[0]))
            if expansion is None or self.left_to_the_file(expansion):
                reason = "its expansion belongs to the entities file" if expansion is not None else "no expansion"
                self.decide(candidate, "held", reason)
                continue
            self.admit(expansion, expansion.name, (candidate.name,), f"the text defines it as {candidate.name}")
            self.decide(candidate, "admitted", f"the acronym of {expansion.name}", expansion.name)

    def others(self) -> None:
        for candidate in self.discovery.candidates:
            if candidate.key in self.verdicts or self.left_to_the_file(candidate):
                continue
            if candidate.labels == candidate.count and candidate.kind != "identifier":
                self.decide(candidate, "held", "seen only in titles and headings")
            elif candidate.kind == "phrase":
                if candidate.count >= 2 and (candidate.inside >= 1 or candidate.proper_start):
                    self.admit(candidate, candidate.name, (), f"seen {candidate.count} times")
                else:
                    self.decide(
                        candidate, "held", "seen once" if candidate.count < 2 else "seen only opening a sentence"
                    )
            elif candidate.kind == "identifier" and candidate.in_phrase == candidate.count:
                self.decide(candidate, "held", "only ever written inside a longer name")
            elif candidate.kind == "identifier":
                if candidate.prose >= 2 or (candidate.prose == 1 and compound_shape(candidate.name)):
                    self.admit(candidate, candidate.name, (), "an identifier written in prose")
                else:
                    self.decide(candidate, "held", "seen only in code blocks" if not candidate.prose else "seen once")
            elif candidate.kind == "name":
                self.decide(candidate, "held", "a single word: add it to the entities file if it names a thing")

    def series(self) -> None:
        """A phrase seen once inside a sentence is admitted when an admitted phrase differs from it in
        one numbered word only (``Berth 5`` beside ``Berth 3``): the folder numbers a series of things."""
        numbered = {
            tuple(normalize(entity.name).split()): entity.name
            for key, entity in self.admitted.items()
            if self.by_key[key].kind == "phrase"
        }
        for candidate in self.discovery.candidates:
            verdict = self.verdicts.get(candidate.key)
            if candidate.kind != "phrase" or verdict is None or verdict.reason != "seen once" or not candidate.inside:
                continue
            sibling = _series_sibling(tuple(candidate.key.split()), numbered)
            if sibling is not None:
                del self.verdicts[candidate.key]
                self.admit(candidate, candidate.name, (), f"one of a numbered series with {sibling}")

    def bare_acronyms(self) -> None:
        """Undefined acronyms go last: whether the resolver already reads one depends on the rest."""
        initials: dict[str, list[str]] = {}
        for entity in (*self.registered.entities, *self.admitted.values()):
            if len(normalize(entity.name).split()) >= 2:
                initials.setdefault(_initials(entity.name), []).append(entity.name)
        for candidate in self.discovery.candidates:
            if candidate.kind != "acronym" or candidate.key in self.verdicts:
                continue
            owners = initials.get(candidate.name.lower(), [])
            if candidate.in_phrase == candidate.count:
                self.decide(candidate, "held", "only ever written inside a longer name")
            elif len(owners) == 1:
                self.decide(candidate, "held", f"the resolver reads it as the initials of {owners[0]}")
            elif candidate.count >= 2:
                self.admit(candidate, candidate.name, (), f"an acronym seen {candidate.count} times")
            else:
                self.decide(candidate, "held", "seen once")

    def entities(self) -> tuple[EntitySpec, ...]:
        """The file's entities, then the admitted ones by name, minus any the resolver would refuse."""
        scratch = Resolver()
        out = []
        for entity in self.registered.entities:
            scratch.register(slug(entity.name, "entity"), entity.name, entity.aliases)
            out.append(entity)
        admitted = sorted(self.admitted.items(), key=lambda item: (item[1].name.casefold(), item[1].name))
        for key, entity in admitted:
            try:
                scratch.register(slug(entity.name, "entity"), entity.name, entity.aliases)
            except IdentityError as exc:
                verdict = self.verdicts[key]
                self.verdicts[key] = Verdict(verdict.candidate, "held", None, f"the resolver refuses it: {exc}")
                continue
            out.append(entity)
        return tuple(out)


def _series_sibling(words: tuple[str, ...], numbered: dict[tuple[str, ...], str]) -> str | None:
    """The first admitted name (in name order) that differs from ``words`` in exactly one word, both with a digit."""
    for other in sorted(numbered):
        if len(other) != len(words):
            continue
        differ = [i for i, (a, b) in enumerate(zip(words, other, strict=True)) if a != b]
        if len(differ) == 1 and all(any(c.isdigit() for c in w[differ[0]]) for w in (words, other)):
            return numbered[other]
    return None


def fold_entities(discovery: Discovery, registered: EntitiesFile | None = None) -> Folded:
    """The corpus's entities from the entities file and the admitted candidates (see the module docstring)."""
    folder = _Folder(discovery, registered)
    folder.acronyms()
    folder.others()
    folder.series()
    folder.bare_acronyms()
    entities = folder.entities()
    verdicts = tuple(folder.verdicts[c.key] for c in discovery.candidates if c.key in folder.verdicts)
    return Folded(entities, verdicts)


def _verdict_line(verdict: Verdict) -> bytes:
    c = verdict.candidate
    record = {
        "name": c.name,
        "kind": c.kind,
        "count": c.count,
        "documents": c.documents,
        "first_seen": c.first_seen,
        "forms": list(c.forms),
        "status": verdict.status,
        "entity": verdict.entity,
        "reason": verdict.reason,
    }
    return file_bytes(record).rstrip(b"\n")


def candidates_file_bytes(verdicts: Iterable[Verdict]) -> bytes:
    """Every candidate and its verdict, one to a line, most frequent first."""
    lines = [_verdict_line(v) for v in verdicts]
    listed = b"[\n  " + b",\n  ".join(lines) + b"\n]" if lines else b"[]"
    return b'{"candidates": ' + listed + b"}\n"


def _write(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        temporary.write_bytes(data)
        temporary.replace(path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise DocumentError(str(path), exc.strerror or "an unwritable place", "the file must be writable") from None


def suggest_entities(
    documents: Sequence[Document],
    out: Path,
    *,
    registered: EntitiesFile | None = None,
    overwrite: bool = False,
) -> tuple[Path, Path]:
    """Write an editable entities file at ``out`` and the candidate list beside it; return both paths.

    The entities file holds the registered entities, then what folding admitted, and the file's
    ``ignore`` list; ``<stem>.candidates.json`` holds every candidate with its count, documents,
    first sighting, surface forms and verdict. An existing ``out`` is refused unless ``overwrite``
    (a person's edits are not thrown away by accident).
    """
    sidecar = out.with_name(f"{out.stem}.candidates.json")
    for path in (out, sidecar):
        if path.exists() and not overwrite:
            raise DocumentError(str(path), "a file that exists", "suggestions never overwrite a file unless told to")
    folded = fold_entities(discover(documents), registered)
    ignore = registered.ignore if registered is not None else ()
    _write(out, entities_file_bytes(folded.entities, ignore))
    _write(sidecar, candidates_file_bytes(folded.verdicts))
    return out, sidecar

"""A document's entity candidates read by itself, and several documents' added together.

Incremental ingestion reads a changed document alone, so it cannot run
:func:`~contextmesh.knowledge.discovery.discover` over the folder. :func:`sightings` reads one
document by itself and keeps what adding it to the others needs: each candidate with every form
and its count (and whether the form's first word is written in lower case in that document), the
acronyms it defines, the capitalised runs that open its sentences — which are settled only once
every document is known, exactly as :func:`discover` settles them — and the words it capitalises
inside a sentence. :func:`combine` adds the sightings of several documents into one
:class:`~contextmesh.knowledge.discovery.Discovery`.

``combine([sightings(d)]) == discover([d])`` for every document ``d``. Over several documents the
two differ exactly where :func:`discover` lets one document's words change how another is read:
an acronym's expansion defined in one document is masked as one phrase in all of them, and a word
written in lower case in any document decides every phrase it opens (here: in the documents that
write the phrase). Everything else — counts, forms, first sightings, the settling of opening runs —
is the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# The collector's internals are this module's input: it runs the same passes on one document.
from contextmesh.core.errors import InputError
from contextmesh.knowledge.discovery import _KINDS, Candidate, Discovery, _Collector, _trim
from contextmesh.knowledge.documents import Document
from contextmesh.knowledge.text import normalize

__all__ = [
    "DocumentSightings",
    "OpeningRun",
    "Sighting",
    "combine",
    "sightings",
    "sightings_from_data",
    "sightings_to_data",
]


@dataclass(frozen=True)
class Sighting:
    """One candidate as one document writes it, with what adding it to other documents needs."""

    key: str
    kinds: tuple[str, ...]
    count: int
    inside: int
    prose: int
    in_phrase: int
    line: int
    # (form, times written, the form's first word is written in lower case in this document)
    forms: tuple[tuple[str, int, bool], ...]
    labels: int = 0  # of ``count``, in a title or heading


@dataclass(frozen=True)
class OpeningRun:
    """A capitalised run at a sentence's start, settled only once every document is known.

    ``lower`` says whether its first word, and the first word of the rest, are written in lower
    case in this document.
    """

    tokens: tuple[str, ...]
    line: int
    lower: tuple[bool, bool]
    label: bool = False  # read in a title or heading


@dataclass(frozen=True)
class DocumentSightings:
    """Every candidate of one document, read by itself, the acronyms it defines, its opening runs
    and the words it capitalises inside a sentence."""

    name: str
    sightings: tuple[Sighting, ...]
    definitions: tuple[tuple[str, tuple[str, ...]], ...]
    openings: tuple[OpeningRun, ...]
    named_inside: tuple[str, ...]


def sightings(document: Document) -> DocumentSightings:
    """The candidates of ``document`` read alone; its opening runs are left for :func:`combine`."""
    collector = _Collector([document])
    collector.first_pass()
    collector.second_pass()
    lower = collector.lower_words
    found = [
        Sighting(
            group.key,
            tuple(k for k in _KINDS if k in group.kinds),
            group.count,
            group.inside,
            group.prose,
            group.in_phrase,
            group.first[1],
            tuple((form, n, form.split()[0].lower() in lower) for form, n in group.forms.items()),
            group.labels,
        )
        for group in collector.groups.values()
    ]
    openings = []
    for tokens, _, _, line, label in collector.pending:
        rest = [token for _, token in _trim(list(enumerate(tokens))[1:])]
        flags = (tokens[0].lower() in lower, bool(rest) and rest[0].lower() in lower)
        openings.append(OpeningRun(tuple(tokens), line, flags, label))
    definitions = tuple((acronym, tuple(table.values())) for acronym, table in sorted(collector.expansions.items()))
    return DocumentSightings(
        document.name, tuple(found), definitions, tuple(openings), tuple(sorted(collector.named_inside))
    )


@dataclass
class _Sum:
    first: tuple[int, int]
    first_seen: str
    kinds: set[str] = field(default_factory=set)
    forms: dict[str, int] = field(default_factory=dict)
    lower_first: set[str] = field(default_factory=set)  # first words written in lower case where it occurs
    counts: list[int] = field(default_factory=lambda: [0, 0, 0, 0, 0])  # count, inside, prose, in_phrase, labels
    documents: set[str] = field(default_factory=set)


class _Sums:
    def __init__(self) -> None:
        self.by_key: dict[str, _Sum] = {}

    def add(self, sighting: Sighting, rank: int, name: str) -> None:
        where = (rank, sighting.line)
        total = self.by_key.setdefault(sighting.key, _Sum(where, f"{name}:{sighting.line}"))
        if where < total.first:
            total.first, total.first_seen = where, f"{name}:{sighting.line}"
        total.kinds.update(sighting.kinds)
        total.documents.add(name)
        values = (sighting.count, sighting.inside, sighting.prose, sighting.in_phrase, sighting.labels)
        for index, value in enumerate(values):
            total.counts[index] += value
        for form, count, lower in sighting.forms:
            total.forms[form] = total.forms.get(form, 0) + count
            if lower:
                total.lower_first.add(form.split()[0].lower())

    def settle(self, documents: Sequence[DocumentSightings]) -> None:
        """:meth:`_Collector.settle_initial_runs` over every document's opening runs."""
        inside = {key for key, total in self.by_key.items() if total.counts[1] and "phrase" in total.kinds}
        named_inside = {word for document in documents for word in document.named_inside}
        for rank, document in enumerate(documents):
            for run in document.openings:
                tokens = list(run.tokens)
                full, rest = " ".join(tokens), [token for _, token in _trim(list(enumerate(tokens))[1:])]
                if normalize(full) in inside or tokens[0] in named_inside:
                    surface, is_inside, lower = full, False, run.lower[0]
                elif len(rest) >= 2:
                    surface, is_inside, lower = " ".join(rest), True, run.lower[1]
                elif len(tokens) == 2:
                    surface, is_inside, lower = full, False, run.lower[0]
                else:
                    continue
                key = normalize(surface)
                if key:
                    sighting = Sighting(
                        key,
                        ("phrase",),
                        1,
                        int(is_inside and not run.label),
                        1,
                        0,
                        run.line,
                        ((surface, 1, lower),),
                        int(run.label),
                    )
                    self.add(sighting, rank, document.name)

    def candidates(self) -> list[Candidate]:
        out = []
        for key, total in self.by_key.items():
            forms = sorted(total.forms, key=lambda form: -total.forms[form])  # stable: first seen wins ties
            count, inside, prose, in_phrase, labels = total.counts
            out.append(
                Candidate(
                    forms[0],
                    key,
                    next(k for k in _KINDS if k in total.kinds),
                    count,
                    inside,
                    prose,
                    in_phrase,
                    forms[0].split()[0].lower() not in total.lower_first,
                    len(total.documents),
                    total.first_seen,
                    tuple(forms),
                    labels,
                )
            )
        out.sort(key=lambda c: (-c.count, c.name.casefold(), c.name))
        return out


def combine(documents: Sequence[DocumentSightings]) -> Discovery:
    """The candidates of several documents read one by one, their counts added, in name order."""
    ordered = sorted(documents, key=lambda d: d.name)
    sums = _Sums()
    expansions: dict[str, dict[str, str]] = {}
    for rank, document in enumerate(ordered):
        for acronym, surfaces in document.definitions:
            table = expansions.setdefault(acronym, {})
            for surface in surfaces:
                table.setdefault(normalize(surface), surface)
        for sighting in document.sightings:
            sums.add(sighting, rank, document.name)
    sums.settle(ordered)
    return Discovery(tuple(sums.candidates()), {a: tuple(table.values()) for a, table in sorted(expansions.items())})


def sightings_to_data(found: DocumentSightings) -> dict[str, Any]:
    """Plain JSON data for a revision's ``sightings`` attribute (the name is the revision's document)."""
    return {
        "candidates": [
            [
                s.key,
                list(s.kinds),
                s.count,
                s.inside,
                s.prose,
                s.in_phrase,
                s.line,
                [list(f) for f in s.forms],
                s.labels,
            ]
            for s in found.sightings
        ],
        "definitions": [[acronym, list(surfaces)] for acronym, surfaces in found.definitions],
        "openings": [[list(run.tokens), run.line, list(run.lower), run.label] for run in found.openings],
        "named_inside": list(found.named_inside),
    }


def _list(value: Any, where: str, size: int | None = None) -> list[Any]:
    if type(value) is not list or (size is not None and len(value) != size):
        shape = "a list" if size is None else f"a list of {size}"
        raise InputError(where, repr(value)[:80], f"{shape} is required")
    return value


def _text(value: Any, where: str) -> str:
    if type(value) is not str or not value:
        raise InputError(where, repr(value)[:80], "non-empty text is required")
    return value


def _count(value: Any, where: str) -> int:
    if type(value) is not int or value < 0:
        raise InputError(where, repr(value)[:80], "a count is required")
    return value


def _flag(value: Any, where: str) -> bool:
    if type(value) is not bool:
        raise InputError(where, repr(value)[:80], "true or false is required")
    return value


def _sighting(raw: Any, where: str) -> Sighting:
    key, kinds, count, inside, prose, in_phrase, line, forms, labels = _list(raw, where, 9)
    kind_list = tuple(_text(k, f"{where}[1][{i}]") for i, k in enumerate(_list(kinds, f"{where}[1]")))
    if not kind_list or any(k not in _KINDS for k in kind_list):
        raise InputError(f"{where}[1]", repr(kinds)[:80], f"kinds are some of {list(_KINDS)}")
    parsed_forms = []
    for j, form in enumerate(_list(forms, f"{where}[7]")):
        text, times, lower = _list(form, f"{where}[7][{j}]", 3)
        parsed_forms.append(
            (
                _text(text, f"{where}[7][{j}][0]"),
                _count(times, f"{where}[7][{j}][1]"),
                _flag(lower, f"{where}[7][{j}][2]"),
            )
        )
    if not parsed_forms:
        raise InputError(f"{where}[7]", "no form", "a candidate is written in at least one form")
    n, ins, pro, phr, at = (
        _count(v, f"{where}[{i + 2}]") for i, v in enumerate((count, inside, prose, in_phrase, line))
    )
    titled = _count(labels, f"{where}[8]")
    return Sighting(_text(key, f"{where}[0]"), kind_list, n, ins, pro, phr, at, tuple(parsed_forms), titled)


def sightings_from_data(name: str, value: Any, where: str) -> DocumentSightings:
    """The sightings a revision's attribute holds, checked strictly (a graph file is untrusted input)."""
    if type(value) is not dict or set(value) != {"candidates", "definitions", "openings", "named_inside"}:
        raise InputError(
            where, repr(value)[:80], "sightings are an object of candidates, definitions, openings, named_inside"
        )
    found = tuple(
        _sighting(raw, f"{where}.candidates[{i}]")
        for i, raw in enumerate(_list(value["candidates"], f"{where}.candidates"))
    )
    definitions = []
    for i, raw in enumerate(_list(value["definitions"], f"{where}.definitions")):
        acronym, surfaces = _list(raw, f"{where}.definitions[{i}]", 2)
        texts = tuple(
            _text(s, f"{where}.definitions[{i}][1][{j}]")
            for j, s in enumerate(_list(surfaces, f"{where}.definitions[{i}][1]"))
        )
        definitions.append((_text(acronym, f"{where}.definitions[{i}][0]"), texts))
    openings = []
    for i, raw in enumerate(_list(value["openings"], f"{where}.openings")):
        tokens, line, lower, label = _list(raw, f"{where}.openings[{i}]", 4)
        words = tuple(
            _text(w, f"{where}.openings[{i}][0][{j}]") for j, w in enumerate(_list(tokens, f"{where}.openings[{i}][0]"))
        )
        first, rest = _list(lower, f"{where}.openings[{i}][2]", 2)
        if not words:
            raise InputError(f"{where}.openings[{i}][0]", "no word", "an opening run has words")
        openings.append(
            OpeningRun(
                words,
                _count(line, f"{where}.openings[{i}][1]"),
                (_flag(first, f"{where}.openings[{i}][2][0]"), _flag(rest, f"{where}.openings[{i}][2][1]")),
                _flag(label, f"{where}.openings[{i}][3]"),
            )
        )
    named = tuple(
        _text(w, f"{where}.named_inside[{i}]")
        for i, w in enumerate(_list(value["named_inside"], f"{where}.named_inside"))
    )
    return DocumentSightings(name, found, tuple(definitions), tuple(openings), named)

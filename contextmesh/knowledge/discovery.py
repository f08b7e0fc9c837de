"""Entity candidates in the prose of the documents: phrases, acronyms, identifiers and names.

Discovery (:func:`discover`) looks at prose — sentences and table cells — and at the document's
title and headings (*labels*), never table headers. A label's Title Case would make every word a
name, so what it finds is counted apart (``labels``) and folding never admits a phrase, acronym or
name seen only in labels (:mod:`~contextmesh.knowledge.candidates`); a label only confirms what the
prose names. Label words never count as capitalised inside a sentence. It finds:

* **phrases**: runs of two to six capitalised words (``Kiruna Ground Station``), which may take
  a number or single capital after a word (``Pump 3``, ``Reservoir B``) and the connectors ``of``,
  ``the``, ``for`` … between words (``Bank of England``). A run at the start of a sentence loses
  its first word when that word is a function word or sentence adverb (``However``, ``The``), or
  when it is capitalised nowhere but at a sentence's start (a word after a colon counts as one)
  and the rest of the run is two words or more; month and day names are never part of a phrase;
* **acronyms** (:mod:`~contextmesh.knowledge.acronyms`), with the expansion the text defines for
  them; a defined expansion is then recognised wherever it is written, whole;
* **identifiers**: the content of a code span that is one identifier (``pass_scheduler``,
  ``config/antennas.yaml``), and words of ``snake_case`` or ``CamelCase`` shape in prose or in code
  blocks;
* **names**: single capitalised words inside a sentence, reported but never admitted on their own.

Candidates that fold into one are those the resolver could not tell apart anyway: the same
:func:`contextmesh.knowledge.text.normalize` form. Nothing else is merged.

Every candidate keeps its count, how many of them were inside a sentence, in prose (not a code
block) or inside a longer phrase, how many documents it is in, where it was first seen and every
surface form it was written in; :mod:`~contextmesh.knowledge.candidates` decides which become entities.

Incremental ingestion reads each document on its own: :mod:`~contextmesh.knowledge.sightings`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from contextmesh.knowledge.acronyms import acronym_of, find_definitions
from contextmesh.knowledge.documents import Document, Unit
from contextmesh.knowledge.sentences import SENTENCE_OPENERS
from contextmesh.knowledge.text import normalize

__all__ = ["Candidate", "Discovery", "compound_shape", "discover"]

_TOKEN = re.compile(r"[^\W_][\w'’]*(?:[-.][^\W_][\w'’]*)*")
_CODE_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MASK = "\u00a6"  # stands in for code and recognised expansions, so no phrase runs across them
_CONNECTORS = frozenset(["of", "the", "for", "de", "la", "du", "der", "van", "von", "da", "y"])
_CALENDAR = frozenset(
    str.split(
        """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday
    sunday"""
    )
)
_TAGGED = re.compile(r"[A-Z][A-Z0-9]*-[A-Z0-9]+(?:-[A-Z0-9]+)*")
_SNAKE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")
_CAMEL = re.compile(r"(?:[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]*)+)")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.\-/][A-Za-z0-9_]+)*")
_VERSION = re.compile(r"[vV]?[0-9]+(?:\.[0-9]+)*")
_LITERALS = frozenset(["true", "false", "null", "none", "nil", "yes", "no", "on", "off", "nan"])
_SUFFIX_OF_TOKEN = re.compile(r"['’]s$")
_MAX_PHRASE = 6
_KINDS = ("acronym", "identifier", "phrase", "name")


@dataclass
class _Group:
    key: str
    forms: dict[str, int] = field(default_factory=dict)
    kinds: set[str] = field(default_factory=set)
    count: int = 0
    inside: int = 0  # occurrences not at a sentence's start
    prose: int = 0  # identifier occurrences outside code blocks
    in_phrase: int = 0  # occurrences as a word of a longer capitalised phrase
    labels: int = 0  # occurrences in a title or heading (also counted in ``count``)
    documents: dict[str, None] = field(default_factory=dict)
    first: tuple[int, int] = (1 << 30, 0)
    first_seen: str = ""


@dataclass(frozen=True)
class Candidate:
    """A surface form found in the documents, with how often, where first and what kind."""

    name: str
    key: str
    kind: str
    count: int
    inside: int
    prose: int
    in_phrase: int
    proper_start: bool  # its first word is never written in lower case in the documents
    documents: int
    first_seen: str
    forms: tuple[str, ...]
    labels: int = 0  # how many of ``count`` were in a title or heading


@dataclass(frozen=True)
class Discovery:
    """Every candidate (most frequent first), and each acronym's distinct expansions."""

    candidates: tuple[Candidate, ...]
    expansions: dict[str, tuple[str, ...]]


def _is_word_name(token: str) -> bool:
    return token[:1].isupper() and not token.isupper() and token.lower() not in _CALENDAR


def _is_name_token(token: str) -> bool:
    return _is_word_name(token) or acronym_of(token) is not None or _TAGGED.fullmatch(token) is not None


def _is_tail_token(token: str) -> bool:
    """A number or single capital that may follow a name word: ``Pump 3``, ``Reservoir B``."""
    return token.isdigit() or (len(token) == 1 and token.isupper())


def _trim(run: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A run without connectors at either end: "the Svalbard Ground Station" → "Svalbard Ground Station"."""
    start, end = 0, len(run)
    while start < end and run[start][1] in _CONNECTORS:
        start += 1
    while end > start and run[end - 1][1] in _CONNECTORS:
        end -= 1
    return run[start:end]


def _identifier_shaped(token: str) -> bool:
    """``snake_case``, ``CamelCase`` (four characters or more: ``dB`` and ``kWh`` are units) or ``GS-2``."""
    if _SNAKE.fullmatch(token) or _TAGGED.fullmatch(token):
        return True
    return len(token) >= 4 and _CAMEL.fullmatch(token) is not None


def _code_identifier(text: str) -> str | None:
    text = text.strip()
    text = text.removesuffix("()")
    if not 2 <= len(text) <= 64 or _IDENTIFIER.fullmatch(text) is None or _VERSION.fullmatch(text):
        return None
    if text.lower() in _LITERALS or not any(char.isalpha() for char in text):
        return None
    return text


def compound_shape(identifier: str) -> bool:
    """True for an identifier with a ``_``, ``-``, ``.`` or ``/``, an inner capital, or letters and digits."""
    if any(char in identifier for char in "_-./"):
        return True
    inner_capital = any(a.islower() and b.isupper() for a, b in itertools.pairwise(identifier))
    return inner_capital or (any(c.isdigit() for c in identifier) and any(c.isalpha() for c in identifier))


class _Collector:
    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = documents
        self.groups: dict[str, _Group] = {}
        self.expansions: dict[str, dict[str, str]] = {}  # acronym → normalised expansion → surface
        self.named_inside: set[str] = set()  # words capitalised somewhere other than a sentence's start
        self.lower_words: set[str] = set()  # words written in lower case somewhere
        # initial runs: tokens, doc index, name, line, read in a title or heading
        self.pending: list[tuple[list[str], int, str, int, bool]] = []
        self.labelling = False  # reading a title or heading now
        self.openers: set[int] = set()  # token indices of the unit being read that open a sentence

    def add(
        self,
        surface: str,
        kind: str,
        where: tuple[int, str, int],
        *,
        inside: bool,
        prose: bool = True,
        in_phrase: bool = False,
    ) -> None:
        key = normalize(surface)
        if not key:
            return
        index, name, line = where
        group = self.groups.setdefault(key, _Group(key))
        group.forms[surface] = group.forms.get(surface, 0) + 1
        group.kinds.add(kind)
        group.count += 1
        group.inside += inside and not self.labelling  # a title or heading is not a sentence
        group.prose += prose
        group.in_phrase += in_phrase
        group.labels += self.labelling
        group.documents.setdefault(name)
        if (index, line) < group.first:
            group.first, group.first_seen = (index, line), f"{name}:{line}"

    def first_pass(self) -> None:
        for document in self.documents:
            for unit in document.units:
                for definition in find_definitions(unit.text):
                    table = self.expansions.setdefault(definition.acronym, {})
                    table.setdefault(normalize(definition.expansion), definition.expansion)
                tokens = _TOKEN.findall(unit.text)
                self.named_inside.update(t for t in tokens[1:] if _is_word_name(t))
                self.lower_words.update(t for t in tokens if t.islower())

    def expansion_pattern(self) -> re.Pattern[str] | None:
        surfaces = sorted({s for table in self.expansions.values() for s in table.values()}, key=lambda s: (-len(s), s))
        if not surfaces:
            return None
        words = (r"\s+".join(re.escape(w) for w in s.split()) for s in surfaces)
        return re.compile(r"(?<!\w)(?:" + "|".join(words) + r")(?!\w)", re.IGNORECASE)

    def second_pass(self) -> None:
        expansions = self.expansion_pattern()
        for index, document in enumerate(self.documents):
            for unit in document.units:
                self.unit(unit, (index, document.name, unit.line), expansions)
            self.labelling = True
            for unit in document.labels:
                self.unit(unit, (index, document.name, unit.line), expansions)
            self.labelling = False
            for line, code in document.code:
                for token in _CODE_TOKEN.findall(code):
                    if _identifier_shaped(token):
                        self.add(token, "identifier", (index, document.name, line), inside=True, prose=False)

    def unit(self, unit: Unit, where: tuple[int, str, int], expansions: re.Pattern[str] | None) -> None:
        """Code identifiers, defined expansions, then the tokens of one stretch of text."""
        chars = list(unit.text)
        for start, end in unit.code:
            identifier = _code_identifier(unit.text[start:end])
            if identifier is not None:
                self.add(identifier, "identifier", where, inside=True)
            chars[start:end] = _MASK * (end - start)
        masked = "".join(chars)
        if expansions is not None:
            for match in expansions.finditer(masked):
                self.add(" ".join(match.group().split()), "phrase", where, inside=True)
                chars[match.start() : match.end()] = _MASK * (match.end() - match.start())
            masked = "".join(chars)
        self.tokens(masked, where)

    def tokens(self, text: str, where: tuple[int, str, int]) -> None:
        matches = list(_TOKEN.finditer(text))
        singles: list[tuple[int, str, str]] = []  # (token index, surface, kind) of acronyms and identifiers
        covered: set[int] = set()  # token indices inside a phrase
        run: list[tuple[int, str]] = []  # (token index, token)
        # A word opens a sentence at the start, and after a colon: "Ingrid: Were the elements fresh?"
        self.openers = {0} | {
            i for i in range(1, len(matches)) if ":" in text[matches[i - 1].end() : matches[i].start()]
        }
        for position, match in enumerate(matches):
            token = _SUFFIX_OF_TOKEN.sub("", match.group())
            acronym = acronym_of(token)
            if acronym is not None:
                singles.append((position, acronym, "acronym"))
            elif _identifier_shaped(token):
                singles.append((position, token, "identifier"))
            adjacent = bool(run) and text[matches[position - 1].end() : match.start()].isspace()
            adjacent = adjacent and not matches[position - 1].group().endswith(("'s", "’s"))
            if run and not adjacent:
                covered.update(self.phrase(run, where))
                run = []
            if _is_name_token(token) or (run and (_is_tail_token(token) or token in _CONNECTORS)):
                run.append((position, token))
            elif run:
                covered.update(self.phrase(run, where))
                run = []
        if run:
            covered.update(self.phrase(run, where))
        for position, surface, kind in singles:
            inside = position not in self.openers or kind == "identifier"
            self.add(surface, kind, where, inside=inside, in_phrase=position in covered)

    def phrase(self, run: list[tuple[int, str]], where: tuple[int, str, int]) -> list[int]:
        """Record the phrase ``run`` makes, if any; return the token indices it covers."""
        run = _trim(run)
        initial = bool(run) and run[0][0] in self.openers
        if initial:
            while run and run[0][1].lower() in SENTENCE_OPENERS:
                run, initial = _trim(run[1:]), False
        tokens = [token for _, token in run]
        names = [t for t in tokens if t not in _CONNECTORS and not _is_tail_token(t)]
        if len(tokens) == 1 and names and not initial and _is_word_name(tokens[0]):
            if not _identifier_shaped(tokens[0]) and len(tokens[0]) >= 3:
                self.add(tokens[0], "name", where, inside=True)
            return []
        if len(tokens) < 2 or len(tokens) > _MAX_PHRASE or not any(_is_word_name(t) for t in names):
            return []
        if initial:
            self.pending.append((tokens, where[0], where[1], where[2], self.labelling))
        else:
            self.add(" ".join(tokens), "phrase", where, inside=True)
        return [position for position, _ in run]

    def settle_initial_runs(self) -> None:
        """A run at a sentence's start keeps its first word only when that word is evidently a name."""
        inside = {key for key, group in self.groups.items() if group.inside and "phrase" in group.kinds}
        for tokens, index, name, line, label in self.pending:
            where = (index, name, line)
            self.labelling = label
            full, rest = " ".join(tokens), [token for _, token in _trim(list(enumerate(tokens))[1:])]
            if normalize(full) in inside or tokens[0] in self.named_inside:
                self.add(full, "phrase", where, inside=False)
            elif len(rest) >= 2:
                self.add(" ".join(rest), "phrase", where, inside=True)
            elif len(tokens) == 2:
                self.add(full, "phrase", where, inside=False)
        self.labelling = False

    def discovery(self) -> Discovery:
        candidates = []
        for group in self.groups.values():
            forms = sorted(group.forms, key=lambda form: -group.forms[form])  # stable: first seen wins ties
            kind = next(k for k in _KINDS if k in group.kinds)
            candidates.append(
                Candidate(
                    forms[0],
                    group.key,
                    kind,
                    group.count,
                    group.inside,
                    group.prose,
                    group.in_phrase,
                    forms[0].split()[0].lower() not in self.lower_words,
                    len(group.documents),
                    group.first_seen,
                    tuple(forms),
                    group.labels,
                )
            )
        candidates.sort(key=lambda c: (-c.count, c.name.casefold(), c.name))
        expansions = {a: tuple(table.values()) for a, table in sorted(self.expansions.items())}
        return Discovery(tuple(candidates), expansions)


def discover(documents: Sequence[Document]) -> Discovery:
    """Entity candidates in ``documents`` (read in the order given: first sightings follow it)."""
    collector = _Collector(documents)
    collector.first_pass()
    collector.second_pass()
    collector.settle_initial_runs()
    return collector.discovery()

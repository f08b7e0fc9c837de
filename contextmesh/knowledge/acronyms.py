"""Acronyms and the expansions a text defines for them.

An acronym is a word of two to eight characters, capital letters and digits, at least two of them
letters and the first a letter (``SCADA``, ``LNA``, ``S3`` is not one: one letter), optionally
with a plural ``s`` (``APIs``), and not one of the words that are written in capitals without
naming anything: units (``ML``, ``MHz`` is not in capitals anyway, ``KB``), time zones (``UTC``),
Roman numerals, and shouting (``NOTE``, ``TODO``, ``NOT``).

A text *defines* an acronym in either order, with the parentheses:

* ``Supervisory Control and Data Acquisition (SCADA)`` — the words right before the parenthesis;
* ``SCADA (Supervisory Control and Data Acquisition)`` — the words inside it;

when the acronym's letters are, in order, the initials of those words — each word giving its
first letter, or a hyphenated word one letter per part (``Write-Ahead Log (WAL)``) — and the only
words skipped are small connectors (``of``, ``and``, ``the``, ``for`` …). A phrase whose initials
do not line up is no definition, so ``the new pump (LNA)`` defines nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

__all__ = ["Definition", "acronym_of", "find_definitions"]

_ACRONYM = re.compile(r"([A-Z][A-Z0-9]{1,7})s?")
_CONNECTORS = frozenset(["of", "and", "the", "for", "to", "in", "on", "a", "an", "&", "de", "at", "by", "with"])
_NOT_ACRONYMS = frozenset(
    str.split(
        """
    AM PM UTC GMT CET CEST EST EDT PST PDT BST IST JST AEST
    KB MB GB TB PB KIB MIB GIB TIB KW MW GW KWH MWH GWH ML GL KL HZ KHZ MHZ GHZ RPM PSI DB DBM DBI
    II III IV VI VII VIII IX XI XII XIII XIV XV XX
    OK NOTE TODO FIXME TBD NB PS FYI ASAP NOT AND OR THE ALL NO YES NEW IMPORTANT WARNING CAUTION DANGER
    AD BC CEO CTO CFO VP HR IT QA
    """
    )
)
_DEFINED_AFTER = re.compile(r"\(([A-Z][A-Z0-9]{1,7})s?\)")
_DEFINED_BEFORE = re.compile(r"\b([A-Z][A-Z0-9]{1,7})s? \(([^()]{3,120})\)")
_WORD = re.compile(r"[^\W_][\w'’]*(?:-[^\W_][\w'’]*)*")
_MAX_WORDS = 12


@dataclass(frozen=True)
class Definition:
    """An acronym, the expansion the text gives it, and where in the text the definition starts."""

    acronym: str
    expansion: str
    start: int


def acronym_of(token: str) -> str | None:
    """The acronym ``token`` is (its plural ``s`` dropped), or ``None``."""
    match = _ACRONYM.fullmatch(token)
    if match is None:
        return None
    acronym = match.group(1)
    if sum(char.isalpha() for char in acronym) < 2 or acronym in _NOT_ACRONYMS:
        return None
    return acronym


def _initials(word: str) -> tuple[str, ...]:
    parts = [part for part in word.split("-") if part]
    return tuple(part[0].lower() for part in parts)


def _lines_up(letters: str, words: tuple[str, ...]) -> bool:
    """True when ``letters`` are the initials of ``words`` in order, connectors optional."""

    @cache
    def match(li: int, wi: int) -> bool:
        if wi == len(words):
            return li == len(letters)
        word = words[wi]
        if word.lower() in _CONNECTORS and match(li, wi + 1):
            return True
        options = {_initials(word), (word[0].lower(),)}
        return any(letters.startswith("".join(opt), li) and match(li + len(opt), wi + 1) for opt in options)

    return match(0, 0)


def _expansion_before(text: str, end: int, letters: str) -> tuple[str, int] | None:
    words = list(_WORD.finditer(text, max(0, end - 400), end))[-_MAX_WORDS:]
    if words and words[-1].end() != len(text[:end].rstrip()):
        return None  # something other than a word stands right before the parenthesis
    for first in range(len(words) - 1, -1, -1):
        chosen = tuple(w.group() for w in words[first:])
        if chosen[0].lower() in _CONNECTORS:
            continue
        if _lines_up(letters, chosen):
            return text[words[first].start() : words[-1].end()], words[first].start()
    return None


def find_definitions(text: str) -> list[Definition]:
    """Every acronym definition in ``text``, in order."""
    found = []
    for match in _DEFINED_AFTER.finditer(text):
        acronym = acronym_of(match.group(1))
        if acronym is None or not acronym.isalpha():
            continue
        expansion = _expansion_before(text, match.start(), acronym.lower())
        if expansion is not None:
            found.append(Definition(acronym, expansion[0], expansion[1]))
    for match in _DEFINED_BEFORE.finditer(text):
        acronym = acronym_of(match.group(1))
        if acronym is None or not acronym.isalpha():
            continue
        words = tuple(w.group() for w in _WORD.finditer(match.group(2)))
        inner = " ".join(match.group(2).split())
        plain = bool(words) and len(words) <= _MAX_WORDS and len(inner) == len(" ".join(words))
        if plain and words[0].lower() not in _CONNECTORS and _lines_up(acronym.lower(), words):
            found.append(Definition(acronym, inner, match.start()))
    return sorted(found, key=lambda d: d.start)

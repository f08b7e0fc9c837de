"""Lexical evidence: Okapi BM25 over a node's headline and body, in plain Python.

A walk's candidates are few (tens to hundreds), but the weight of a word — how much it tells
apart — is a property of the whole collection, so :class:`Bm25` indexes every document once and
scores any subset of them against a query. The field weighting is BM25F-style: a term in the
headline counts :data:`HEADLINE_WEIGHT` times, a term in the body once, a term of the *context*
(text that is some other document's headline: a neighbouring sentence) :data:`CONTEXT_WEIGHT`
times, and the length normalisation uses the weighted length, so a long body cannot drown a
short headline.

:meth:`Bm25.coverage` is the calibrated form a walk scores with: a document's BM25 score divided
by the score an ideal document would get (every query term once, at average length), so it reads
as "the share of the question's information this text holds", comparable across questions.

Why our own and not ``bm25s``: see ``docs/adr/0013-lexical-evidence.md`` (the core stays free of
numpy and scipy; on the question sets the two rank the same spans).

Invariants:

1. Scores are a pure function of the documents, their order and the query (no hash seed: terms
   are counted in dicts filled in document order, never by iterating a set).
2. A term that no document holds adds nothing to any score but counts in :meth:`Bm25.ideal`; an
   empty query scores 0 everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from contextmesh.knowledge.text import content_stems

__all__ = ["CONTEXT_WEIGHT", "HEADLINE_WEIGHT", "K1", "B", "Bm25", "LexicalDocument", "fold", "terms_of"]

K1 = 1.2
B = 0.75
HEADLINE_WEIGHT = 2.0
CONTEXT_WEIGHT = 0.3


_SUFFIXES = ("ing", "ed", "ly", "es", "e", "s")
PREFIX = 6


def fold(stem: str) -> str:
    """One more suffix off a stem, for matching only: ``keyed`` and ``key``, ``rebuilding`` and ``rebuild`` meet.

    The shared stemmer (:func:`~contextmesh.knowledge.text.stem`) stops at plurals and irregular
    verbs on purpose (a resolver must not merge two names); lexical evidence can be looser,
    because a word match only adds to a score.
    """
    for suffix in _SUFFIXES:
        if stem.endswith(suffix) and len(stem) - len(suffix) >= 3:
            stem = stem[: -len(suffix)]
            break
    return stem[:PREFIX]


def terms_of(text: str) -> tuple[str, ...]:
    """The folded content stems of ``text``, in order, repeats kept."""
    return tuple(fold(stem) for stem in content_stems(text))


@dataclass(frozen=True)
class LexicalDocument:
    """One indexed text: its key, the terms of its headline and the terms of its body."""

    key: str
    headline: tuple[str, ...]
    body: tuple[str, ...] = ()
    context: tuple[str, ...] = ()


class Bm25:
    """BM25F over documents with a headline and a body field; keys are returned in index order."""

    def __init__(
        self,
        documents: Iterable[LexicalDocument],
        *,
        k1: float = K1,
        b: float = B,
        headline_weight: float = HEADLINE_WEIGHT,
        context_weight: float = CONTEXT_WEIGHT,
    ) -> None:
        self.k1 = k1
        self.b = b
        self._ideal_tf = headline_weight * (k1 + 1.0) / (headline_weight + k1)
        self._tf: dict[str, dict[str, float]] = {}
        self._length: dict[str, float] = {}
        frequency: dict[str, int] = {}
        for document in documents:
            counts: dict[str, float] = {}
            for term in document.headline:
                counts[term] = counts.get(term, 0.0) + headline_weight
            for term in document.body:
                counts[term] = counts.get(term, 0.0) + 1.0
            for term in document.context:
                counts[term] = counts.get(term, 0.0) + context_weight
            self._tf[document.key] = counts
            self._length[document.key] = (
                headline_weight * len(document.headline) + len(document.body) + context_weight * len(document.context)
            )
            for term in counts:
                frequency[term] = frequency.get(term, 0) + 1
        count = len(self._tf)
        self.average_length = (sum(self._length.values()) / count) if count else 0.0
        # The "plus" idf (Lucene's): never negative, so a term most documents hold still counts a little.
        self._idf = {term: math.log(1.0 + (count - n + 0.5) / (n + 0.5)) for term, n in frequency.items()}
        # A query term no document holds weighs what a term held by none would: it is information the
        # question asks for that nothing here carries, so it lowers every document's coverage alike.
        self._unseen = math.log(1.0 + (count + 0.5) / 0.5) if count else 0.0

    def __len__(self) -> int:
        return len(self._tf)

    def __contains__(self, key: object) -> bool:
        return key in self._tf

    def idf(self, term: str) -> float:
        """How much ``term`` tells documents apart (0 for a term no document holds)."""
        return self._idf.get(term, 0.0)

    def score(self, key: str, query: Sequence[str]) -> float:
        """The BM25 score of one document; each distinct query term counts once."""
        counts = self._tf.get(key)
        if not counts:
            return 0.0
        norm = self.k1 * (1.0 - self.b + self.b * self._length[key] / (self.average_length or 1.0))
        total = 0.0
        for term in dict.fromkeys(query):
            tf = counts.get(term)
            if tf:
                total += self._idf[term] * tf * (self.k1 + 1.0) / (tf + norm)
        return total

    def matched(self, key: str, query: Sequence[str]) -> int:
        """How many distinct query terms the document holds."""
        counts = self._tf.get(key, {})
        return sum(1 for term in dict.fromkeys(query) if term in counts)

    def held(self, key: str, query: Sequence[str]) -> tuple[str, ...]:
        """The distinct query terms the document holds, in query order."""
        counts = self._tf.get(key, {})
        return tuple(term for term in dict.fromkeys(query) if term in counts)

    def ideal(self, query: Sequence[str]) -> float:
        """The score of an average-length document holding every query term once in its headline.

        A term no document holds counts at the weight of a term held by none, so a question about
        something the collection never mentions cannot reach full coverage on its other words.
        """
        return self._ideal_tf * sum(self._idf.get(term, self._unseen) for term in dict.fromkeys(query))

    def coverage(self, key: str, query: Sequence[str]) -> float:
        """:meth:`score` over :meth:`ideal`, at most 1: the share of the query the document holds.

        Capped because repeating a word is not holding more of the question.
        """
        ideal = self.ideal(query)
        return min(1.0, self.score(key, query) / ideal) if ideal > 0.0 else 0.0

    def top(self, query: Sequence[str], k: int, keys: Iterable[str] | None = None) -> list[str]:
        """The ``k`` best keys by score (ties in index order), over ``keys`` or every document."""
        pool = list(self._tf) if keys is None else [key for key in keys if key in self._tf]
        ranked = sorted(range(len(pool)), key=lambda i: (-self.score(pool[i], query), i))
        return [pool[i] for i in ranked[:k]]

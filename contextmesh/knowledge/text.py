"""Words, stems and token estimates: the one tokenizer every knowledge module shares.

Invariants:

1. Tokenizing is a pure function of the text (no locale, no hash seed).
2. ``stem`` folds case, a possessive ``'s``, a plain plural and the past forms of common irregular
   verbs (``ran`` → ``run``), and nothing more, so two surface forms meet only when a reader would
   agree they are the same word. It is idempotent, so ``normalize`` is too.
3. ``estimate_tokens`` is words × 1.3, rounded, over whitespace-separated words: the same rule for
   a walk's path and for the flat baseline it is compared with.
"""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "content_stems", "estimate_tokens", "normalize", "stem", "words"]

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’_-][A-Za-z0-9]+)*")
_SEPARATORS = re.compile(r"[_\-/]+")

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "down",
        "during",
        "each",
        "else",
        "every",
        "few",
        "for",
        "from",
        "further",
        "get",
        "got",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "last",
        "let",
        "like",
        "made",
        "make",
        "many",
        "may",
        "me",
        "might",
        "more",
        "most",
        "much",
        "must",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "one",
        "only",
        "or",
        "other",
        "our",
        "out",
        "over",
        "own",
        "per",
        "same",
        "shall",
        "she",
        "should",
        "since",
        "so",
        "some",
        "still",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "very",
        "via",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "within",
        "without",
        "would",
        "yet",
        "you",
        "your",
    ]
)


def words(text: str) -> list[str]:
    """Word tokens as written (case kept), hyphenated and underscored words kept whole."""
    return _WORD.findall(text)


_IRREGULAR = {
    "ran": "run",
    "went": "go",
    "gone": "go",
    "broke": "break",
    "broken": "break",
    "grew": "grow",
    "grown": "grow",
    "fell": "fall",
    "fallen": "fall",
    "held": "hold",
    "kept": "keep",
    "made": "make",
    "took": "take",
    "taken": "take",
    "gave": "give",
    "given": "give",
    "rose": "rise",
    "risen": "rise",
    "led": "lead",
    "left": "leave",
    "lost": "lose",
    "met": "meet",
    "paid": "pay",
    "sent": "send",
    "spent": "spend",
    "told": "tell",
    "won": "win",
    "wrote": "write",
    "written": "write",
    "began": "begin",
    "begun": "begin",
    "chose": "choose",
    "chosen": "choose",
    "knew": "know",
    "known": "know",
    "saw": "see",
    "seen": "see",
    "sold": "sell",
    "stood": "stand",
    "built": "build",
    "brought": "bring",
    "caught": "catch",
    "fed": "feed",
    "felt": "feel",
    "found": "find",
    "heard": "hear",
    "meant": "mean",
    "threw": "throw",
    "thrown": "throw",
    "shrank": "shrink",
    "shrunk": "shrink",
    "hit": "hit",
    "cut": "cut",
    "put": "put",
    "set": "set",
}


def stem(word: str) -> str:
    """Lower case, no possessive, no plain plural: ``Builder's`` → ``builder``, ``Maps`` → ``map``."""
    token = word.lower().replace("’", "'")
    if token.endswith("'s"):
        token = token[:-2]
    token = token.replace("'", "")
    if token in _IRREGULAR:
        return _IRREGULAR[token]
    if len(token) > 4 and token.endswith("ies"):
        token = token[:-3] + "y"
    elif len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        token = token[:-1]
    # Map again after the plural is gone, so stem(stem(w)) == stem(w): "leds" → "led" → "lead".
    return _IRREGULAR.get(token, token)


def normalize(surface: str) -> str:
    """A surface form folded for comparison: stems joined by single spaces, separators split."""
    return " ".join(stem(part) for word in words(surface) for part in _SEPARATORS.split(word) if part)


def content_stems(text: str) -> list[str]:
    """Stems of the words that carry meaning (stop words dropped), in order, repeats kept."""
    out = []
    for word in words(text):
        for part in _SEPARATORS.split(word):
            if part.lower() in STOPWORDS:  # before stemming: "does" would become "doe"
                continue
            token = stem(part)
            if token and token not in STOPWORDS:
                out.append(token)
    return out


def estimate_tokens(text: str) -> int:
    """Tokens ≈ whitespace words × 1.3, rounded half to even."""
    return round(len(text.split()) * 1.3)

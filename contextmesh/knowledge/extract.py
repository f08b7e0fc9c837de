"""EXTRACT's rule: when a span of text asserts something and so becomes a claim.

A span asserts something when all of these hold (checked in this order; the first that fails is
the recorded reason for the drop):

1. it ends with a full stop (a question, a heading or a fragment does not);
2. it contains no question mark anywhere;
3. it has at least six words (a label such as "Action items" or "Thanks all." does not);
4. it does not open with a marker of a note to self or of conversation filler
   (``TODO``, ``FIXME``, ``TBD``, ``Thanks``, ``Hi``, ``Hello``, ``Ok``, ``Cheers``, ``Note to self``);
5. it has a verb-like word: a word of four or more letters ending in ``s``, ``ed`` or ``en``, one of
   a list of common and irregular verb forms (``is``, ``was``, ``has``, ``can``, ``must``, ``ran``,
   ``cut``, ``grew``…), or an opening instruction verb (``Check``, ``Run``, ``Keep``…) — a string of
   nouns with a full stop does not assert anything.

The rule is deliberately shallow and written down, so a reader can predict every drop; the
negative examples in ``tests/test_extract.py`` are the cases it exists to refuse.
"""

from __future__ import annotations

import re

from contextmesh.knowledge.text import words

__all__ = ["MIN_WORDS", "drop_reason"]

MIN_WORDS = 6
_FILLER = re.compile(r"^\s*(todo|fixme|tbd|thanks|thank you|hi|hello|ok|okay|cheers|note to self)\b", re.IGNORECASE)
_COMMON_VERBS = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "has",
        "have",
        "had",
        "can",
        "could",
        "will",
        "would",
        "should",
        "must",
        "may",
        "might",
        "does",
        "do",
        "did",
        "runs",
        "run",
        "keeps",
        "kept",
        "holds",
        "held",
        "needs",
        "need",
        "uses",
        "use",
        "makes",
        "made",
        "takes",
        "took",
        "gets",
        "got",
        "goes",
        "went",
        "ran",
        "cut",
        "put",
        "set",
        "hit",
        "grew",
        "fell",
        "rose",
        "broke",
        "gave",
        "led",
        "left",
        "lost",
        "met",
        "paid",
        "read",
        "sent",
        "shut",
        "spent",
        "split",
        "told",
        "won",
        "wrote",
        "began",
        "chose",
        "fit",
        "knew",
        "saw",
        "sold",
        "stood",
        "built",
        "brought",
        "caught",
        "fed",
        "felt",
        "found",
        "heard",
        "meant",
        "threw",
        "check",
        "keep",
        "stop",
        "start",
        "add",
        "avoid",
        "page",
        "restart",
        "rerun",
        "wait",
    ]
)


def _has_verb(tokens: list[str]) -> bool:
    for token in tokens:
        lower = token.lower()
        if lower in _COMMON_VERBS:
            return True
        if len(lower) >= 4 and lower.isalpha() and lower.endswith(("s", "ed", "en")):
            return True
    return False


def drop_reason(text: str) -> str | None:
    """Why ``text`` does not assert anything, or ``None`` when it is a claim."""
    stripped = text.strip()
    if not stripped.endswith("."):
        return "does not end with a full stop"
    if "?" in stripped:
        return "contains a question"
    tokens = words(stripped)
    if len(tokens) < MIN_WORDS:
        return f"has {len(tokens)} words, fewer than {MIN_WORDS}"
    if _FILLER.match(stripped):
        return "opens with a note-to-self or filler marker"
    if not _has_verb(tokens):
        return "has no verb-like word"
    return None

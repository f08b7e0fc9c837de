"""Content-slug ids and the grammar of registry keys.

A slug id reads as what it names and still tells apart two things with the same readable body:
``<prefix>:<body>-<hash6>``, where ``body`` is the text lower-cased with every run of characters
outside ``[a-z0-9]`` folded to ``-`` and cut to 40 characters, and ``hash6`` the first six hex
digits of SHA-1 over the text exactly as given (``slug("pgvector", "entity")`` is
``entity:pgvector-6db608``). Edge ids are derived from ``src|type|dst`` the same way, so a
restored edge's id can be recomputed and checked.

Invariants:

1. ``slug`` is a pure function of its text and prefix (no hash seed, no clock).
2. Automatically minted decision ids live under :data:`AUTO_DECISION_PREFIX`; no explicit id may.
3. A registry key is non-empty text of at most :data:`MAX_KEY_LENGTH` characters with no
   whitespace and no control characters, so it survives a log line, a shell word and a diff.
"""

from __future__ import annotations

import re
import unicodedata

from contextmesh.core.canonical import text_hash

__all__ = [
    "AUTO_DECISION_PREFIX",
    "MAX_KEY_LENGTH",
    "edge_id",
    "is_auto_decision_id",
    "key_problem",
    "slug",
]

AUTO_DECISION_PREFIX = "decision:auto:"
MAX_KEY_LENGTH = 200
_BODY_LIMIT = 40
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str, prefix: str) -> str:
    """``<prefix>:<readable body>-<first 6 hex of SHA-1(text)>``."""
    body = _NOT_SLUG.sub("-", text.lower()).strip("-")[:_BODY_LIMIT].rstrip("-") or "x"
    return f"{prefix}:{body}-{text_hash(text, 6)}"


def edge_id(src: str, edge_type: str, dst: str) -> str:
    """The one id an edge of this type between these endpoints can have."""
    return slug(f"{src}|{edge_type}|{dst}", "edge")


def is_auto_decision_id(node_id: str) -> bool:
    """True for ids in the automatically minted decision namespace (a plain prefix)."""
    return node_id.startswith(AUTO_DECISION_PREFIX)


def key_problem(key: object) -> str | None:
    """Why ``key`` is not a valid worker or auditor key, or ``None`` when it is."""
    if not isinstance(key, str):
        return f"a key must be text, not {type(key).__name__}"
    if not key:
        return "a key must not be empty"
    if len(key) > MAX_KEY_LENGTH:
        return f"a key is at most {MAX_KEY_LENGTH} characters, this one has {len(key)}"
    for char in key:
        if char.isspace():
            return f"a key may not contain whitespace (found {char!r})"
        if unicodedata.category(char) in {"Cc", "Cf"}:
            return f"a key may not contain control characters (found {char!r})"
    return None

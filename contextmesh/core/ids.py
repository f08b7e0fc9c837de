"""Content-slug ids and the grammar of registry keys.

A slug id reads as what it names and still tells apart two things with the same readable body:
``<prefix>:<body>-<hash6>``, where ``body`` is the text lower-cased with every run of characters
outside ``[a-z0-9]`` folded to ``-`` and cut to 40 characters, and ``hash6`` the first six hex
digits of SHA-1 over the text exactly as given (``slug("pgvector", "entity")`` is
``entity:pgvector-6db608``). An edge's id is ``edge:<body>-<S><T><D>``: the body of
``src|type|dst`` as a slug's, then :data:`NODE_TAIL` hex digits of SHA-1 over the source's id,
:data:`TYPE_TAIL` over the edge type and :data:`NODE_TAIL` over the target's id (ADR 0021). Every
part is a function of one node id or one type, so a loader derives each once per node, not once
per edge, and two distinct triples share an id only if two node ids share 64 bits of SHA-1.

Invariants:

1. ``slug`` is a pure function of its text and prefix (no hash seed, no clock).
2. Automatically minted decision ids live under :data:`AUTO_DECISION_PREFIX`; no explicit id may.
3. A registry key is non-empty text of at most :data:`MAX_KEY_LENGTH` characters with no
   whitespace and no control characters, so it survives a log line, a shell word and a diff.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from contextmesh.core.canonical import text_hash

__all__ = [
    "AUTO_DECISION_PREFIX",
    "EDGE_ID",
    "MAX_KEY_LENGTH",
    "NODE_TAIL",
    "TYPE_TAIL",
    "edge_body",
    "edge_id",
    "edge_id_from_parts",
    "fold",
    "is_auto_decision_id",
    "key_problem",
    "long_body",
    "name_tail",
    "slug",
]

AUTO_DECISION_PREFIX = "decision:auto:"
MAX_KEY_LENGTH = 200
_BODY_LIMIT = 40
# The body needs only the text's head: lower-casing is per character (its one context rule, the
# final sigma, yields a non-ASCII letter either way) and folding is left to right, so the fold of
# a head is a prefix of the fold of the text. When the head's fold holds a full body, the rest of
# the text cannot change it. 96 characters hold one for every id the engine mints.
_HEAD = 96
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
# Edge-id tails (ADR 0021): 64 bits per endpoint make a collision a SHA-1 collision of two node
# ids, not a birthday among a hub's edges (24 bits over the whole triple collided 53 % of the
# time at 5,000 out-edges of one long-named source); 16 bits tell an ontology's few types apart.
NODE_TAIL = 16
TYPE_TAIL = 4


def _body(text: str) -> str:
    head = _NOT_SLUG.sub("-", text[:_HEAD].lower()).lstrip("-")
    if len(head.rstrip("-")) < _BODY_LIMIT and len(text) > _HEAD:
        head = _NOT_SLUG.sub("-", text.lower()).lstrip("-")
    return head[:_BODY_LIMIT].rstrip("-") or "x"


def slug(text: str, prefix: str) -> str:
    """``<prefix>:<readable body>-<first 6 hex of SHA-1(text)>``."""
    return f"{prefix}:{_body(text)}-{text_hash(text, 6)}"


def fold(text: str) -> str:
    """The text lower-cased, every run of characters outside ``[a-z0-9]`` one ``-`` (not stripped)."""
    return _NOT_SLUG.sub("-", text.lower())


def edge_body(src_fold: str, type_fold: str, dst_fold: str) -> str:
    """The body of the id of an edge whose source, type and target fold to these.

    The fold of ``src|type|dst`` is the three folds joined by one ``-`` each (a separator merges
    with a run at either side of it), so a loader folds each node id once and each edge id costs
    string joins, not a regular expression.
    """
    middle = type_fold.strip("-")
    joined = src_fold.rstrip("-") + ("-" + middle if middle else "") + "-" + dst_fold.lstrip("-")
    return joined.lstrip("-")[:_BODY_LIMIT].rstrip("-") or "x"


def long_body(src_fold: str) -> str | None:
    """The body every edge id out of a source with this fold has, when the source alone decides it."""
    head = src_fold.lstrip("-")
    return head[:_BODY_LIMIT].rstrip("-") if len(head.rstrip("-")) >= _BODY_LIMIT else None


def name_tail(name: str, length: int = NODE_TAIL) -> str:
    """The tail a node id (or, with :data:`TYPE_TAIL`, an edge type) gives every edge id it is part of."""
    return text_hash(name, length)


# ``EDGE_ID.format(body, S, T, D)``: a loader maps it over 500,000 edges without a call of ours each.
EDGE_ID = "edge:{}-{}{}{}"


def edge_id_from_parts(body: str, src_tail: str, type_tail: str, dst_tail: str) -> str:
    """``edge:<body>-<S><T><D>`` from already-derived parts."""
    return EDGE_ID.format(body, src_tail, type_tail, dst_tail)


# A node's fold and tail are asked for once per edge it is part of: a generator's hub is the
# source of thousands. Pure functions, so remembering answers changes nothing but the time.
@functools.lru_cache(maxsize=1 << 16)
def _node_part(node_id: str) -> tuple[str, str]:
    return fold(node_id), name_tail(node_id)


@functools.lru_cache(maxsize=256)
def _type_part(edge_type: str) -> tuple[str, str]:
    return fold(edge_type), name_tail(edge_type, TYPE_TAIL)


def edge_id(src: str, edge_type: str, dst: str) -> str:
    """The one id an edge of this type between these endpoints can have (ADR 0021)."""
    src_fold, src_tail = _node_part(src)
    type_fold, type_tail = _type_part(edge_type)
    dst_fold, dst_tail = _node_part(dst)
    return edge_id_from_parts(edge_body(src_fold, type_fold, dst_fold), src_tail, type_tail, dst_tail)


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

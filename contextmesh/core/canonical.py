"""The one place where data becomes bytes, and bytes become digests.

Two encodings, for two jobs:

* **Files** are written with orjson, object keys sorted, one trailing newline. Fast, and stable
  for a given value, so a graph written twice is the same bytes.
* **Digests** are SHA-256 over RFC 8785 (JSON Canonicalization Scheme) bytes, the form an
  independent verifier in any language can reproduce from the spec alone.
* **Merkle hashes** (RFC 9162 §2.1.1) are SHA-256 over a domain byte and raw bytes: ``0x00`` and a
  leaf's RFC 8785 bytes, or ``0x01`` and two child hashes (:func:`merkle_leaf_hash`,
  :func:`merkle_node_hash`); ``contextmesh/formats/merkle.py`` builds the tree from them.

Invariants (each has a test in ``tests/test_canonical.py``):

1. Nothing is serialised unless it has exactly one JSON form: NaN and the infinities, sets,
   bytes, tuples-as-keys and any non-string key are refused *before* serialising, because orjson
   silently writes NaN as ``null`` and a digest over that would be computed but meaningless.
2. Integers stay within the range JSON consumers agree on (|n| < 2**53), so RFC 8785 can digest
   everything a file can hold.
3. :func:`loads` refuses duplicate object keys at any depth and non-finite number literals; a
   plain JSON parser keeps the last duplicate silently.
4. No file nests arrays and objects deeper than :data:`MAX_DEPTH` levels: :func:`loads` refuses
   deeper text before any recursive parser sees it, and :func:`file_bytes` refuses to write it.
5. Every refusal names the first problem in document order (a value before its children, siblings
   in the order they appear).
6. No other module of the package calls ``orjson.dumps``, ``json.dumps`` or ``hashlib``; an AST
   test enforces it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import re
from itertools import accumulate
from typing import Any

import orjson
import rfc8785

from contextmesh.core.errors import CanonicalError

__all__ = [
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "ROOT",
    "canonical_bytes",
    "digest",
    "ensure_canonical",
    "ensure_depth",
    "file_bytes",
    "loads",
    "merkle_leaf_hash",
    "merkle_node_hash",
    "nesting_depth",
    "sha256",
    "sha256_hex",
    "text_depth",
    "text_hash",
    "text_hashes",
    "unshared_copy",
]

MAX_SAFE_INTEGER = 2**53 - 1
# The deepest nesting of arrays and objects any file may hold, the top-level value being level 1.
# It is the deepest orjson (the writer) can serialise: a file nested deeper could be read but never
# written back, so the next commit of whatever loaded it would fail. It also keeps the recursive
# parts (the strict parser below, RFC 8785) far from Python's recursion limit.
MAX_DEPTH = 254
ROOT = "$"
_FILE_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
_DEPTH_RULE = f"a file nests arrays and objects at most {MAX_DEPTH} deep"
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = tuple(1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256))


def _key_path(where: str, key: str) -> str:
    return key if where == ROOT else f"{where}.{key}"


def _index_path(where: str, index: int) -> str:
    return f"[{index}]" if where == ROOT else f"{where}[{index}]"


def ensure_canonical(value: Any, path: str = ROOT) -> None:
    """Refuse ``value`` unless it is plain JSON data with a single serialised form.

    Accepted: ``None``, ``bool``, ``int`` (|n| ≤ 2**53 - 1), finite ``float``, ``str``, and
    ``list`` / ``tuple`` / ``dict`` (string keys) of those. Everything else raises
    :class:`CanonicalError` naming where in ``value`` it was found.
    """
    # A 100,000-node graph holds millions of values; building a path string for each made this
    # check most of the cost of saving one. Valid data (the common case) is checked without
    # paths; only data that fails goes through the walk below, which finds and names the problem.
    if _is_plain(value):
        return
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                continue
            raise CanonicalError(where, f"the integer {item}", "integers must lie within ±(2**53 - 1)")
        if kind is float:
            if item - item == 0.0:  # false exactly for NaN and the infinities
                continue
            raise CanonicalError(where, f"the float {item!r}", "NaN and Infinity have no JSON form")
        # Children are pushed last-first so they pop in document order: the first problem found
        # is the first in the file, as every format page promises.
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    raise CanonicalError(
                        where, f"the key {key!r} of type {type(key).__name__}", "object keys must be strings"
                    )
            stack.extend(reversed([(child, _key_path(where, key)) for key, child in item.items()]))
            continue
        if kind is list or kind is tuple:
            stack.extend(reversed([(child, _index_path(where, index)) for index, child in enumerate(item)]))
            continue
        raise CanonicalError(
            where,
            f"a value of type {kind.__name__}",
            "only null, booleans, numbers, strings, lists and string-keyed objects have a JSON form",
        )


def _is_plain(value: Any) -> bool:
    """True exactly when :func:`ensure_canonical` would accept ``value``; builds no paths."""
    return _orjson_agrees(value) is not None  # one walk decides both: accepted, and orjson's bytes agree


def nesting_depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value``: 0 for a scalar, 1 for ``[]`` or ``{"a": 1}``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        kind = type(item)
        if kind is dict:
            children: Any = item.values()
        elif kind is list or kind is tuple:
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def text_depth(data: bytes) -> int:
    """How deeply the brackets of JSON text nest, found without parsing it (so without recursion).

    Every backslash is removed with the byte after it, then every run from a ``"`` to the next
    ``"``; of what is left, ``[`` and ``{`` count one up, ``]`` and ``}`` one down, left to right,
    and the depth is the highest count reached. For valid JSON that is exactly its nesting depth.
    """
    brackets = _STRING.sub(b"", _ESCAPE.sub(b"", data)).translate(None, _NOT_BRACKET)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _too_deep(depth: int, where: str) -> CanonicalError:
    return CanonicalError(where, f"arrays and objects nested {depth} deep", _DEPTH_RULE)


def ensure_depth(value: Any, where: str = ROOT) -> None:
    """Refuse an already parsed document nested deeper than :data:`MAX_DEPTH`."""
    depth = nesting_depth(value)
    if depth > MAX_DEPTH:
        raise _too_deep(depth, where)


def file_bytes(value: Any) -> bytes:
    """Serialise ``value`` for a file: orjson, sorted keys, trailing newline."""
    ensure_canonical(value)
    try:
        return orjson.dumps(value, option=_FILE_OPTIONS)
    except orjson.JSONEncodeError:  # after ensure_canonical, only nesting beyond MAX_DEPTH gets here
        raise _too_deep(nesting_depth(value), ROOT) from None


def wire_text(value: Any, *, compact: bool = True) -> str:
    """JSON text for a protocol message (``compact``) or an error quote, never for a file or a digest.

    Plain ``json.dumps`` on purpose: a refusal must be able to show what a client sent, including
    ``NaN`` or a fraction, which the file and digest forms refuse. A quote (``compact=False``) is
    written the way Python's ``json`` writes it by default, ASCII-only with spaced separators.
    """
    if compact:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value)


def _orjson_agrees(value: Any) -> bool | None:
    """None when :func:`ensure_canonical` would refuse ``value``; else whether orjson's sorted-key
    bytes are its RFC 8785 bytes.

    They are, for accepted data, unless it holds a float (RFC 8785 writes numbers the ECMAScript
    way, ``1`` for ``1.0``) or an object key with a character above U+FFFF (RFC 8785 sorts keys by
    UTF-16 code units, orjson by code points; the two orders differ only there). Strings are
    escaped alike (``tests/core/test_canonical.py`` compares the two on generated data).
    """
    agrees = True
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return None
                if agrees and not key.isascii() and max(key) > "\uffff":
                    agrees = False
            extend(item.values())
        elif kind is list or kind is tuple:
            extend(item)
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                return None
        elif kind is float:
            if item - item != 0.0:  # true exactly for NaN and the infinities
                return None
            agrees = False
        else:
            return None
    return agrees


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 bytes of ``value`` — the only bytes ContextMesh ever digests.

    Written by orjson when that gives the same bytes (no floats, no astral key; the common case,
    and some twenty times faster), else by the RFC 8785 encoder.
    """
    agrees = _orjson_agrees(value)
    if agrees is None:
        ensure_canonical(value)  # raises, naming the first problem
    if agrees:
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:  # a lone surrogate, or nesting orjson refuses: as before
            pass
    return rfc8785.dumps(value)


def digest(value: Any) -> str:
    """SHA-256 (lower-case hex) over the RFC 8785 bytes of ``value``."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def sha256_hex(data: bytes) -> str:
    """SHA-256 of raw bytes, for content-addressing whole files."""
    return hashlib.sha256(data).hexdigest()


def sha256(data: bytes) -> bytes:
    """SHA-256 of raw bytes, as 32 bytes: the primitive of Merkle trees and signed-note key ids."""
    return hashlib.sha256(data).digest()


# RFC 6962 / RFC 9162 §2.1.1 domain separation: a leaf can never be read as an interior node.
_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"


def merkle_leaf_hash(data: bytes) -> bytes:
    """The RFC 9162 leaf hash: SHA-256(0x00 || data)."""
    return hashlib.sha256(_LEAF_PREFIX + data).digest()


def merkle_node_hash(left: bytes, right: bytes) -> bytes:
    """The RFC 9162 interior node hash: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(_NODE_PREFIX + left + right).digest()


def text_hash(text: str, length: int) -> str:
    """The first ``length`` hex digits of SHA-1 over the UTF-8 text: the tail of a slug id.

    SHA-1 here names, it does not protect: the tail only has to keep two slugs with the same
    readable body apart, and it matches the ids of the original project (``entity:pgvector-6db608``).
    """
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()[:length]


def unshared_copy(value: Any) -> Any:
    """A copy of plain JSON data sharing no object with ``value`` (``None`` when it is not plain JSON).

    A loader keeps a few values of a parsed document (ids, labels, attributes) and drops the rest.
    Kept as they are, those values pin the parsed document's memory pools, scattered among them,
    and the process keeps the whole document's footprint; copied in one C pass they live apart
    from it, and the document's memory goes back when it is dropped.
    """
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError, orjson.JSONDecodeError):
        return None


def text_hashes(texts: list[str], length: int) -> list[str]:
    """:func:`text_hash` of each text, in one pass without a Python call per text (a loader's 500,000)."""
    sha1 = functools.partial(hashlib.sha1, usedforsecurity=False)
    digests = map(operator.methodcaller("hexdigest"), map(sha1, map(str.encode, texts)))
    return list(map(operator.itemgetter(slice(0, length)), digests))


class _Duplicate(dict[str, Any]):
    """Marks an object in which the strict parser met a key twice."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, child in pairs:
        if key in result:
            return _Duplicate(key)
        result[key] = child
    return result


def _refuse_constant(name: str) -> Any:
    raise CanonicalError(ROOT, f"the literal {name}", "JSON numbers must be finite")


def _find_duplicate(value: Any, path: str) -> tuple[str, str] | None:
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, _Duplicate):
            return where, item.key
        if isinstance(item, dict):
            stack.extend((child, _key_path(where, key)) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, _index_path(where, i)) for i, child in reversed(list(enumerate(item))))
    return None


def _refuse_deep_text(raw: bytes, where: str) -> None:
    depth = text_depth(raw)
    if depth > MAX_DEPTH:
        raise _too_deep(depth, where)


def loads(data: bytes | str, where: str = ROOT) -> Any:
    """Parse strict JSON: no duplicate keys at any depth, no NaN or Infinity, at most MAX_DEPTH deep.

    Files ContextMesh wrote are already in orjson's sorted form, and a text that equals the
    re-serialisation of its own parse cannot hold a duplicate key (dropping one would shorten
    it), so those take the fast path. Anything else goes through a slower parser that sees every
    key and reports the first duplicate with its path.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        _refuse_deep_text(raw, where)  # text too deep is named as such, whatever else is wrong with it
        raise CanonicalError(where, f"text that is not strict JSON ({exc})", "files must be valid JSON") from None
    try:
        # The fast path needs no walk of the value: orjson.loads yields only JSON types with
        # string keys, a float that re-serialises to the same text cannot be NaN or infinite
        # (orjson writes those as null), and OPT_STRICT_INTEGER raises on exactly the integers
        # ensure_canonical refuses (beyond ±(2**53 - 1)), sending them to the slow path, which
        # reports them as before; orjson writes nothing nested deeper than MAX_DEPTH, so a text
        # equal to its re-serialisation is within the depth limit. Walking a large graph file
        # here took seconds.
        if orjson.dumps(value, option=_FILE_OPTIONS | orjson.OPT_STRICT_INTEGER) == raw:
            return value
    except (TypeError, orjson.JSONEncodeError):  # an integer orjson can read but not write; deep nesting
        pass
    # Measured on the text, not on orjson's value: orjson keeps only the last of two duplicate
    # keys, so a deep value under the first would go unseen — and would then reach json.loads,
    # which recurses once per level.
    _refuse_deep_text(raw, where)
    try:
        slow = json.loads(raw, object_pairs_hook=_pairs_hook, parse_constant=_refuse_constant)
    except CanonicalError as exc:
        raise CanonicalError(where, exc.found, exc.rule) from None
    duplicate = _find_duplicate(slow, where)
    if duplicate is not None:
        at, key = duplicate
        raise CanonicalError(at, f"the key {key!r} twice", "an object may name each key only once")
    # The strict parser's value, not orjson's: orjson reads an integer beyond 64 bits as a float,
    # which would slip past the integer range check and change the number.
    ensure_canonical(slow, where)
    return slow

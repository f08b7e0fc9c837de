"""Verify a ``contextmesh.runledger`` v2 file without ContextMesh.

    python tools/verify_runledger.py FILE [--expect-head HEX]

Written from ``docs/formats/runledger-v2.md`` alone, with the Python standard library only: it
imports nothing from ``contextmesh`` and neither ``orjson`` nor ``rfc8785`` (an AST test checks
this). It applies the page's rules in the page's order and reports the first one broken, so it
names the same place as the reference loader for every file. The comments cite the page's rule
numbers (``L1`` … ``L24``).

Exit status: 0 and ``ok N entries head H`` on stdout when the file is valid (and ends at the
trusted head, when one is given); 1 and the first problem on stderr, as
``<file>: refused at <path>: <found>; <rule>``, otherwise; 2 for a usage error.

A valid chain proves the file was not edited, cut or reordered after it was written; it does not
prove who wrote it. A wholly re-forged chain verifies unless ``--expect-head`` names a head you
trusted before the file could be rewritten.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import stat
import sys
from itertools import accumulate
from pathlib import Path
from typing import Any

SCHEMA = "contextmesh.runledger"
VERSION = 2
ORIGINAL_VERSIONS = (1,)
GENESIS = "0" * 64
MAX_SAFE_INTEGER = 2**53 - 1
MAX_DEPTH = 254
TOP_FIELDS = ("schema", "version", "head", "entries")
ENTRY_FIELDS = ("seq", "round", "event", "task", "decision_id", "key", "detail", "receipt", "run", "previous", "digest")
RUN_FIELDS = ("flow_run_id", "task_run_id")
EVENTS = (
    "executed",
    "audited",
    "disproved",
    "invalidated",
    "repaired",
    "cached",
    "blocked",
    "failed",
    "audit_error",
    "revalidated",
    "fact_changed",
    "requested",
)
HEX64 = re.compile(r"[0-9a-f]{64}")


class InvalidLedgerError(Exception):
    """The first problem found: where, what was there, and what the format requires."""

    def __init__(self, path: str, found: str, rule: str) -> None:
        super().__init__(f"{path}: {found}; {rule}")
        self.path = path
        self.found = found
        self.rule = rule


# -- RFC 8785, for the values a ledger may hold (no floats: rule L18) ----------------------------

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(text: str) -> str:
    out = ['"']
    for char in text:
        if char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        elif 0xD800 <= ord(char) <= 0xDFFF:
            raise ValueError("an unpaired surrogate has no canonical form")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _utf16_units(key: str) -> bytes:
    # Big-endian UTF-16 bytes compare exactly as the sequence of code units does.
    return key.encode("utf-16-be", errors="surrogatepass")


class _Fragment(str):
    """Output already in canonical form, told apart from a JSON string value still to be written."""


def canonical_text(value: Any) -> str:
    """The RFC 8785 text of a parsed JSON value without floats; no recursion, so any depth."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is _Fragment:
            out.append(item)
        elif item is None:
            out.append("null")
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                raise ValueError(f"the integer {item} lies beyond ±(2**53 - 1)")
            out.append(str(item))
        elif kind is str:
            out.append(_string(item))
        elif kind is list:
            parts: list[Any] = []
            for index, child in enumerate(item):
                parts += [_Fragment(",")] if index else []
                parts.append(child)
            stack.extend(reversed([_Fragment("["), *parts, _Fragment("]")]))
        elif kind is dict:
            parts = []
            for index, key in enumerate(sorted(item, key=_utf16_units)):
                parts += [_Fragment(("," if index else "") + _string(key) + ":"), item[key]]
            stack.extend(reversed([_Fragment("{"), *parts, _Fragment("}")]))
        else:
            raise ValueError(f"a value of type {kind.__name__} has no form in a ledger")
    return "".join(out)


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 bytes of a parsed JSON value without floats."""
    return canonical_text(value).encode("utf-8")


def entry_digest(entry: dict[str, Any]) -> str:
    """SHA-256 (lower hex) over the RFC 8785 bytes of the entry without its ``digest`` key (section 6)."""
    return hashlib.sha256(canonical_bytes({k: v for k, v in entry.items() if k != "digest"})).hexdigest()


# -- rules L1-L4: the text ----------------------------------------------------------------------

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = tuple(1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256))
_DEPTH_RULE = f"a file nests arrays and objects at most {MAX_DEPTH} deep"


def text_depth(data: bytes) -> int:
    """The bracket depth of the text, by the page's scan (rule L1): no parser, so no recursion."""
    brackets = _STRING.sub(b"", _ESCAPE.sub(b"", data)).translate(None, _NOT_BRACKET)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def nesting_depth(value: Any) -> int:
    """How deeply arrays and objects nest in a parsed value (1 for ``{}``)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if type(item) is dict or type(item) is list:
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if type(item) is dict else item))
    return deepest


class _DuplicateKey(dict):  # type: ignore[type-arg]
    """Stands for an object in which a key appeared twice; keeps every member for rule L2."""

    def __init__(self, key: str, pairs: list[tuple[str, Any]]) -> None:
        super().__init__()
        self.key = key
        self.pairs = pairs


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            return _DuplicateKey(key, pairs)
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise InvalidLedgerError("$", f"the literal {name}", "JSON numbers must be finite")


def _child(path: str, key: str) -> str:
    return key if path == "$" else f"{path}.{key}"


def _item(path: str, index: int) -> str:
    return f"[{index}]" if path == "$" else f"{path}[{index}]"


def _walk(value: Any) -> list[tuple[Any, str]]:
    """Every value of a parsed document with its path, in document order (preorder).

    The members of an object that names a key twice are walked too, under their keys.
    """
    out: list[tuple[Any, str]] = []
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        item, path = stack.pop()
        out.append((item, path))
        if isinstance(item, _DuplicateKey):
            stack.extend((child, _child(path, key)) for key, child in reversed(item.pairs))
        elif type(item) is dict:
            stack.extend((child, _child(path, key)) for key, child in reversed(item.items()))
        elif type(item) is list:
            stack.extend((child, _item(path, i)) for i, child in reversed(list(enumerate(item))))
    return out


def _overflows_a_double(number: int) -> bool:
    try:
        float(number)
    except OverflowError:
        return True
    return False


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(char) <= 0xDFFF for char in text)


def _check_values(value: Any) -> None:
    """Rules L2 (what strict JSON refuses, at ``$``), L3 (duplicate keys), L4 (integer range)."""
    values = _walk(value)
    for item, _ in values:
        if isinstance(item, _DuplicateKey):
            texts = [key for key, _ in item.pairs]
        else:
            texts = list(item) if type(item) is dict else [item] if type(item) is str else []
        if any(_has_surrogate(text) for text in texts):
            raise InvalidLedgerError("$", "a string with an unpaired surrogate", "strings must be valid Unicode")
        if type(item) is float and not math.isfinite(item):
            raise InvalidLedgerError("$", f"a number that overflows a double ({item!r})", "JSON numbers must be finite")
        if type(item) is int and not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER and _overflows_a_double(item):
            raise InvalidLedgerError("$", "an integer that overflows a double", "JSON numbers must be finite")
    for item, path in values:
        if isinstance(item, _DuplicateKey):
            raise InvalidLedgerError(path, f"the key {item.key!r} twice", "an object may name each key only once")
    for item, path in values:
        if type(item) is int and not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
            raise InvalidLedgerError(path, f"the integer {item}", "integers must lie within ±(2**53 - 1)")


def parse(data: bytes) -> Any:
    """Rules L1-L4: at most 254 deep, strict JSON in UTF-8 without BOM, no duplicate key, safe integers."""
    depth = text_depth(data)
    if depth > MAX_DEPTH:
        raise InvalidLedgerError("$", f"arrays and objects nested {depth} deep", _DEPTH_RULE)
    if data.startswith(b"\xef\xbb\xbf"):
        raise InvalidLedgerError("$", "a UTF-8 byte-order mark", "files must be valid JSON in UTF-8 without a BOM")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidLedgerError(
            "$", f"bytes that are not UTF-8 ({exc.reason} at {exc.start})", "files must be UTF-8"
        ) from None
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constants)
    except (json.JSONDecodeError, ValueError) as exc:  # ValueError: an integer of over 4300 digits
        raise InvalidLedgerError("$", f"text that is not strict JSON ({exc})", "files must be valid JSON") from None
    _check_values(value)
    return value


# -- rules L5-L24: the document ------------------------------------------------------------------


def _describe(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {repr(value)[:60]}"


def _exact_keys(obj: dict[str, Any], fields: tuple[str, ...], path: str) -> None:
    for name in fields:
        if name not in obj:
            raise InvalidLedgerError(_child(path, name), "nothing", f"the field {name!r} is required")
    for name in obj:
        if name not in fields:
            raise InvalidLedgerError(
                _child(path, name), f"an unknown field {name!r}", "the format lists every field it allows"
            )


def _hex64(value: Any) -> bool:
    return type(value) is str and HEX64.fullmatch(value) is not None


def _text_or_null(value: Any) -> bool:
    return value is None or (type(value) is str and value != "")


def _refuse_floats(value: Any, path: str) -> None:
    """Rule L18: the first float inside a receipt, in document order."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if type(item) is float:
            raise InvalidLedgerError(
                where, f"the float {item!r}", "a ledger holds no floats: every number is an integer"
            )
        if type(item) is dict:
            stack.extend((child, f"{where}.{key}") for key, child in reversed(item.items()))
        elif type(item) is list:
            stack.extend((child, f"{where}[{i}]") for i, child in reversed(list(enumerate(item))))


def _check_run(run: Any, path: str) -> None:
    """Rule L19."""
    if run is None:
        return
    if type(run) is not dict:
        raise InvalidLedgerError(f"{path}.run", _describe(run), "an object is required here")
    _exact_keys(run, RUN_FIELDS, f"{path}.run")
    for name, value in run.items():
        if not _text_or_null(value):
            raise InvalidLedgerError(f"{path}.run.{name}", repr(value), "a run id is non-empty text or null")


def check_entry(entry: Any, index: int, previous: str) -> str:
    """Rules L10-L22 for the entry at ``entries[index]``; return its digest."""
    path = f"entries[{index}]"
    if type(entry) is not dict:
        raise InvalidLedgerError(path, _describe(entry), "an object is required here")  # L10
    _exact_keys(entry, ENTRY_FIELDS, path)  # L11
    seq = entry["seq"]
    if type(seq) is not int or seq != index + 1:  # L12
        raise InvalidLedgerError(f"{path}.seq", repr(seq), f"entries are numbered 1, 2, … (expected {index + 1})")
    if type(entry["round"]) is not int or entry["round"] < 0:  # L13
        raise InvalidLedgerError(f"{path}.round", repr(entry["round"]), "a round is a non-negative integer")
    if type(entry["event"]) is not str or entry["event"] not in EVENTS:  # L14
        raise InvalidLedgerError(f"{path}.event", repr(entry["event"]), f"an event is one of {list(EVENTS)}")
    for name in ("task", "decision_id", "key"):  # L15
        if not _text_or_null(entry[name]):
            raise InvalidLedgerError(f"{path}.{name}", repr(entry[name]), "non-empty text or null")
    if type(entry["detail"]) is not str:  # L16
        raise InvalidLedgerError(f"{path}.detail", repr(entry["detail"]), "the detail is text")
    receipt = entry["receipt"]
    if receipt is not None and type(receipt) is not dict:  # L17
        raise InvalidLedgerError(f"{path}.receipt", repr(receipt)[:60], "a receipt is an object or null")
    if (receipt is not None) != (entry["event"] == "disproved"):
        raise InvalidLedgerError(f"{path}.receipt", repr(receipt)[:60], "exactly the disproved entries carry a receipt")
    if receipt is not None:
        _refuse_floats(receipt, f"{path}.receipt")  # L18
    _check_run(entry["run"], path)  # L19
    for name in ("previous", "digest"):  # L20
        if not _hex64(entry[name]):
            raise InvalidLedgerError(f"{path}.{name}", repr(entry[name]), "a digest is 64 lower-case hex digits")
    if entry["previous"] != previous:  # L21
        raise InvalidLedgerError(
            f"{path}.previous", repr(entry["previous"]), f"each entry chains to the digest before it ({previous})"
        )
    expected = entry_digest(entry)
    if entry["digest"] != expected:  # L22
        raise InvalidLedgerError(
            f"{path}.digest",
            repr(entry["digest"]),
            f"the digest must recompute from the entry's fields ({expected}); "
            "the entry was edited after it was written",
        )
    return expected


def _check_header(doc: dict[str, Any]) -> None:
    """Rule L6."""
    if doc.get("schema") != SCHEMA:
        raise InvalidLedgerError("schema", _describe(doc.get("schema")), f"this verifier reads {SCHEMA!r} files")
    version = doc.get("version")
    if type(version) is not int:
        raise InvalidLedgerError("version", _describe(version), "the version is an integer")
    if version in ORIGINAL_VERSIONS:
        raise InvalidLedgerError(
            "version",
            f"{SCHEMA} v{version}, a file of the original ContextMesh project",
            f"this verifier reads only {SCHEMA} v{VERSION}; files of the original project are not supported",
        )
    if version != VERSION:
        raise InvalidLedgerError("version", f"{SCHEMA} v{version}", f"this verifier reads only v{VERSION}")


def verify_document(doc: Any, expect_head: str | None = None) -> tuple[int, str]:
    """Check a parsed ledger document (rules L1 and L5-L24); return (number of entries, head)."""
    depth = nesting_depth(doc)
    if depth > MAX_DEPTH:  # L1, for a document parsed elsewhere
        raise InvalidLedgerError("$", f"arrays and objects nested {depth} deep", _DEPTH_RULE)
    if type(doc) is not dict:  # L5
        raise InvalidLedgerError("$", _describe(doc), "an object is required here")
    _check_header(doc)
    _exact_keys(doc, TOP_FIELDS, "$")  # L7
    head = doc["head"]
    if not _hex64(head):  # L8
        raise InvalidLedgerError("head", repr(head), "the head is 64 lower-case hex digits")
    entries = doc["entries"]
    if type(entries) is not list:  # L9
        raise InvalidLedgerError("entries", _describe(entries), "a list is required here")
    previous = GENESIS
    for index, entry in enumerate(entries):
        previous = check_entry(entry, index, previous)
    if head != previous:  # L23
        raise InvalidLedgerError(
            "head",
            repr(head),
            f"the head must be the last entry's digest ({previous}); a truncated or extended entry list contradicts it",
        )
    if expect_head is not None and head != expect_head:  # L24
        raise InvalidLedgerError(
            "head", repr(head), f"the trusted head is {expect_head!r}; this chain is not the history that ran"
        )
    return len(entries), head


def verify_bytes(data: bytes, expect_head: str | None = None) -> tuple[int, str]:
    """Parse and check a ledger file's bytes; return (number of entries, head)."""
    return verify_document(parse(data), expect_head)


def _read(path: Path) -> bytes:
    """The file's bytes; a fifo, a device or a directory is refused instead of waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Verify a contextmesh.runledger v2 file (standard library only).")
    parser.add_argument("file", type=Path, help="the ledger file")
    parser.add_argument("--expect-head", metavar="HEX", help="a head you trusted before the file could be rewritten")
    args = parser.parse_args(argv)
    if args.expect_head is not None and not _hex64(args.expect_head):
        parser.error("--expect-head takes 64 lower-case hex digits")
    try:
        data = _read(args.file)
    except OSError as exc:
        sys.stderr.write(f"{args.file}: cannot read ({exc.strerror})\n")
        return 1
    try:
        count, head = verify_bytes(data, args.expect_head)
    except InvalidLedgerError as exc:
        sys.stderr.write(f"{args.file}: refused at {exc}\n")
        return 1
    sys.stdout.write(f"ok {count} entries head {head}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

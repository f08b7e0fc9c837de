"""Verify a ``contextmesh.runledger`` v2 file without ContextMesh.

    python tools/verify_runledger.py FILE [--expect-head HEX]

Written from ``docs/formats/runledger-v2.md`` alone, with the Python standard library only: it
imports nothing from ``contextmesh`` and neither ``orjson`` nor ``rfc8785`` (an AST test checks
this). RFC 8785 canonicalization is implemented here for every JSON value type, finite floats
included (written as ECMAScript's ``Number.prototype.toString`` writes them).

Exit status: 0 and ``ok N entries head H`` on stdout when the file is valid (and ends at the
trusted head, when one is given); 1 and the first problem on stderr, as
``<path>: <found>; <rule>``, otherwise; 2 for a usage error.

A valid chain proves the file was not edited, cut or reordered after it was written; it does not
prove who wrote it. A wholly re-forged chain verifies unless ``--expect-head`` names a head you
trusted before the file could be rewritten.
"""

from __future__ import annotations

import argparse
import decimal
import hashlib
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

SCHEMA = "contextmesh.runledger"
VERSION = 2
ORIGINAL_VERSIONS = (1,)
GENESIS = "0" * 64
MAX_SAFE_INTEGER = 2**53 - 1
TOP_FIELDS = ("schema", "version", "head", "entries")
ENTRY_FIELDS = ("seq", "round", "event", "task", "decision_id", "key", "detail", "receipt", "run", "previous", "digest")
RUN_FIELDS = ("flow_run_id", "task_run_id")
EVENTS = ("executed", "audited", "disproved", "invalidated", "repaired", "cached", "blocked", "failed", "audit_error")
HEX64 = re.compile(r"[0-9a-f]{64}")


class InvalidLedgerError(Exception):
    """The first problem found: where, what was there, and what the format requires."""

    def __init__(self, path: str, found: str, rule: str) -> None:
        super().__init__(f"{path}: {found}; {rule}")
        self.path = path
        self.found = found
        self.rule = rule


# -- RFC 8785 -----------------------------------------------------------------------------------

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


def _float(value: float) -> str:
    """ECMAScript Number.prototype.toString for a finite double (RFC 8785 section 3.2.2.3)."""
    if not math.isfinite(value):
        raise ValueError(f"the float {value!r} has no JSON form")
    if value == 0:
        return "0"
    if value < 0:
        return "-" + _float(-value)
    # repr gives the shortest digit string that reads back as the same double (the closest one
    # when there is a choice), which is the digit string ECMAScript chooses.
    sign, digits_tuple, exponent = decimal.Decimal(repr(value)).as_tuple()
    assert sign == 0 and isinstance(exponent, int)
    digits = "".join(map(str, digits_tuple)).rstrip("0")
    exponent += len(digits_tuple) - len(digits)  # the zeros stripped from the right
    k = len(digits)
    n = exponent + k  # value = 0.digits × 10**n
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def _utf16_units(key: str) -> bytes:
    # Big-endian UTF-16 bytes compare exactly as the sequence of code units does.
    return key.encode("utf-16-be", errors="surrogatepass")


def canonical_text(value: Any) -> str:
    """The RFC 8785 text of a parsed JSON value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise ValueError(f"the integer {value} lies beyond ±(2**53 - 1)")
        return str(value)
    if type(value) is float:
        return _float(value)
    if type(value) is str:
        return _string(value)
    if type(value) is list:
        return "[" + ",".join(canonical_text(item) for item in value) + "]"
    if type(value) is dict:
        keys = sorted(value, key=_utf16_units)
        return "{" + ",".join(_string(k) + ":" + canonical_text(value[k]) for k in keys) + "}"
    raise ValueError(f"a value of type {type(value).__name__} has no JSON form")


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 bytes of a parsed JSON value."""
    return canonical_text(value).encode("utf-8")


def entry_digest(entry: dict[str, Any]) -> str:
    """SHA-256 (lower hex) over the RFC 8785 bytes of the entry without its ``digest`` key."""
    return hashlib.sha256(canonical_bytes({k: v for k, v in entry.items() if k != "digest"})).hexdigest()


# -- strict parsing -----------------------------------------------------------------------------


class _DuplicateKey(dict):  # type: ignore[type-arg]
    """Stands for an object in which a key appeared twice."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            return _DuplicateKey(key)
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise InvalidLedgerError("$", f"the literal {name}", "JSON numbers must be finite")


def _child(path: str, key: str) -> str:
    return key if path == "$" else f"{path}.{key}"


def _item(path: str, index: int) -> str:
    return f"[{index}]" if path == "$" else f"{path}[{index}]"


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(char) <= 0xDFFF for char in text)


def _walk(value: Any) -> list[tuple[Any, str]]:
    """Every value of a parsed document with its path, in document order."""
    out: list[tuple[Any, str]] = []
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        item, path = stack.pop()
        out.append((item, path))
        if type(item) is dict:
            stack.extend((child, _child(path, key)) for key, child in reversed(item.items()))
        elif type(item) is list:
            stack.extend((child, _item(path, i)) for i, child in reversed(list(enumerate(item))))
    return out


def _check_values(value: Any) -> None:
    """Refuse what strict JSON refuses, in the order the format lists it (section 9.3, step 1)."""
    values = _walk(value)
    for item, _ in values:
        texts = list(item) if type(item) is dict else [item] if type(item) is str else []
        if any(_has_surrogate(text) for text in texts):
            raise InvalidLedgerError("$", "a string with an unpaired surrogate", "strings must be valid Unicode")
        if type(item) is float and not math.isfinite(item):
            raise InvalidLedgerError("$", f"a number that overflows a double ({item!r})", "JSON numbers must be finite")
    for item, path in values:
        if isinstance(item, _DuplicateKey):
            raise InvalidLedgerError(path, f"the key {item.key!r} twice", "an object may name each key only once")
    for item, path in values:
        if type(item) is int and not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
            raise InvalidLedgerError(path, f"the integer {item}", "integers must lie within ±(2**53 - 1)")


def parse(data: bytes) -> Any:
    """Strict JSON: UTF-8 without BOM, no duplicate keys, no NaN/Infinity, safe integers."""
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
    except (json.JSONDecodeError, ValueError) as exc:
        raise InvalidLedgerError("$", f"text that is not strict JSON ({exc})", "files must be valid JSON") from None
    _check_values(value)
    return value


# -- the format ---------------------------------------------------------------------------------


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


def check_entry(entry: Any, index: int, previous: str) -> str:
    """Check one entry at ``entries[index]``; return its digest."""
    path = f"entries[{index}]"
    if type(entry) is not dict:
        raise InvalidLedgerError(path, _describe(entry), "an object is required here")
    _exact_keys(entry, ENTRY_FIELDS, path)
    seq = entry["seq"]
    if type(seq) is not int or seq != index + 1:
        raise InvalidLedgerError(f"{path}.seq", repr(seq), f"entries are numbered 1, 2, … (expected {index + 1})")
    if type(entry["round"]) is not int or entry["round"] < 0:
        raise InvalidLedgerError(f"{path}.round", repr(entry["round"]), "a round is a non-negative integer")
    if type(entry["event"]) is not str or entry["event"] not in EVENTS:
        raise InvalidLedgerError(f"{path}.event", repr(entry["event"]), f"an event is one of {list(EVENTS)}")
    for name in ("task", "decision_id", "key"):
        if not _text_or_null(entry[name]):
            raise InvalidLedgerError(f"{path}.{name}", repr(entry[name]), "non-empty text or null")
    if type(entry["detail"]) is not str:
        raise InvalidLedgerError(f"{path}.detail", repr(entry["detail"]), "the detail is text")
    receipt = entry["receipt"]
    if receipt is not None and type(receipt) is not dict:
        raise InvalidLedgerError(f"{path}.receipt", repr(receipt)[:60], "a receipt is an object or null")
    if (receipt is not None) != (entry["event"] == "disproved"):
        raise InvalidLedgerError(f"{path}.receipt", repr(receipt)[:60], "exactly the disproved entries carry a receipt")
    run = entry["run"]
    if run is not None:
        if type(run) is not dict:
            raise InvalidLedgerError(f"{path}.run", _describe(run), "an object is required here")
        _exact_keys(run, RUN_FIELDS, f"{path}.run")
        for name, value in run.items():
            if not _text_or_null(value):
                raise InvalidLedgerError(f"{path}.run.{name}", repr(value), "a run id is non-empty text or null")
    for name in ("previous", "digest"):
        if not _hex64(entry[name]):
            raise InvalidLedgerError(f"{path}.{name}", repr(entry[name]), "a digest is 64 lower-case hex digits")
    if entry["previous"] != previous:
        raise InvalidLedgerError(
            f"{path}.previous", repr(entry["previous"]), f"each entry chains to the digest before it ({previous})"
        )
    expected = entry_digest(entry)
    if entry["digest"] != expected:
        raise InvalidLedgerError(
            f"{path}.digest",
            repr(entry["digest"]),
            f"the digest must recompute from the entry's fields ({expected}); "
            "the entry was edited after it was written",
        )
    return expected


def verify_document(doc: Any, expect_head: str | None = None) -> tuple[int, str]:
    """Check a parsed ledger document; return (number of entries, head)."""
    if type(doc) is not dict:
        raise InvalidLedgerError("$", _describe(doc), "an object is required here")
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
    _exact_keys(doc, TOP_FIELDS, "$")
    head = doc["head"]
    if not _hex64(head):
        raise InvalidLedgerError("head", repr(head), "the head is 64 lower-case hex digits")
    entries = doc["entries"]
    if type(entries) is not list:
        raise InvalidLedgerError("entries", _describe(entries), "a list is required here")
    previous = GENESIS
    for index, entry in enumerate(entries):
        previous = check_entry(entry, index, previous)
    if head != previous:
        raise InvalidLedgerError(
            "head",
            repr(head),
            f"the head must be the last entry's digest ({previous}); a truncated or extended entry list contradicts it",
        )
    if expect_head is not None and head != expect_head:
        raise InvalidLedgerError(
            "head", repr(head), f"the trusted head is {expect_head!r}; this chain is not the history that ran"
        )
    return len(entries), head


def verify_bytes(data: bytes, expect_head: str | None = None) -> tuple[int, str]:
    """Parse and check a ledger file's bytes; return (number of entries, head)."""
    return verify_document(parse(data), expect_head)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Verify a contextmesh.runledger v2 file (standard library only).")
    parser.add_argument("file", type=Path, help="the ledger file")
    parser.add_argument("--expect-head", metavar="HEX", help="a head you trusted before the file could be rewritten")
    args = parser.parse_args(argv)
    if args.expect_head is not None and not _hex64(args.expect_head):
        parser.error("--expect-head takes 64 lower-case hex digits")
    try:
        data = args.file.read_bytes()
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

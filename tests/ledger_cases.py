"""The ledger corruption suite: every way to spoil a run ledger file, as a named dataset.

Each case starts from the demo's 29-entry ledger (a disproof with its receipt at ``entries[10]``)
and changes it — as a document, or as text where a document cannot say it (a duplicate key, a
float written ``8.0``, a literal, nesting deeper than a JSON encoder will write). Each names the
``.path`` that ``docs/formats/runledger-v2.md`` says a reader reports first, or ``None`` when the
file is valid, and optionally a fragment of the message.

``tests/test_ledger_verifier.py`` runs the reference loader (``RunLedger.load``) and the
independent verifier (``tools/verify_runledger.py``) on every case and requires both to give the
expected verdict at the expected path.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import rfc8785

Doc = dict[str, Any]
GENESIS = "0" * 64
DISPROOF = 10  # the demo ledger's disproved entry
MAX_DEPTH = 254


@dataclass(frozen=True)
class Case:
    """One changed file and the first problem a reader must report (``path=None``: accepted)."""

    name: str
    make: Callable[[bytes], bytes]
    path: str | None
    fragment: str = ""


# -- building changed files ----------------------------------------------------------------------


def encode(doc: Doc) -> bytes:
    """The writer's form: sorted keys, no whitespace, raw UTF-8, one newline."""
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def digest_of(entry: Doc) -> str:
    return hashlib.sha256(rfc8785.dumps({k: v for k, v in entry.items() if k != "digest"})).hexdigest()


def rechain(doc: Doc, start: int = 0) -> None:
    """Recompute ``previous`` and ``digest`` from entry ``start`` on, and the head: a consistent chain."""
    entries = doc["entries"]
    previous = entries[start - 1]["digest"] if start else GENESIS
    for entry in entries[start:]:
        entry["previous"] = previous
        entry["digest"] = digest_of(entry)
        previous = entry["digest"]
    doc["head"] = previous


def edit(change: Callable[[Doc], Any]) -> Callable[[bytes], bytes]:
    def make(data: bytes) -> bytes:
        doc = json.loads(data)
        change(doc)
        return encode(doc)

    return make


def raw(old: bytes, new: bytes, count: int = 1) -> Callable[[bytes], bytes]:
    def make(data: bytes) -> bytes:
        assert data.count(old) >= count, old
        return data.replace(old, new, count)

    return make


def splice(change: Callable[[Doc], Any], **texts: str) -> Callable[[bytes], bytes]:
    """Edit the document, writing ``"@name@"`` markers where raw JSON text then replaces them."""

    def make(data: bytes) -> bytes:
        doc = json.loads(data)
        change(doc)
        out = encode(doc)
        for name, text in texts.items():
            marker = json.dumps(f"@{name}@").encode()
            assert marker in out, name
            out = out.replace(marker, text.encode())
        return out

    return make


def entry(index: int, **changes: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["entries"][index].update(changes)

    return change


def receipt(**changes: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["entries"][DISPROOF]["receipt"].update(changes)

    return change


def both(*changes: Callable[[Doc], None]) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        for one in changes:
            one(doc)

    return change


def nested(levels: int, spaced: bool = False) -> str:
    """JSON text of ``levels`` nested arrays around a 1."""
    gap = " " if spaced else ""
    return ("[" + gap) * levels + "1" + (gap + "]") * levels


def deep_receipt_value(levels: int) -> Callable[[Doc], None]:
    """A receipt value ``levels`` arrays deep (the receipt lies at level 4), the chain kept valid."""

    def change(doc: Doc) -> None:
        value: Any = 1
        for _ in range(levels):
            value = [value]
        doc["entries"][DISPROOF]["receipt"]["deep"] = value
        rechain(doc, DISPROOF)

    return change


def _delete(doc: Doc) -> None:
    del doc["entries"][5]


def _swap(doc: Doc) -> None:
    entries = doc["entries"]
    entries[2], entries[3] = entries[3], entries[2]


def _rechain_one(index: int, field: str, value: Any) -> Callable[[Doc], None]:
    """Edit an entry and recompute its digest only (the next entry's previous then disagrees)."""

    def change(doc: Doc) -> None:
        doc["entries"][index][field] = value
        doc["entries"][index]["digest"] = digest_of(doc["entries"][index])

    return change


def _reformat(data: bytes) -> bytes:
    return json.dumps(json.loads(data), indent=1).encode()


R = f"entries[{DISPROOF}].receipt"
BEYOND = str(2**53)

CASES: tuple[Case, ...] = (
    # -- valid files ----------------------------------------------------------------------------
    Case("valid", lambda data: data, None),
    Case("reformatted with spaces and \\u escapes", _reformat, None),
    Case("empty list, genesis head", edit(lambda d: d.update(entries=[], head=GENESIS)), None),
    Case("receipt value nested to the limit (254 levels)", edit(deep_receipt_value(MAX_DEPTH - 4)), None),
    Case("negative zero is the integer 0", raw(b'"seq":1,', b'"seq":-0,'), "entries[0].seq", "expected 1"),
    # -- L1: depth --------------------------------------------------------------------------------
    Case("receipt value one level too deep (255)", edit(deep_receipt_value(MAX_DEPTH - 3)), "$", "255 deep"),
    Case(
        "nested 1,024 levels, compact",
        splice(receipt(deep="@deep@"), deep=nested(1024 - 4)),
        "$",
        "nested 1024 deep",
    ),
    Case(
        "nested 1,024 levels, spaced",
        splice(receipt(deep="@deep@"), deep=nested(1024 - 4, spaced=True)),
        "$",
        "nested 1024 deep",
    ),
    Case("nested 1,025 levels", splice(receipt(deep="@deep@"), deep=nested(1025 - 4)), "$", "nested 1025 deep"),
    Case("nested 100,000 levels", splice(receipt(deep="@deep@"), deep=nested(100_000)), "$", "at most 254 deep"),
    Case(
        "brackets inside a string do not count",
        splice(receipt(deep="@deep@"), deep='"' + '[\\"{' * 999 + '"'),
        f"entries[{DISPROOF}].digest",
    ),
    Case(
        "too deep under the first of two duplicate keys",
        raw(b'"blast_radius":8', b'"blast_radius":' + nested(300).encode() + b',"blast_radius":8'),
        "$",
        "nested 304 deep",
    ),
    Case("too deep and not JSON either", lambda data: nested(2000).encode()[:-5], "$", "nested 2000 deep"),
    # -- L2: what strict JSON refuses --------------------------------------------------------------
    Case("not JSON", lambda data: data[:-5], "$", "not strict JSON"),
    Case("empty file", lambda data: b"", "$", "not strict JSON"),
    Case("byte-order mark", lambda data: b"\xef\xbb\xbf" + data, "$"),
    Case("not UTF-8", raw("—".encode(), "—".encode()[:2]), "$"),
    Case("NaN", raw(b'"round":1,', b'"round":NaN,'), "$"),
    Case("Infinity in a receipt", raw(b'"blast_radius":8', b'"blast_radius":-Infinity'), "$"),
    Case("overflowing number", raw(b'"round":1,', b'"round":1e400,'), "$"),
    Case("integer that overflows a double", raw(b'"round":1,', b'"round":' + b"9" * 309 + b","), "$"),
    Case("integer of 5,000 digits", raw(b'"round":1,', b'"round":' + b"7" * 5000 + b","), "$"),
    Case("unpaired surrogate", raw(b'"detail":"output', b'"detail":"\\ud800output'), "$"),
    Case("unpaired surrogate in a key", raw(b'"blast_radius":8', b'"blast_radius":8,"\\udc00":1'), "$"),
    Case(
        "unpaired surrogate under the first of two duplicate keys",
        raw(b'"detail":"output', b'"detail":"\\ud800","detail":"output'),
        "$",
    ),
    Case("top level is a list", lambda data: b"[]", "$", "an object is required"),
    # -- L3: duplicate keys --------------------------------------------------------------------------
    Case("duplicate key in an entry", raw(b'"round":1,', b'"round":1,"round":1,'), "entries[0]", "'round' twice"),
    Case("duplicate key at the top", raw(b'"version":2', b'"version":2,"version":2'), "$", "'version' twice"),
    Case(
        "duplicate key in a receipt",
        raw(b'"blast_radius":8', b'"blast_radius":8,"blast_radius":8'),
        R,
        "'blast_radius' twice",
    ),
    Case(
        "two duplicate keys: the first in the file is named",
        raw(b'"round":1,', b'"round":1,"round":1,', count=2),
        "entries[0]",
    ),
    Case(
        "a duplicate key after an integer beyond 2**53 is reported first",
        lambda data: splice(entry(2, round="@big@"), big=BEYOND)(data).replace(
            b'"blast_radius":8', b'"blast_radius":8,"blast_radius":8', 1
        ),
        R,
        "twice",
    ),
    # -- L4: integers --------------------------------------------------------------------------------
    Case("integer beyond 2**53", raw(b'"round":1,', b'"round":9007199254740992,'), "entries[0].round", "2**53"),
    Case(
        "two integers beyond 2**53: the first in the file is named",
        splice(both(entry(3, round="@a@"), entry(7, round="@b@")), a=BEYOND, b=str(-(2**60))),
        "entries[3].round",
        "9007199254740992",
    ),
    Case(
        "integers beyond 2**53 in a receipt and a later entry",
        splice(both(receipt(blast_radius="@a@"), entry(20, round="@b@")), a=str(2**60), b=BEYOND),
        f"{R}.blast_radius",
    ),
    Case("integer beyond 64 bits", raw(b'"round":1,', b'"round":18446744073709551616,'), "entries[0].round"),
    # -- L5-L6: the header and the top level ------------------------------------------------------
    Case("wrong schema", edit(lambda d: d.update(schema="contextmesh.graph")), "schema"),
    Case("missing schema", edit(lambda d: d.pop("schema")), "schema"),
    Case("v1", edit(lambda d: d.update(version=1)), "version", "original ContextMesh project"),
    Case("v3", edit(lambda d: d.update(version=3)), "version", "only v2"),
    Case("boolean version", edit(lambda d: d.update(version=True)), "version", "integer"),
    Case("float version", raw(b'"version":2', b'"version":2.0'), "version", "integer"),
    Case("missing head", edit(lambda d: d.pop("head")), "head", "required"),
    Case("missing entries and head: the first in the table", edit(lambda d: (d.pop("head"), d.pop("entries"))), "head"),
    Case("unknown top-level field", edit(lambda d: d.update(extra=1)), "extra", "unknown field"),
    Case("malformed head", edit(lambda d: d.update(head="xyz")), "head", "hex"),
    Case("upper-case head", edit(lambda d: d.update(head=d["head"].upper())), "head", "hex"),
    Case("entries as an object", edit(lambda d: d.update(entries={})), "entries", "a list is required"),
    # -- L7-L9: an entry's shape ----------------------------------------------------------------------
    Case("entry as a list", edit(lambda d: d["entries"].__setitem__(0, [])), "entries[0]", "an object"),
    Case("entry as null", edit(lambda d: d["entries"].__setitem__(3, None)), "entries[3]", "an object"),
    Case("missing entry field", edit(lambda d: d["entries"][2].pop("detail")), "entries[2].detail", "required"),
    Case(
        "two missing fields: the first in the table",
        edit(lambda d: (d["entries"][2].pop("digest"), d["entries"][2].pop("round"))),
        "entries[2].round",
    ),
    Case("unknown entry field", edit(entry(2, extra=None)), "entries[2].extra", "unknown field"),
    Case(
        "missing field outranks an unknown one",
        edit(lambda d: (d["entries"][4].pop("key"), d["entries"][4].update(signed_by="m"))),
        "entries[4].key",
    ),
    # -- L10-L13: an entry's fields ----------------------------------------------------------------
    Case("float seq", raw(b'"seq":1,', b'"seq":1.0,'), "entries[0].seq"),
    Case("deleted entry", edit(_delete), "entries[5].seq", "expected 6"),
    Case("swapped entries", edit(_swap), "entries[2].seq"),
    Case("boolean round", edit(entry(0, round=True)), "entries[0].round"),
    Case("negative round", edit(entry(0, round=-1)), "entries[0].round"),
    Case("unknown event", edit(entry(0, event="teleported")), "entries[0].event"),
    Case("event as a list", edit(entry(0, event=["executed"])), "entries[0].event"),
    Case("empty task", edit(entry(0, task="")), "entries[0].task"),
    Case("numeric key", edit(entry(0, key=7)), "entries[0].key"),
    Case(
        "empty decision id and empty key: decision_id first",
        edit(entry(0, key="", decision_id="")),
        "entries[0].decision_id",
    ),
    Case("null detail", edit(entry(0, detail=None)), "entries[0].detail"),
    Case("seq wrong and round wrong: seq first", edit(entry(1, seq=9, round=-1)), "entries[1].seq"),
    # -- L14: the receipt ------------------------------------------------------------------------------
    Case("receipt on an executed entry", edit(entry(0, receipt={})), "entries[0].receipt", "disproved"),
    Case("disproved without a receipt", edit(entry(DISPROOF, receipt=None)), R, "disproved"),
    Case("receipt as a list", edit(entry(DISPROOF, receipt=[])), R, "object or null"),
    Case(
        "integer rewritten as a float (same RFC 8785 digest)",
        raw(b'"blast_radius":8', b'"blast_radius":8.0'),
        f"{R}.blast_radius",
        "no floats",
    ),
    Case(
        "float deep in a receipt",
        splice(lambda d: d["entries"][DISPROOF]["receipt"]["invalidated"][1].update(score="@f@"), f="0.5"),
        f"{R}.invalidated[1].score",
        "no floats",
    ),
    Case(
        "two floats: the first in the file is named",
        splice(receipt(blast_radius="@a@", preserved_count="@b@"), a="1e2", b="0.25"),
        f"{R}.blast_radius",
    ),
    Case(
        "a float in a receipt outranks its broken digest",
        splice(lambda d: d["entries"][DISPROOF].update(digest="0" * 64, receipt={"x": "@f@"}), f="1.5"),
        f"{R}.x",
    ),
    # -- L15-L18: the run object ------------------------------------------------------------------------
    Case("run as text", edit(entry(0, run="f")), "entries[0].run", "an object"),
    Case(
        "edited run id",
        edit(entry(0, run={"flow_run_id": "f", "task_run_id": None})),
        "entries[0].digest",
        "edited",
    ),
    Case("empty run id", edit(entry(0, run={"flow_run_id": "", "task_run_id": None})), "entries[0].run.flow_run_id"),
    Case("missing run field", edit(entry(0, run={"flow_run_id": None})), "entries[0].run.task_run_id"),
    Case(
        "unknown run field",
        edit(entry(0, run={"flow_run_id": None, "task_run_id": None, "x": 1})),
        "entries[0].run.x",
    ),
    # -- L19-L21: the chain ------------------------------------------------------------------------------
    Case(
        "upper-case digest",
        edit(lambda d: d["entries"][0].update(digest=d["entries"][0]["digest"].upper())),
        "entries[0].digest",
    ),
    Case("short previous", edit(entry(0, previous="0" * 63)), "entries[0].previous", "hex"),
    Case(
        "edited detail",
        edit(lambda d: d["entries"][3].update(detail=d["entries"][3]["detail"] + "!")),
        "entries[3].digest",
    ),
    Case("edited event", edit(entry(1, event="executed")), "entries[1].digest", "edited"),
    Case("edited round", edit(entry(0, round=2)), "entries[0].digest"),
    Case(
        "edited receipt",
        edit(lambda d: d["entries"][DISPROOF]["receipt"].update(blast_radius=7)),
        f"entries[{DISPROOF}].digest",
    ),
    Case("edit with its digest recomputed", edit(_rechain_one(4, "detail", "forged")), "entries[5].previous", "chains"),
    Case("last entry edited, digest recomputed", edit(_rechain_one(28, "detail", "forged")), "head", "truncated"),
    # -- L22-L23: the head -----------------------------------------------------------------------------
    Case("receipt moved to another event", edit(entry(9, receipt={"reason": "x"})), "entries[9].receipt", "disproved"),
    Case(
        "edited receipt preserved list",
        edit(lambda d: d["entries"][DISPROOF]["receipt"]["preserved"].pop()),
        f"entries[{DISPROOF}].digest",
    ),
    Case("truncated list", edit(lambda d: d["entries"].__delitem__(slice(27, None))), "head", "truncated"),
    Case("empty list, old head", edit(lambda d: d.update(entries=[])), "head"),
    Case(
        "a wholly re-forged chain verifies without a trusted head",
        edit(lambda d: (d["entries"][3].update(detail="forged"), rechain(d))),
        None,
    ),
)

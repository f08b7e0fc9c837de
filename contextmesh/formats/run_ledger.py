"""The run ledger: an append-only, SHA-256 hash-chained record of every run that changed a session.

Each entry's ``digest`` is SHA-256 over the RFC 8785 bytes of the entry's other fields, ``previous``
(the digest before it, or 64 zeros for the first) included. Fields, every one always present:

``seq`` (1, 2, …), ``round``, ``event`` (:data:`EVENTS`), ``task``, ``decision_id``, ``key`` (the
worker or auditor key involved), ``detail`` (free text), ``receipt`` (the whole invalidation
receipt on a ``disproved`` entry, else null), ``run`` (``{"flow_run_id", "task_run_id"}`` when an
orchestrator ran it, else null — inside the digest, so the ledger points at the UI tamper-evidently),
``previous`` and ``digest``. No timestamps: a ledger written in-process is byte-identical every time.

The file ``contextmesh.runledger`` v2 is ``{"schema", "version", "head", "entries"}``. The loader
takes every entry exactly as written and checks it — it never replays ``record``, which would
recompute digests and launder an edit — so an edited, deleted, reordered or truncated entry is
refused, and with ``expect_head`` a wholly re-forged chain is refused too. Without a trusted head a
re-forged chain verifies: that is what a hash chain is (see docs/formats/runledger-v2.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contextmesh.core.canonical import (
    MAX_DEPTH,
    canonical_bytes,
    ensure_canonical,
    ensure_depth,
    file_bytes,
    loads,
    nesting_depth,
    sha256_hex,
)
from contextmesh.core.errors import CanonicalError, SnapshotError
from contextmesh.formats.records import check_header, exact_keys, expect_dict, expect_list

__all__ = [
    "EVENTS",
    "GENESIS",
    "LEDGER_SCHEMA",
    "LEDGER_VERSION",
    "EntryBytes",
    "LedgerEntry",
    "RunLedger",
    "detached_entry",
    "entry_digest",
]

LEDGER_SCHEMA = "contextmesh.runledger"
LEDGER_VERSION = 2
GENESIS = "0" * 64
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
_FIELDS = ("seq", "round", "event", "task", "decision_id", "key", "detail", "receipt", "run", "previous", "digest")
_HEX = re.compile(r"^[0-9a-f]{64}$")
# An entry lies two levels down in the file (the document, then ``entries``).
_ENTRY_LEVEL = 2
# Told, for each entry a load checks, the RFC 8785 bytes its digest check hashed and the digest:
# a caller that needs the entry's bytes again (a Merkle leaf) takes them from here, not a second pass.
EntryBytes = Callable[[bytes, str], None]


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded event."""

    seq: int
    round: int
    event: str
    task: str | None
    decision_id: str | None
    key: str | None
    detail: str
    receipt: dict[str, Any] | None
    run: dict[str, str | None] | None
    previous: str
    digest: str

    def to_dict(self) -> dict[str, Any]:
        """The entry as written in the file."""
        return {name: getattr(self, name) for name in _FIELDS}


def entry_digest(fields: dict[str, Any]) -> str:
    """The digest an entry with these fields (``digest`` excluded) must carry."""
    return sha256_hex(_digest_bytes(fields))


def _digest_bytes(fields: dict[str, Any]) -> bytes:
    return canonical_bytes({k: v for k, v in fields.items() if k != "digest"})


class RunLedger:
    """Append events; verify the chain; snapshot and restore without replaying."""

    def __init__(self) -> None:
        self._entries: list[LedgerEntry] = []

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """Every entry, oldest first."""
        return tuple(self._entries)

    def tail(self, start: int) -> tuple[LedgerEntry, ...]:
        """The entries from index ``start`` on, without copying the ones before (a commit seals only those)."""
        return tuple(self._entries[start:])

    @property
    def head(self) -> str:
        """The last entry's digest (64 zeros for an empty ledger)."""
        return self._entries[-1].digest if self._entries else GENESIS

    def record(
        self,
        event: str,
        *,
        round: int,
        task: str | None = None,
        decision_id: str | None = None,
        key: str | None = None,
        detail: str = "",
        receipt: dict[str, Any] | None = None,
        run: dict[str, str | None] | None = None,
    ) -> LedgerEntry:
        """Append one event and return it."""
        if event not in EVENTS:
            raise SnapshotError("event", repr(event), f"a ledger event is one of {list(EVENTS)}")
        fields: dict[str, Any] = {
            "seq": len(self._entries) + 1,
            "round": round,
            "event": event,
            "task": task,
            "decision_id": decision_id,
            "key": key,
            "detail": detail,
            "receipt": receipt,
            "run": None
            if run is None
            else {"flow_run_id": run.get("flow_run_id"), "task_run_id": run.get("task_run_id")},
            "previous": self.head,
        }
        if run is not None and set(run) - {"flow_run_id", "task_run_id"}:
            raise SnapshotError(
                f"entries[{len(self._entries)}].run", repr(sorted(run)), "a run names flow_run_id and task_run_id only"
            )
        path = f"entries[{len(self._entries)}]"
        # Before anything walks the receipt: the RFC 8785 digest recurses once per level.
        depth = _ENTRY_LEVEL + nesting_depth(fields)
        if depth > MAX_DEPTH:  # the file could not be written, nor read back
            raise SnapshotError(
                f"{path}.receipt",
                f"arrays and objects nested {depth} deep in the file",
                f"a file nests arrays and objects at most {MAX_DEPTH} deep",
            )
        ensure_canonical(fields, path)
        fields["receipt"] = _copy_data(receipt)  # the ledger owns its receipts; callers keep theirs
        fields["digest"] = entry_digest(fields)
        # The writer holds itself to the loader's rules, so every ledger it writes can be read back.
        _check_entry(fields, path, fields["seq"], self.head)
        entry = LedgerEntry(**fields)
        self._entries.append(entry)
        return entry

    def verify(self) -> bool:
        """True when every digest recomputes and every entry chains to the one before it."""
        previous = GENESIS
        for index, entry in enumerate(self._entries, start=1):
            data = entry.to_dict()
            if entry.seq != index or entry.previous != previous or entry.digest != entry_digest(data):
                return False
            previous = entry.digest
        return True

    def receipts(self) -> list[dict[str, Any]]:
        """Every disproof's receipt, oldest first — readable without the graph."""
        return [_copy_data(e.receipt) for e in self._entries if e.event == "disproved" and e.receipt is not None]

    def snapshot(self) -> dict[str, Any]:
        """The file document."""
        return {
            "schema": LEDGER_SCHEMA,
            "version": LEDGER_VERSION,
            "head": self.head,
            "entries": [e.to_dict() for e in self._entries],
        }

    def dump(self) -> bytes:
        """The file bytes."""
        return file_bytes(self.snapshot())

    @classmethod
    def load(cls, data: bytes, *, expect_head: str | None = None, entry_bytes: EntryBytes | None = None) -> RunLedger:
        """Parse and check a ledger file."""
        # loads() already refused text nested too deep: the document need not be walked again.
        return cls._checked(loads(data), expect_head, entry_bytes)

    @classmethod
    def from_snapshot(
        cls, data: Any, *, expect_head: str | None = None, entry_bytes: EntryBytes | None = None
    ) -> RunLedger:
        """Restore entries exactly as written, then check them; never replay.

        ``entry_bytes``, when given, is called once per entry, in order, with the bytes its digest
        was recomputed from and the digest, after the entry passed its checks.
        """
        ensure_depth(data)  # what load() refused in the text, refused in a document handed in directly
        return cls._checked(data, expect_head, entry_bytes)

    @classmethod
    def _checked(cls, data: Any, expect_head: str | None, entry_bytes: EntryBytes | None) -> RunLedger:
        top = expect_dict(data, "$")
        check_header(top, LEDGER_SCHEMA, LEDGER_VERSION, original_versions=(1,))
        exact_keys(top, ("schema", "version", "head", "entries"), "$")
        head = top["head"]
        if type(head) is not str or not _HEX.match(head):
            raise SnapshotError("head", repr(head), "the head is 64 lower-case hex digits")
        ledger = cls()
        previous = GENESIS
        for index, raw in enumerate(expect_list(top["entries"], "entries"), start=1):
            path = f"entries[{index - 1}]"
            entry = expect_dict(raw, path)
            exact_keys(entry, _FIELDS, path)
            hashed = _check_entry(entry, path, index, previous)
            if entry_bytes is not None:
                entry_bytes(hashed, entry["digest"])
            ledger._entries.append(LedgerEntry(**_copy_data(entry)))
            previous = entry["digest"]
        if head != ledger.head:
            raise SnapshotError(
                "head",
                repr(head),
                f"the head must be the last entry's digest ({ledger.head}); a truncated or "
                "extended entry list contradicts it",
            )
        if expect_head is not None and head != expect_head:
            raise SnapshotError(
                "head", repr(head), f"the trusted head is {expect_head!r}; this chain is not the history that ran"
            )
        return ledger


def detached_entry(raw: Any, path: str, index: int) -> LedgerEntry:
    """One entry taken out of its ledger (a proof bundle's), checked by L10-L20 and L22 as ``entries[index]``.

    L21 needs the entry before it, which a detached entry does not carry: its ``previous`` is only
    checked to be a hex64 (L20). Its ``digest`` still must recompute (L22), so an edit shows.
    """
    entry = expect_dict(raw, path)
    exact_keys(entry, _FIELDS, path)
    _check_entry(entry, path, index + 1, None)
    return LedgerEntry(**_copy_data(entry))


def _check_entry(entry: dict[str, Any], path: str, seq: int, previous: str | None) -> bytes:
    """Check one entry; return the RFC 8785 bytes its digest recomputed from."""
    if type(entry["seq"]) is not int or entry["seq"] != seq:
        raise SnapshotError(f"{path}.seq", repr(entry["seq"]), f"entries are numbered 1, 2, … (expected {seq})")
    if type(entry["round"]) is not int or entry["round"] < 0:  # type(...) is int refuses bools too
        raise SnapshotError(f"{path}.round", repr(entry["round"]), "a round is a non-negative integer")
    if entry["event"] not in EVENTS:
        raise SnapshotError(f"{path}.event", repr(entry["event"]), f"an event is one of {list(EVENTS)}")
    for name in ("task", "decision_id", "key"):
        value = entry[name]
        if value is not None and (type(value) is not str or not value):
            raise SnapshotError(f"{path}.{name}", repr(value), "non-empty text or null")
    if type(entry["detail"]) is not str:
        raise SnapshotError(f"{path}.detail", repr(entry["detail"]), "the detail is text")
    receipt = entry["receipt"]
    if receipt is not None and type(receipt) is not dict:
        raise SnapshotError(f"{path}.receipt", repr(receipt)[:60], "a receipt is an object or null")
    if (receipt is not None) != (entry["event"] == "disproved"):
        raise SnapshotError(f"{path}.receipt", repr(receipt)[:60], "exactly the disproved entries carry a receipt")
    if receipt is not None:
        _refuse_floats(receipt, f"{path}.receipt")
    run = entry["run"]
    if run is not None:
        run = expect_dict(run, f"{path}.run")
        exact_keys(run, ("flow_run_id", "task_run_id"), f"{path}.run")
        for name, value in run.items():
            if value is not None and (type(value) is not str or not value):
                raise SnapshotError(f"{path}.run.{name}", repr(value), "a run id is non-empty text or null")
    for name in ("previous", "digest"):
        if type(entry[name]) is not str or not _HEX.match(entry[name]):
            raise SnapshotError(f"{path}.{name}", repr(entry[name]), "a digest is 64 lower-case hex digits")
    if previous is not None and entry["previous"] != previous:
        raise SnapshotError(
            f"{path}.previous", repr(entry["previous"]), f"each entry chains to the digest before it ({previous})"
        )
    try:
        hashed = _digest_bytes(entry)
    except CanonicalError as exc:
        raise SnapshotError(f"{path}.{exc.path}", exc.found, exc.rule) from None
    if entry["digest"] != sha256_hex(hashed):
        raise SnapshotError(
            f"{path}.digest",
            repr(entry["digest"]),
            "the digest must recompute from the entry's fields; this entry was edited after it was written",
        )
    return hashed


def _copy_data(value: Any) -> Any:
    """A deep copy of plain JSON data (dicts, lists, tuples and scalars), made without recursion.

    ``copy.deepcopy`` spends about two Python frames a level, so an entry nested to the file limit
    took ~510 frames and a caller already ~600 frames deep met ``RecursionError``. Dicts keep their
    key order and tuples stay tuples, as with ``deepcopy``; scalars are immutable and are shared.
    Anything else is shared too: every caller copies data the canonical checks have accepted.
    """
    holder: list[Any] = [None]
    # (source, container to fill, key in it); a tuple is filled as a list, then frozen by _FREEZE.
    work: list[tuple[Any, Any, Any]] = [(value, holder, 0)]
    while work:
        item, into, key = work.pop()
        if item is _FREEZE:
            into[key] = tuple(into[key])
            continue
        kind = type(item)
        if kind is dict:
            copied: Any = dict.fromkeys(item)
            work.extend((child, copied, name) for name, child in item.items())
        elif kind is list or kind is tuple:
            copied = [None] * len(item)
            if kind is tuple:
                work.append((_FREEZE, into, key))  # popped after every child below it is filled
            work.extend((child, copied, index) for index, child in enumerate(item))
        else:
            copied = item
        into[key] = copied
    return holder[0]


_FREEZE = object()


def _refuse_floats(value: Any, path: str) -> None:
    """Refuse the first float in ``value``, in document order.

    A ledger holds integers only. Nothing the engine records is fractional, and an independent
    verifier then needs no shortest-round-trip float printer to recompute RFC 8785 digests — the
    one part of RFC 8785 that independent implementations most often get subtly wrong.
    """
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if type(item) is float:
            raise SnapshotError(where, f"the float {item!r}", "a ledger holds no floats: every number is an integer")
        if type(item) is dict:
            stack.extend(reversed([(child, f"{where}.{key}") for key, child in item.items()]))
        elif type(item) is list or type(item) is tuple:
            stack.extend(reversed([(child, f"{where}[{index}]") for index, child in enumerate(item)]))

"""A ledger nested to the file limit is handled by a caller that is already deep in the stack.

A receipt may nest to the file limit (254 levels with the document and ``entries`` above it). The
ledger copies each entry and receipt so that it owns them; ``copy.deepcopy`` spent about two Python
frames a level on that, some 510 frames at the limit, so ``RunLedger.from_snapshot`` raised
``RecursionError`` for a caller already ~600 frames deep (an MCP tool under a framework, a flow run
under Prefect). The copy is now iterative.

What still recurses is the RFC 8785 digest of each entry (the third-party serialiser, one frame a
level), so the tests leave :data:`HEADROOM` frames below the interpreter's recursion limit: enough for
the digest (~255 frames at the limit), far from enough for the digest plus a recursive copy (~765).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from contextmesh.core.canonical import MAX_DEPTH, loads
from contextmesh.formats.run_ledger import RunLedger

HEADROOM = 400
# The receipt object lies at level 4 of the file (document, entries, entry, receipt).
RECEIPT_LEVEL = 4


def _stack_depth() -> int:
    frame: FrameType | None = sys._getframe(1)
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def _at_depth(target: int, call: Callable[[], Any]) -> Any:
    """``call()`` from a stack ``target`` frames deep (counting every frame below it)."""
    if _stack_depth() < target:
        return _at_depth(target, call)
    return call()


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _deep_ledger() -> RunLedger:
    """A ledger whose one receipt nests exactly to the file limit."""
    ledger = RunLedger()
    ledger.record("executed", round=1, task="a", key="worker.a", detail="ran")
    ledger.record("disproved", round=1, task="a", receipt={"deep": _nested(MAX_DEPTH - RECEIPT_LEVEL)})
    return ledger


def _deep_target() -> int:
    return sys.getrecursionlimit() - HEADROOM


def test_the_deep_ledger_reaches_exactly_the_file_limit() -> None:
    data = _deep_ledger().dump()
    assert b"[" * (MAX_DEPTH - RECEIPT_LEVEL) in data
    assert RunLedger.load(data).dump() == data  # and it is a valid file, not a refusal


def test_from_snapshot_of_a_ledger_at_the_nesting_limit_works_from_a_deep_stack() -> None:
    # On main this raised RecursionError: copy.deepcopy of each entry needed ~510 frames.
    ledger = _deep_ledger()
    document = loads(ledger.dump())
    restored = _at_depth(_deep_target(), lambda: RunLedger.from_snapshot(document, expect_head=ledger.head))
    assert restored.dump() == ledger.dump()
    assert restored.entries[1].receipt == {"deep": _nested(MAX_DEPTH - RECEIPT_LEVEL)}


def test_from_snapshot_owns_what_it_restored() -> None:
    # The copy is still a copy: the caller's document can change without changing the ledger.
    ledger = _deep_ledger()
    document = loads(ledger.dump())
    restored = RunLedger.from_snapshot(document)
    innermost = document["entries"][1]["receipt"]["deep"]
    while isinstance(innermost[0], list):
        innermost = innermost[0]
    innermost[0] = 2
    document["entries"][1]["receipt"]["extra"] = True
    assert restored.dump() == ledger.dump()
    assert restored.verify()


@pytest.mark.parametrize("call", ["record", "receipts"])
def test_recording_and_reading_receipts_at_the_limit_work_from_a_deep_stack(call: str) -> None:
    receipt = {"deep": _nested(MAX_DEPTH - RECEIPT_LEVEL)}
    ledger = RunLedger()
    if call == "record":
        entry = _at_depth(_deep_target(), lambda: ledger.record("disproved", round=1, receipt=receipt))
        receipt["deep"] = None  # the ledger keeps its own copy
        assert entry.receipt == {"deep": _nested(MAX_DEPTH - RECEIPT_LEVEL)}
    else:
        ledger.record("disproved", round=1, receipt=receipt)
        receipts = _at_depth(_deep_target(), ledger.receipts)
        receipts[0]["deep"] = None  # the caller gets its own copy
        assert ledger.receipts() == [{"deep": _nested(MAX_DEPTH - RECEIPT_LEVEL)}]
    assert ledger.verify()


def test_a_copied_receipt_keeps_its_shape() -> None:
    # Tuples stay tuples and key order is kept, as copy.deepcopy kept them.
    receipt: dict[str, Any] = {"b": (1, [2, (3, {"z": 1, "a": 2})]), "a": [], "c": {}}
    ledger = RunLedger()
    ledger.record("disproved", round=1, receipt=receipt)
    (copied,) = ledger.receipts()
    assert copied == receipt
    assert list(copied) == ["b", "a", "c"]
    assert type(copied["b"]) is tuple and type(copied["b"][1][1]) is tuple
    assert list(copied["b"][1][1][1]) == ["z", "a"]
    assert copied["b"][1] is not receipt["b"][1]

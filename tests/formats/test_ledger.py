"""The run ledger: recording, the hash chain, receipts, and a loader that never launders a tamper.

``docs/formats/runledger-v2.md`` is the format; ``tests/test_ledger_verifier.py`` checks the
independent verifier against the same loader.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from contextmesh.core.canonical import loads
from contextmesh.core.errors import CanonicalError, InputError, SnapshotError
from contextmesh.demo.execute import run_walkthrough
from contextmesh.formats.run_ledger import EVENTS, GENESIS, LEDGER_SCHEMA, LEDGER_VERSION, RunLedger, entry_digest

ROOT = Path(__file__).resolve().parents[2]
Doc = dict[str, Any]


@pytest.fixture(scope="module")
def demo() -> RunLedger:
    return run_walkthrough().runner.ledger


@pytest.fixture(scope="module")
def demo_bytes(demo: RunLedger) -> bytes:
    return demo.dump()


def _doc(data: bytes) -> Doc:
    return json.loads(data)


def _small() -> RunLedger:
    ledger = RunLedger()
    ledger.record("executed", round=1, task="a", decision_id="decision:a-v1", key="w.a.v1", detail="output 00")
    ledger.record("audited", round=1, task="a", decision_id="decision:a-v1", key="au.v1", detail="ok")
    ledger.record(
        "disproved",
        round=2,
        task="a",
        decision_id="decision:a-v1",
        key="au.v1",
        detail="ground fell",
        receipt={"reason": "ground fell", "blast_radius": 1, "invalidated": [{"id": "decision:a-v1", "chain": "x"}]},
    )
    ledger.record("invalidated", round=2, task="a", decision_id="decision:a-v1", detail="x")
    return ledger


# -- recording and verifying ------------------------------------------------------------------


def test_an_empty_ledger_has_the_genesis_head_and_round_trips() -> None:
    ledger = RunLedger()
    assert ledger.head == GENESIS == "0" * 64
    assert ledger.verify()
    assert ledger.snapshot() == {"schema": LEDGER_SCHEMA, "version": LEDGER_VERSION, "head": GENESIS, "entries": []}
    assert RunLedger.load(ledger.dump()).dump() == ledger.dump()


def test_record_chains_each_entry_to_the_one_before() -> None:
    ledger = _small()
    entries = ledger.entries
    assert [e.seq for e in entries] == [1, 2, 3, 4]
    assert entries[0].previous == GENESIS
    for before, after in itertools.pairwise(entries):
        assert after.previous == before.digest
    assert ledger.head == entries[-1].digest
    assert ledger.verify()


def test_digest_is_sha256_over_rfc8785_of_the_entry_without_its_digest() -> None:
    for entry in _small().entries:
        fields = entry.to_dict()
        del fields["digest"]
        assert entry.digest == hashlib.sha256(rfc8785.dumps(fields)).hexdigest()
        assert entry.digest == entry_digest(entry.to_dict())


def test_every_entry_has_every_field_always_present() -> None:
    for entry in _small().entries:
        assert list(entry.to_dict()) == [
            "seq",
            "round",
            "event",
            "task",
            "decision_id",
            "key",
            "detail",
            "receipt",
            "run",
            "previous",
            "digest",
        ]


def test_record_refuses_an_unknown_event() -> None:
    with pytest.raises(SnapshotError) as caught:
        RunLedger().record("teleported", round=1)
    assert caught.value.path == "event"


def test_record_refuses_a_payload_with_no_single_json_form() -> None:
    ledger = RunLedger()
    with pytest.raises(CanonicalError) as caught:
        ledger.record("disproved", round=1, receipt={"score": float("nan")})
    assert caught.value.path.endswith("receipt.score")
    with pytest.raises(CanonicalError):
        ledger.record("disproved", round=1, receipt={"ids": {"a", "b"}})
    assert len(ledger) == 0


def test_verify_notices_an_entry_changed_in_memory() -> None:
    ledger = _small()
    ledger._entries[1] = ledger._entries[1].__class__(**{**ledger._entries[1].to_dict(), "detail": "forged"})
    assert not ledger.verify()


def test_receipts_are_the_disproved_entries_receipts_oldest_first(demo: RunLedger) -> None:
    receipts = demo.receipts()
    assert len(receipts) == 1
    disproved = [e for e in demo.entries if e.event == "disproved"]
    assert [e.receipt for e in disproved] == receipts
    receipt = receipts[0]
    assert receipt["ground"]["statement"] == "argon2-cffi has no open advisory"
    assert receipt["auditor"] == "auth.audit.advisory.v1"
    assert receipt["blast_radius"] == len(receipt["invalidated"]) == 8
    assert receipt["preserved_count"] == len(receipt["preserved"])
    assert receipt["preserved_digest"] == hashlib.sha256(rfc8785.dumps(sorted(receipt["preserved"]))).hexdigest()
    # Only disproved entries carry a receipt.
    assert all((e.receipt is not None) == (e.event == "disproved") for e in demo.entries)


def test_receipts_are_readable_from_the_file_alone(demo: RunLedger, demo_bytes: bytes) -> None:
    assert RunLedger.load(demo_bytes).receipts() == demo.receipts()


def test_the_demo_writes_the_documented_events_only(demo: RunLedger) -> None:
    assert len(demo) == 29
    assert {e.event for e in demo.entries} <= set(EVENTS)
    assert [e.event for e in demo.entries].count("invalidated") == 8


# -- the run object -------------------------------------------------------------------------


def test_run_is_always_present_and_null_in_process(demo: RunLedger, demo_bytes: bytes) -> None:
    for raw in _doc(demo_bytes)["entries"]:
        assert "run" in raw
        assert raw["run"] is None


def test_run_object_always_carries_both_ids() -> None:
    ledger = RunLedger()
    entry = ledger.record("executed", round=1, task="a", run={"flow_run_id": "f-1"})
    assert entry.run == {"flow_run_id": "f-1", "task_run_id": None}
    entry = ledger.record("executed", round=1, task="a", run={"flow_run_id": "f-1", "task_run_id": "t-1"})
    assert entry.run == {"flow_run_id": "f-1", "task_run_id": "t-1"}
    restored = RunLedger.load(ledger.dump())
    assert [e.run for e in restored.entries] == [e.run for e in ledger.entries]


def test_run_ids_are_inside_the_digest() -> None:
    bare, with_run, other_run = RunLedger(), RunLedger(), RunLedger()
    bare.record("executed", round=1, task="a")
    with_run.record("executed", round=1, task="a", run={"flow_run_id": "f-1", "task_run_id": "t-1"})
    other_run.record("executed", round=1, task="a", run={"flow_run_id": "f-1", "task_run_id": "t-2"})
    assert len({bare.head, with_run.head, other_run.head}) == 3


def test_changing_a_run_id_in_the_file_breaks_the_digest() -> None:
    ledger = RunLedger()
    ledger.record("executed", round=1, task="a", run={"flow_run_id": "f-1", "task_run_id": "t-1"})
    ledger.record("audited", round=1, task="a")
    doc = _doc(ledger.dump())
    doc["entries"][0]["run"]["task_run_id"] = "t-9"
    with pytest.raises(SnapshotError) as caught:
        RunLedger.from_snapshot(doc)
    assert caught.value.path == "entries[0].digest"
    doc["entries"][0]["run"] = None
    with pytest.raises(SnapshotError) as caught:
        RunLedger.from_snapshot(doc)
    assert caught.value.path == "entries[0].digest"


# -- snapshot and restore: exactly as written, never replayed ---------------------------------


def test_valid_file_round_trips_byte_for_byte(demo: RunLedger, demo_bytes: bytes) -> None:
    restored = RunLedger.load(demo_bytes)
    assert restored.dump() == demo_bytes
    assert restored.head == demo.head
    assert restored.entries == demo.entries
    assert restored.verify()
    assert RunLedger.from_snapshot(demo.snapshot()).dump() == demo_bytes


def test_file_is_sorted_compact_utf8_json_with_one_trailing_newline(demo_bytes: bytes) -> None:
    doc = _doc(demo_bytes)
    assert json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode() + b"\n" == demo_bytes
    assert "—".encode() in demo_bytes  # non-ASCII is raw UTF-8


def test_from_snapshot_never_replays_record(demo_bytes: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("from_snapshot replayed record()")

    monkeypatch.setattr(RunLedger, "record", refuse)
    restored = RunLedger.load(demo_bytes)
    assert restored.dump() == demo_bytes


def test_from_snapshot_keeps_the_digests_it_was_given(demo_bytes: bytes) -> None:
    written = _doc(demo_bytes)["entries"]
    restored = RunLedger.load(demo_bytes)
    assert [e.to_dict() for e in restored.entries] == written


def test_an_edit_is_not_laundered_into_a_fresh_digest(demo_bytes: bytes) -> None:
    # Replaying record() over the edited entries would produce a consistent chain; the loader
    # compares each digest with the one written instead, so the edit is refused.
    doc = _doc(demo_bytes)
    doc["entries"][0]["detail"] = "output forged"
    with pytest.raises(SnapshotError) as caught:
        RunLedger.from_snapshot(doc)
    assert caught.value.path == "entries[0].digest"


def test_expect_head_accepts_the_true_head(demo: RunLedger, demo_bytes: bytes) -> None:
    assert RunLedger.load(demo_bytes, expect_head=demo.head).head == demo.head


# -- the tamper suite --------------------------------------------------------------------------


def _entry(index: int, **changes: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["entries"][index].update(changes)

    return change


def _receipt_edit(doc: Doc) -> None:
    doc["entries"][10]["receipt"]["preserved"].pop()


def _receipt_chain_edit(doc: Doc) -> None:
    doc["entries"][10]["receipt"]["invalidated"][0]["chain"] = "nothing fell"


def _delete(doc: Doc) -> None:
    del doc["entries"][12]


def _reorder(doc: Doc) -> None:
    entries = doc["entries"]
    entries[20], entries[21] = entries[21], entries[20]


def _truncate(doc: Doc) -> None:
    del doc["entries"][25:]


def _rechain(doc: Doc) -> None:
    entry = doc["entries"][5]
    entry["detail"] = "forged"
    entry["digest"] = entry_digest(entry)


def _drop(index: int | None, name: str) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        (doc if index is None else doc["entries"][index]).pop(name)

    return change


TAMPER_CASES: dict[str, tuple[Callable[[Doc], None], str, str]] = {
    # name: (change, .path, a fragment of the message)
    "edited detail text": (_entry(3, detail="no open advisory for anything"), "entries[3].digest", "edited"),
    "edited event": (_entry(1, event="executed"), "entries[1].digest", "edited"),
    "edited round": (_entry(21, round=2), "entries[21].digest", "edited"),
    "edited receipt preserved list": (_receipt_edit, "entries[10].digest", "edited"),
    "edited receipt chain": (_receipt_chain_edit, "entries[10].digest", "edited"),
    "edited entry with its own digest recomputed": (_rechain, "entries[6].previous", "chains"),
    "deleted entry": (_delete, "entries[12].seq", "numbered"),
    "two entries reordered": (_reorder, "entries[20].seq", "numbered"),
    "truncated entry list": (_truncate, "head", "truncated"),
    "unknown entry field": (_entry(4, signed_by="mallory"), "entries[4].signed_by", "unknown field"),
    "unknown top-level field": (lambda d: d.update(signature="x"), "signature", "unknown field"),
    "missing entry field": (_drop(7, "run"), "entries[7].run", "required"),
    "missing top-level field": (_drop(None, "head"), "head", "required"),
    "wrong schema": (lambda d: d.update(schema="contextmesh.execution"), "schema", "contextmesh.runledger"),
    "the original project's v1": (lambda d: d.update(version=1), "version", "original"),
    "an unknown later version": (lambda d: d.update(version=3), "version", "only v2"),
    "receipt moved to another event": (_entry(9, receipt={"reason": "x"}), "entries[9].receipt", "disproved"),
    "receipt dropped from a disproof": (_entry(10, receipt=None), "entries[10].receipt", "disproved"),
    "run object with an unknown id": (
        _entry(0, run={"flow_run_id": None, "task_run_id": None, "deployment_id": "d"}),
        "entries[0].run.deployment_id",
        "unknown field",
    ),
    "malformed head": (lambda d: d.update(head="HEAD"), "head", "hex"),
}


@pytest.mark.parametrize("name", list(TAMPER_CASES))
def test_tampered_file_is_refused_with_its_path(name: str, demo_bytes: bytes) -> None:
    change, path, fragment = TAMPER_CASES[name]
    doc = _doc(demo_bytes)
    change(doc)
    with pytest.raises(SnapshotError) as caught:
        RunLedger.from_snapshot(doc)
    assert caught.value.path == path
    assert fragment in str(caught.value)
    # The same through the bytes loader.
    data = json.dumps(doc, ensure_ascii=False).encode()
    with pytest.raises(SnapshotError) as again:
        RunLedger.load(data)
    assert again.value.path == path


def test_duplicate_key_byte_edit_is_refused(demo_bytes: bytes) -> None:
    data = demo_bytes.replace(b'"round":2,', b'"round":2,"round":3,', 1)
    assert data != demo_bytes
    with pytest.raises(CanonicalError) as caught:
        RunLedger.load(data)
    assert caught.value.path == "entries[10]"
    assert "'round' twice" in str(caught.value)


def test_duplicate_key_inside_a_receipt_is_refused(demo_bytes: bytes) -> None:
    data = demo_bytes.replace(b'"blast_radius":8', b'"blast_radius":8,"blast_radius":1', 1)
    with pytest.raises(CanonicalError) as caught:
        RunLedger.load(data)
    assert caught.value.path == "entries[10].receipt"


def test_v1_message_says_it_is_the_original_projects_format(demo_bytes: bytes) -> None:
    doc = _doc(demo_bytes)
    doc["version"] = 1
    with pytest.raises(SnapshotError) as caught:
        RunLedger.from_snapshot(doc)
    assert "original ContextMesh project" in caught.value.found
    assert "v2" in caught.value.rule


def _reforge(data: bytes) -> bytes:
    """Re-record every entry, each with an edit, through a fresh RunLedger."""
    forged = RunLedger()
    for raw in loads(data)["entries"]:
        forged.record(
            raw["event"],
            round=raw["round"],
            task=raw["task"],
            decision_id=raw["decision_id"],
            key=raw["key"],
            detail=raw["detail"] + " (rewritten)",
            receipt=raw["receipt"],
            run=raw["run"],
        )
    return forged.dump()


def test_wholly_reforged_chain_is_accepted_without_a_trusted_head(demo_bytes: bytes) -> None:
    # Not a hole: this is what a hash chain is. Anyone who can rewrite every entry can recompute
    # every digest, and no self-check tells that chain from the original.
    forged = _reforge(demo_bytes)
    assert forged != demo_bytes
    restored = RunLedger.load(forged)
    assert restored.verify()
    assert len(restored) == 29


def test_wholly_reforged_chain_is_refused_against_the_trusted_head(demo: RunLedger, demo_bytes: bytes) -> None:
    forged = _reforge(demo_bytes)
    with pytest.raises(SnapshotError) as caught:
        RunLedger.load(forged, expect_head=demo.head)
    assert caught.value.path == "head"
    assert demo.head in caught.value.rule


def test_a_refused_file_is_an_input_error(demo_bytes: bytes) -> None:
    with pytest.raises(InputError):
        RunLedger.load(demo_bytes[:-10])


# -- reproducibility ------------------------------------------------------------------------


def test_ledger_is_byte_identical_across_two_walkthroughs(demo_bytes: bytes) -> None:
    assert run_walkthrough().runner.ledger.dump() == demo_bytes


_PRINT_LEDGER = (
    "import hashlib\n"
    "from contextmesh.demo.execute import run_walkthrough\n"
    "print(hashlib.sha256(run_walkthrough().runner.ledger.dump()).hexdigest())\n"
)


@pytest.mark.parametrize("seed", ["0", "1", "4242"])
def test_ledger_is_byte_identical_across_hash_seeds(seed: str, demo_bytes: bytes) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    result = subprocess.run(
        [sys.executable, "-c", _PRINT_LEDGER], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == hashlib.sha256(demo_bytes).hexdigest()


# -- the writer holds itself to the reader's rules ------------------------------------------------

WRITER_ONLY = {
    "empty task": {"event": "executed", "round": 1, "task": ""},
    "negative round": {"event": "executed", "round": -1},
    "boolean round": {"event": "executed", "round": True},
    "receipt on an executed entry": {"event": "executed", "round": 1, "receipt": {"x": 1}},
    "disproved without a receipt": {"event": "disproved", "round": 1},
    "empty run id": {"event": "executed", "round": 1, "run": {"flow_run_id": ""}},
}


@pytest.mark.parametrize("name", list(WRITER_ONLY))
def test_record_refuses_what_the_loader_would_refuse(name: str) -> None:
    kwargs = dict(WRITER_ONLY[name])
    event = kwargs.pop("event")
    ledger = RunLedger()
    try:
        ledger.record(event, **kwargs)
    except InputError:
        return  # refused at write time: the writer and the reader agree
    RunLedger.load(ledger.dump())  # otherwise what it wrote must load


def test_record_names_a_refused_payload_with_a_file_path() -> None:
    with pytest.raises(CanonicalError) as caught:
        RunLedger().record("disproved", round=1, receipt={"score": float("nan")})
    assert caught.value.path == "entries[0].receipt.score"


def test_record_refuses_an_unknown_run_field() -> None:
    with pytest.raises(InputError):
        RunLedger().record("executed", round=1, run={"flow_run_id": "f", "task_run_id": None, "extra": "x"})


def test_record_copies_the_receipt() -> None:
    receipt = {"reason": "x", "invalidated": ["a"]}
    ledger = RunLedger()
    ledger.record("disproved", round=1, receipt=receipt)
    receipt["invalidated"].append("b")
    assert ledger.verify()


def test_reading_receipts_cannot_change_the_ledger() -> None:
    ledger = _small()
    ledger.receipts()[0]["blast_radius"] = 99
    assert ledger.verify()


def test_from_snapshot_does_not_share_the_documents_receipts() -> None:
    doc = _small().snapshot()
    doc = json.loads(json.dumps(doc))
    restored = RunLedger.from_snapshot(doc)
    doc["entries"][2]["receipt"]["blast_radius"] = 99
    assert restored.verify()


# -- floats, depth and the order of problems (docs/formats/runledger-v2.md, rules L1-L4 and L18) --


def test_record_refuses_a_float_in_a_receipt() -> None:
    ledger = RunLedger()
    with pytest.raises(SnapshotError) as caught:
        ledger.record("disproved", round=1, receipt={"reason": "x", "scores": [1, 0.5]})
    assert caught.value.path == "entries[0].receipt.scores[1]"
    assert "no floats" in caught.value.rule
    assert len(ledger) == 0


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


def test_record_refuses_a_receipt_nested_deeper_than_a_file_may_be() -> None:
    # The receipt object sits at level 4 of the file, so 250 arrays inside it reach level 254.
    ledger = RunLedger()
    ledger.record("disproved", round=1, receipt={"deep": _nested(250)})
    assert RunLedger.load(ledger.dump()).dump() == ledger.dump()
    for levels, found in ((251, 255), (5000, 5004)):  # 5,000 levels would overflow a recursive copy
        with pytest.raises(SnapshotError) as caught:
            ledger.record("disproved", round=1, receipt={"deep": _nested(levels)})
        assert caught.value.path == "entries[1].receipt"
        assert caught.value.found == f"arrays and objects nested {found} deep in the file"
    assert len(ledger) == 1


def test_from_snapshot_refuses_a_document_nested_too_deep() -> None:
    doc = _small().snapshot()
    doc["entries"][2]["receipt"]["deep"] = _nested(2000)
    with pytest.raises(CanonicalError) as caught:
        RunLedger.from_snapshot(doc)
    assert caught.value.path == "$"
    assert caught.value.found == "arrays and objects nested 2004 deep"  # receipt at level 4


@pytest.mark.parametrize("spaced", [False, True])
def test_load_refuses_1024_levels_cleanly(spaced: bool, demo_bytes: bytes) -> None:
    # Today's main accepted this file when compact and raised RecursionError when spaced.
    gap = b" " if spaced else b""
    deep = (b"[" + gap) * 1020 + b"1" + (gap + b"]") * 1020
    data = demo_bytes.replace(b'"blast_radius":8', b'"blast_radius":8,"deep":' + deep, 1)
    with pytest.raises(CanonicalError) as caught:
        RunLedger.load(data)
    assert caught.value.path == "$"
    assert caught.value.found == "arrays and objects nested 1024 deep"
    assert caught.value.rule == "a file nests arrays and objects at most 254 deep"


def test_load_names_the_first_of_two_integers_beyond_the_safe_range(demo_bytes: bytes) -> None:
    doc = _doc(demo_bytes)
    data = json.dumps(doc).replace('"round": 1,', '"round": 9007199254740992,').encode()
    with pytest.raises(CanonicalError) as caught:
        RunLedger.load(data)
    assert caught.value.path == "entries[0].round"

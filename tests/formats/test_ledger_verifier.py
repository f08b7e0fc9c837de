"""``tools/verify_runledger.py``: an independent, standard-library-only verifier of the ledger file.

It was written from ``docs/formats/runledger-v2.md`` alone. These tests run it as a program on the
demo's ledger and on tampered copies, check it agrees with the reference loader (same verdict,
same path) case by case, check its RFC 8785 against the ``rfc8785`` package, and check by AST that
it imports nothing but the standard library.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_cases import CASES, Case

from contextmesh.core.canonical import MAX_DEPTH, loads
from contextmesh.core.errors import InputError
from contextmesh.demo.execute import run_walkthrough
from contextmesh.formats.run_ledger import RunLedger

ROOT = Path(__file__).resolve().parents[2]
VERIFIER = ROOT / "tools" / "verify_runledger.py"
SPEC = ROOT / "docs" / "formats" / "runledger-v2.md"


def _load_verifier() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verify_runledger", VERIFIER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


verifier = _load_verifier()


@pytest.fixture(scope="module")
def demo() -> RunLedger:
    return run_walkthrough().runner.ledger


@pytest.fixture(scope="module")
def demo_bytes(demo: RunLedger) -> bytes:
    return demo.dump()


def _run(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(VERIFIER), str(path), *extra], capture_output=True, text=True, check=False, cwd=ROOT
    )


def _encode(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode() + b"\n"


# -- the program ------------------------------------------------------------------------------


def test_demo_ledger_verifies_with_the_same_head(demo: RunLedger, demo_bytes: bytes, tmp_path: Path) -> None:
    path = tmp_path / "runledger.json"
    path.write_bytes(demo_bytes)
    result = _run(path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ok {len(demo)} entries head {demo.head}"
    assert len(demo) == 29


def test_demo_ledger_verifies_against_its_trusted_head(demo: RunLedger, demo_bytes: bytes, tmp_path: Path) -> None:
    path = tmp_path / "runledger.json"
    path.write_bytes(demo_bytes)
    assert _run(path, "--expect-head", demo.head).returncode == 0
    other = _run(path, "--expect-head", "f" * 64)
    assert other.returncode == 1
    assert "head" in other.stderr and "trusted head" in other.stderr


def _edit_detail(doc: dict[str, Any]) -> None:
    doc["entries"][3]["detail"] += "!"


def _delete(doc: dict[str, Any]) -> None:
    del doc["entries"][5]


def _swap(doc: dict[str, Any]) -> None:
    entries = doc["entries"]
    entries[2], entries[3] = entries[3], entries[2]


def _truncate(doc: dict[str, Any]) -> None:
    del doc["entries"][-2:]


def _edit_receipt(doc: dict[str, Any]) -> None:
    doc["entries"][10]["receipt"]["blast_radius"] -= 1


def _v1(doc: dict[str, Any]) -> None:
    doc["version"] = 1


PROGRAM_CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "edited detail": (_edit_detail, "entries[3].digest"),
    "deleted entry": (_delete, "entries[5].seq"),
    "swapped entries": (_swap, "entries[2].seq"),
    "truncated list": (_truncate, "head"),
    "edited receipt": (_edit_receipt, "entries[10].digest"),
    "original project's v1": (_v1, "version"),
}


@pytest.mark.parametrize("name", list(PROGRAM_CASES))
def test_tampered_copy_exits_1_naming_the_place(name: str, demo_bytes: bytes, tmp_path: Path) -> None:
    change, where = PROGRAM_CASES[name]
    doc = json.loads(demo_bytes)
    change(doc)
    path = tmp_path / "tampered.json"
    path.write_bytes(_encode(doc))
    result = _run(path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"refused at {where}:" in result.stderr


def test_duplicate_key_exits_1(demo_bytes: bytes, tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_bytes(demo_bytes.replace(b'"round":1,', b'"round":1,"round":1,', 1))
    result = _run(path)
    assert result.returncode == 1
    assert "refused at entries[0]:" in result.stderr and "'round' twice" in result.stderr


def test_unreadable_file_exits_1(tmp_path: Path) -> None:
    assert _run(tmp_path / "missing.json").returncode == 1


def test_malformed_expect_head_is_a_usage_error(demo_bytes: bytes, tmp_path: Path) -> None:
    path = tmp_path / "runledger.json"
    path.write_bytes(demo_bytes)
    assert _run(path, "--expect-head", "ABC").returncode == 2


def _reforge(data: bytes) -> bytes:
    """Rewrite every entry (with an edit) through a fresh ledger: a perfect, different chain."""
    forged = RunLedger()
    for entry in loads(data)["entries"]:
        forged.record(
            entry["event"],
            round=entry["round"],
            task=entry["task"],
            decision_id=entry["decision_id"],
            key=entry["key"],
            detail=entry["detail"].replace("argon2", "scrypt"),
            receipt=entry["receipt"],
            run=entry["run"],
        )
    return forged.dump()


def test_wholly_reforged_chain_passes_unless_a_trusted_head_is_given(
    demo: RunLedger, demo_bytes: bytes, tmp_path: Path
) -> None:
    forged = _reforge(demo_bytes)
    assert forged != demo_bytes
    path = tmp_path / "forged.json"
    path.write_bytes(forged)
    # That a re-forged chain verifies on its own is what a hash chain is, not a hole.
    assert _run(path).returncode == 0
    refused = _run(path, "--expect-head", demo.head)
    assert refused.returncode == 1
    assert "refused at head:" in refused.stderr


# -- agreement with the reference loader on the whole corruption suite ----------------------------


def _reference(data: bytes, expect_head: str | None = None) -> InputError | None:
    try:
        RunLedger.load(data, expect_head=expect_head)
    except InputError as exc:
        return exc
    return None


def _independent(data: bytes, expect_head: str | None = None) -> Any:
    try:
        verifier.verify_bytes(data, expect_head)
    except verifier.InvalidLedgerError as exc:
        return exc
    return None


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_verifier_and_reference_report_the_same_first_problem(case: Case, demo_bytes: bytes) -> None:
    data = case.make(demo_bytes)
    reference, independent = _reference(data), _independent(data)
    assert (reference is None) == (independent is None) == (case.path is None), (reference, independent)
    if case.path is None:
        return
    assert reference is not None and independent is not None
    assert reference.path == independent.path == case.path, (str(reference), str(independent))
    assert case.fragment in str(reference), str(reference)
    assert case.fragment in str(independent), str(independent)


def test_the_suite_covers_every_kind_of_rule() -> None:
    assert len(CASES) >= 90
    assert len({case.name for case in CASES}) == len(CASES)
    refused_at = {case.path for case in CASES}
    assert {None, "$", "schema", "version", "head", "entries", "entries[0].seq", "entries[0].run.x"} <= refused_at


DEPTHS = [255, 1024, 1025, 10_000, 100_000]


@pytest.mark.parametrize("levels", DEPTHS)
def test_deep_nesting_is_refused_with_the_same_message_by_both(levels: int) -> None:
    # Before the fix the verifier raised RecursionError here and the loader accepted 1,024 levels.
    data = b'{"entries":' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"
    reference, independent = _reference(data), _independent(data)
    assert reference is not None and independent is not None
    assert (
        str(reference)
        == str(independent)
        == (f"$: arrays and objects nested {levels} deep; a file nests arrays and objects at most 254 deep")
    )


def test_the_verifier_program_refuses_deep_nesting_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    result = _run(path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "refused at $: arrays and objects nested 100000 deep" in result.stderr


def test_the_verifier_program_refuses_a_fifo_instead_of_waiting(tmp_path: Path) -> None:
    path = tmp_path / "fifo.json"
    os.mkfifo(path)
    result = subprocess.run(
        [sys.executable, str(VERIFIER), str(path)], capture_output=True, text=True, timeout=20, check=False
    )
    assert result.returncode == 1
    assert "not a regular file" in result.stderr


def test_verifier_and_reference_agree_on_the_trusted_head(demo: RunLedger, demo_bytes: bytes) -> None:
    forged = _reforge(demo_bytes)
    assert _independent(forged) is None and _reference(forged) is None
    refused, also_refused = _independent(forged, demo.head), _reference(forged, demo.head)
    assert refused is not None and also_refused is not None
    assert refused.path == also_refused.path == "head"
    assert verifier.verify_bytes(demo_bytes, demo.head) == (29, demo.head)


def test_every_demo_digest_recomputes_independently(demo: RunLedger) -> None:
    for entry in demo.entries:
        assert verifier.entry_digest(entry.to_dict()) == entry.digest


def test_the_specs_worked_example_is_right() -> None:
    ledger = RunLedger()
    ledger.record(
        "executed",
        round=1,
        task="hashing",
        decision_id="decision:auth-hashing-v1",
        key="auth.hash.argon2.v1",
        detail="output 0a8e",
    )
    ledger.record(
        "disproved",
        round=2,
        task="hashing",
        decision_id="decision:auth-hashing-v1",
        key="auth.audit.v1",
        detail='argon2-cffi — "CVE"\n',
        receipt={"reason": "CVE", "blast_radius": 1},
        run={"flow_run_id": "f-1", "task_run_id": None},
    )
    spec = SPEC.read_text(encoding="utf-8")
    for entry in ledger.entries:
        fields = {k: v for k, v in entry.to_dict().items() if k != "digest"}
        assert verifier.canonical_bytes(fields).decode() in spec
        assert hashlib.sha256(verifier.canonical_bytes(fields)).hexdigest() == entry.digest
        assert entry.digest in spec
    assert verifier.verify_bytes(ledger.dump()) == (2, ledger.head)


# -- RFC 8785 -----------------------------------------------------------------------------------


def test_a_float_has_no_form_in_a_ledger() -> None:
    for value in (1.0, 0.5, float("nan")):
        with pytest.raises(ValueError, match="no form in a ledger"):
            verifier.canonical_bytes({"a": [value]})


def test_canonical_bytes_of_a_value_at_the_depth_limit_match_the_rfc8785_package() -> None:
    value: Any = {"k": "v"}
    for index in range(253):
        value = [index, value] if index % 2 else {"x": value, "a": index}
    assert verifier.canonical_bytes(value) == rfc8785.dumps(value)


def test_keys_sort_by_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00, so it sorts before U+E000 and U+FFFF.
    value = {"\ue000": 1, "\U0001f600": 2, "\uffff": 3, "b": 4, "a": 5, "": 6, "\u00e9": 7}
    assert verifier.canonical_bytes(value) == rfc8785.dumps(value)
    assert verifier.canonical_bytes(value).decode().index("\U0001f600") < verifier.canonical_bytes(
        value
    ).decode().index("\ue000")


def test_string_escaping_follows_rfc8785() -> None:
    text = "".join(chr(c) for c in range(0x30)) + '"\\/\x7f\u2028é😀'
    assert verifier.canonical_bytes(text) == rfc8785.dumps(text)
    assert verifier.canonical_bytes("\x1f") == b'"\\u001f"'


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_canonical_bytes_match_the_rfc8785_package(value: Any) -> None:
    assert verifier.canonical_bytes(value) == rfc8785.dumps(value)


# -- standard library only ----------------------------------------------------------------------


def test_verifier_imports_only_the_standard_library() -> None:
    tree = ast.parse(VERIFIER.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports"
            assert node.module is not None
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in {"__import__", "eval", "exec"}
    assert imported, "the parse found the imports"
    assert not imported & {"contextmesh", "orjson", "rfc8785", "importlib"}
    outside = {name for name in imported if name not in sys.stdlib_module_names and name != "__future__"}
    assert outside == set()


def test_verifier_runs_with_contextmesh_unimportable(demo_bytes: bytes, tmp_path: Path) -> None:
    # -I: isolated mode, no site-packages or user site, no PYTHONPATH: only the standard library.
    path = tmp_path / "runledger.json"
    path.write_bytes(demo_bytes)
    result = subprocess.run(
        [sys.executable, "-I", "-S", str(VERIFIER), str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok 29 entries head ")


# -- the page and the code say the same -----------------------------------------------------------


def test_the_page_states_the_limit_both_implementations_enforce() -> None:
    spec = SPEC.read_text(encoding="utf-8")
    assert verifier.MAX_DEPTH == MAX_DEPTH == 254
    assert "nest at most **254** levels" in spec
    assert "a ledger holds no floats: every number is an integer" in spec


def test_every_rule_the_verifier_cites_is_on_the_page() -> None:
    cited = set(re.findall(r"\bL(\d+)\b", VERIFIER.read_text(encoding="utf-8")))
    stated = set(re.findall(r"\*\*L(\d+)[ .]", SPEC.read_text(encoding="utf-8")))
    assert stated == {str(n) for n in range(1, 25)}
    assert cited <= stated


_SPLICES = [b'"', b"\\", b"[", b"]", b"{", b"}", b",", b":", b"1", b"1.5", b"-0", b"1e400", b"9007199254740993"]
_SPLICES += [b"null", b"true", b"\\ud800", b"\\u0000", b" ", b"\xff", b"\xe2", b"NaN", b'"x":1', b'"round":2', b".0"]


@pytest.mark.parametrize("seed", range(4))
def test_random_edits_get_the_same_verdict_and_path_from_both(seed: int, demo_bytes: bytes) -> None:
    # Beyond the named suite: a few hundred seeded random splices and cuts of the demo's bytes.
    rng = random.Random(seed)
    for _ in range(150):
        data = bytearray(demo_bytes)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            if rng.random() < 0.3:
                del data[at : at + rng.randint(1, 4)]
            else:
                data[at : at + rng.randint(0, 1)] = rng.choice(_SPLICES)
        reference, independent = _reference(bytes(data)), _independent(bytes(data))
        assert (reference is None) == (independent is None), (reference, independent)
        if reference is not None:
            assert reference.path == independent.path, (str(reference), str(independent))

"""The ``ledger`` and ``lineage`` commands on a demo loop committed with the deployment's key.

The session is the demo saved, then the whole loop run through it (the advisory, the recheck that
disproves the argon2 ground, the repair, the re-run) with ``$CONTEXTMESH_LEDGER_KEY`` set, so every
generation after the save is signed. Checked here, end to end through ``main``:

* ``ledger key generate`` writes a signer key to a new 0600 file and prints only its public half;
* ``ledger prove`` of the disproof receipt (named by seq, digest or ``receipt:1``) is a bundle that
  ``tools/verify_ledger_proofs.py`` (run as a program, the bundle and the verifier key its only input)
  and ``ledger verify --bundle`` accept;
  ``ledger consistency`` the same for the two generations the directory keeps;
* a consistent rewrite of history re-signed with another key is refused by ``ledger verify
  --trusted-key`` naming the manifest's checkpoint; a tampered checkpoint, proof or signature in a
  bundle is refused by the command and by the stand-alone verifier at the same path;
* ``lineage export --format openlineage`` of the loop shows the re-ran tasks with the disproof facet,
  every event valid against the vendored OpenLineage schema; ``--format prov`` a JSON-LD document.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import failure_document, one_line
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from session_helpers import (
    build_demo_template,
    build_tiny_session,
    clone,
    manifest_doc,
    reseal_ledger,
    tiny_registry,
    touch_all,
)

from contextmesh.cli import main
from contextmesh.core.canonical import file_bytes
from contextmesh.demo.execute import run_session_walkthrough
from contextmesh.demo.saved import open_demo_session
from contextmesh.execution.in_process import InProcessExecutor
from contextmesh.formats.signed_note import NoteSigner, NoteVerifier
from contextmesh.session.heads import KEY_FILE_VARIABLE, KEY_VARIABLE
from contextmesh.session.layout import manifest_name
from contextmesh.session.session import Session

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "verify_ledger_proofs.py"
SCHEMAS = ROOT / "tests" / "data" / "openlineage"
FACETS = ROOT / "docs" / "formats" / "openlineage-facets-v1.json"
KEY = NoteSigner.generate("contextmesh.test/cli")
FORGER = NoteSigner.generate("contextmesh.test/cli")  # the deployment's key name, another key
DISPROOF_SEQ = 11  # the demo loop's disproof receipt is entries[10]


@contextmanager
def deployment_key(signer: NoteSigner) -> Iterator[None]:
    saved = os.environ.get(KEY_VARIABLE)
    os.environ[KEY_VARIABLE] = signer.skey()
    try:
        yield
    finally:
        if saved is None:
            del os.environ[KEY_VARIABLE]
        else:
            os.environ[KEY_VARIABLE] = saved


@dataclass(frozen=True)
class Loop:
    directory: Path
    vkey: Path  # the deployment's verifier key, in a file


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Loop:
    root = tmp_path_factory.mktemp("cli-ledger")
    directory, feed = build_demo_template(root)
    with deployment_key(KEY):
        session = open_demo_session(directory, feed=feed, policy="never")
        run_session_walkthrough(session, feed=feed, executor=InProcessExecutor(width=2))
    vkey = root / "deploy.vkey"
    vkey.write_text(KEY.verifier().vkey() + "\n")
    return Loop(directory, vkey)


@pytest.fixture
def copy(loop: Loop, tmp_path: Path) -> Path:
    return clone(loop.directory, tmp_path / "session")


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def tool(bundle: Path, vkey: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), str(bundle), "--key-file", str(vkey)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# -- keys -------------------------------------------------------------------------------------------


def test_key_generate_writes_a_0600_signer_key_and_prints_only_its_verifier_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "deploy.key"
    code, stdout, err = run(capsys, "ledger", "key", "generate", "--out", out, "--name", "example.org/ci", "--json")
    assert (code, err) == (0, "")
    data = json.loads(stdout)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    signer = NoteSigner.from_skey(out.read_text())
    assert data["verifier_key"] == signer.verifier().vkey() and data["name"] == "example.org/ci"
    assert signer.skey().split("+", 4)[4] not in stdout  # the secret half is never printed
    code, stdout, err = run(capsys, "ledger", "key", "generate", "--out", out)
    assert code == 2 and stdout == "" and "exists" in one_line(err)
    assert NoteSigner.from_skey(out.read_text()).skey() == signer.skey()  # never written over


def test_the_key_generate_hint_signs_a_deployments_commits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "a dir with spaces" / "deploy.key"
    out.parent.mkdir()
    code, stdout, err = run(capsys, "ledger", "key", "generate", "--out", out, "--name", "example.org/ci")
    assert (code, err) == (0, "")
    (hint,) = [line for line in stdout.splitlines() if "export " in line]
    assignment = shlex.split(hint.split("export ", 1)[1])[0]
    variable, value = assignment.split("=", 1)
    assert (variable, Path(value)) == (KEY_FILE_VARIABLE, out.absolute())
    vkey = stdout.split("verifier key, for readers to pin: ", 1)[1].splitlines()[0]
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    monkeypatch.setenv(variable, value)
    session = build_tiny_session(tmp_path / "session")
    touch_all(session, 0)
    session.commit()
    verifier = NoteVerifier.from_vkey(vkey)
    assert Session.load(tmp_path / "session", registry=tiny_registry(), trusted_keys=[verifier]).generation == 2


def test_a_signer_key_given_as_a_trusted_key_is_refused_without_quoting_it(
    loop: Loop, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "deploy.key"
    secret.write_text(KEY.skey() + "\n")
    code, stdout, err = run(capsys, "ledger", "verify", "--session", loop.directory, "--trusted-key", secret, "--json")
    assert code == 2
    error = failure_document(stdout)
    assert error["path"] == "--trusted-key" and "signer key, the secret half" in error["message"]
    # PRIVATE+KEY+<name>+<key id>+<key>: the key's base64 may itself hold '+', so split from the left.
    assert KEY.skey().split("+", 4)[4] not in stdout + err


# -- proofs -----------------------------------------------------------------------------------------


def test_the_disproof_receipts_bundle_verifies_in_the_stand_alone_tool_and_the_command(
    loop: Loop, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, err = run(capsys, "ledger", "prove", str(DISPROOF_SEQ), "--session", loop.directory, "--json")
    assert (code, err) == (0, "")
    bundle = json.loads(stdout)
    assert bundle["kind"] == "inclusion" and bundle["entry"]["event"] == "disproved"
    assert len(bundle["audit_path"]) == 5  # leaf 10 of a 29-leaf tree
    by_digest = run(capsys, "ledger", "prove", bundle["entry"]["digest"], "--session", loop.directory, "--json")
    assert json.loads(by_digest[1]) == bundle
    by_receipt = run(capsys, "ledger", "prove", "receipt:1", "--session", loop.directory, "--json")
    assert json.loads(by_receipt[1]) == bundle  # the loop's one disproof receipt is entries[10]
    path = tmp_path / "receipt.proof.json"
    path.write_text(stdout)
    done = tool(path, loop.vkey)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok inclusion of entries[10] (disproved)")
    code, stdout, err = run(capsys, "ledger", "verify", "--bundle", path, "--trusted-key", loop.vkey)
    assert code == 0 and stdout.startswith("ok inclusion of entries[10] (disproved) in a tree of 29 entries")


def test_the_two_kept_generations_consistency_bundle_verifies(
    loop: Loop, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    generation = manifest_doc(loop.directory)[1]["generation"]
    old, new = str(generation - 1), str(generation)
    code, stdout, err = run(capsys, "ledger", "consistency", old, new, "--session", loop.directory, "--json")
    assert (code, err) == (0, "")
    path = tmp_path / "consistency.proof.json"
    path.write_text(stdout)
    assert tool(path, loop.vkey).returncode == 0
    assert run(capsys, "ledger", "verify", "--bundle", path, "--trusted-key", loop.vkey)[0] == 0
    code, stdout, err = run(capsys, "ledger", "consistency", "1", new, "--session", loop.directory)
    assert code == 1 and "no longer holds generation 1" in one_line(err)
    code, stdout, err = run(capsys, "ledger", "consistency", new, old, "--session", loop.directory)
    assert code == 2 and "older generation" in one_line(err)


def test_proving_an_entry_the_ledger_lacks_or_an_unsigned_generation_is_refused_in_one_line(
    loop: Loop, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "ledger", "prove", "400", "--session", loop.directory)
    assert code == 1 and "holds 29 entries" in one_line(err)
    code, _, err = run(capsys, "ledger", "prove", "ab" * 32, "--session", loop.directory)
    assert code == 1 and "no entry" in one_line(err)
    code, _, err = run(capsys, "ledger", "prove", "seq-3", "--session", loop.directory)
    assert code == 2 and "sequence number" in one_line(err)
    code, _, err = run(capsys, "ledger", "prove", "receipt:2", "--session", loop.directory)
    assert code == 1 and "holds 1 disproof receipts (receipt:1 to receipt:1)" in one_line(err)
    code, _, err = run(capsys, "ledger", "prove", "receipt:0", "--session", loop.directory)
    assert code == 2 and "receipt:K" in one_line(err)
    unsigned, _ = build_demo_template(tmp_path / "unsigned")
    code, _, err = run(capsys, "ledger", "prove", "1", "--session", unsigned)
    assert code == 1 and "is not signed" in one_line(err)


# -- refusals: the command and the stand-alone verifier alike ----------------------------------------


def _flip(text: str, byte: int) -> str:
    raw = bytearray(base64.b64decode(text))
    raw[byte] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def _tamper_signature(bundle: dict[str, Any]) -> None:
    lines = bundle["checkpoint"].split("\n")
    name, signature = lines[4][2:].split(" ")
    lines[4] = f"— {name} {_flip(signature, 40)}"
    bundle["checkpoint"] = "\n".join(lines)


def _tamper_checkpoint(bundle: dict[str, Any]) -> None:
    lines = bundle["checkpoint"].split("\n")
    lines[2] = _flip(lines[2], 0)  # the root it signs
    bundle["checkpoint"] = "\n".join(lines)


def _tamper_proof(bundle: dict[str, Any]) -> None:
    bundle["audit_path"][2] = _flip(bundle["audit_path"][2], 7)


@pytest.mark.parametrize(
    ("tamper", "path"),
    [
        (_tamper_signature, "checkpoint.line[4]"),
        (_tamper_checkpoint, "checkpoint.line[4]"),
        (_tamper_proof, "audit_path"),
    ],
    ids=["signature", "checkpoint", "proof"],
)
def test_a_tampered_bundle_is_refused_at_the_same_path_by_the_command_and_the_tool(
    tamper: Any, path: str, loop: Loop, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, stdout, _ = run(capsys, "ledger", "prove", str(DISPROOF_SEQ), "--session", loop.directory, "--json")
    bundle = json.loads(stdout)
    tamper(bundle)
    spoiled = tmp_path / "spoiled.proof.json"
    spoiled.write_bytes(file_bytes(bundle))
    code, stdout, err = run(capsys, "ledger", "verify", "--bundle", spoiled, "--trusted-key", loop.vkey, "--json")
    assert code == 1 and one_line(err).startswith(f"contextmesh: {path}: ")
    assert failure_document(stdout)["path"] == path
    done = tool(spoiled, loop.vkey)
    assert done.returncode == 1 and done.stderr.startswith(f"{spoiled}: refused at {path}: "), done.stderr


def test_a_consistent_rewrite_re_signed_with_another_key_is_refused_by_ledger_verify(
    copy: Path, capsys: pytest.CaptureFixture[str], loop: Loop
) -> None:
    def rewrite(entries: list[dict[str, Any]]) -> None:
        for entry in entries:
            entry["detail"] = f"rewritten: {entry['detail']}"
        entries[DISPROOF_SEQ - 1]["receipt"]["reason"] = "no advisory was found"

    reseal_ledger(copy, rewrite, signer=FORGER)  # every entry re-chained, tree and head re-sealed, re-signed
    generation = manifest_doc(copy)[1]["generation"]
    assert run(capsys, "ledger", "verify", "--session", copy)[0] == 0  # without a pinned key it verifies
    code, stdout, err = run(capsys, "ledger", "verify", "--session", copy, "--trusted-key", loop.vkey, "--json")
    assert code == 1
    error = failure_document(stdout)
    assert error["path"] == f"{manifest_name(generation)}:checkpoint"
    assert "trusted only when a pinned key signed it" in error["message"]
    assert one_line(err).startswith("contextmesh: ")


def test_the_loop_verifies_against_its_key(loop: Loop, capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, err = run(
        capsys, "ledger", "verify", "--session", loop.directory, "--trusted-key", loop.vkey, "--json"
    )
    assert (code, err) == (0, "")
    data = json.loads(stdout)
    assert data["verified"] is True and data["entries"] == 29 and data["signed_by"] == data["pinned"]


# -- lineage ----------------------------------------------------------------------------------------


def _validator(ref: str) -> Draft202012Validator:
    schemas = [json.loads(path.read_text()) for path in [*sorted(SCHEMAS.glob("*.json")), FACETS]]
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas)
    return Draft202012Validator({"$ref": ref}, registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER)


def test_the_loops_openlineage_export_shows_the_re_ran_tasks_with_the_disproof_and_validates(
    loop: Loop, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "events.jsonl"
    argv = ["lineage", "export", "--format", "openlineage", "--session", loop.directory]
    code, stdout, err = run(capsys, *argv, "--started-at", "2026-03-01T12:00:00Z")
    assert (code, err) == (0, "")
    events = [json.loads(line) for line in stdout.splitlines()]
    assert run(capsys, *argv, "--started-at", "2026-03-01T12:00:00Z", "--out", out)[0] == 0
    assert out.read_text().splitlines() == stdout.splitlines()  # the same bytes, one event per line
    document = _validator("https://openlineage.io/spec/2-0-2/OpenLineage.json")
    for event in events:
        assert not list(document.iter_errors(event)), event["eventType"]
        for facet in event["run"]["facets"].values():
            assert not list(_validator(facet["_schemaURL"]).iter_errors(facet))
    disproved = [e for e in events if "contextmesh_disproof" in e["run"]["facets"]]
    tasks = sorted({e["job"]["name"].rsplit(".", 1)[1] for e in disproved})
    assert tasks == ["hashing", "rate_limit", "routes"]
    assert {e["eventType"] for e in disproved} == {"START", "COMPLETE"} and len(disproved) == 6
    facet = disproved[0]["run"]["facets"]["contextmesh_disproof"]
    assert facet["rejectedAssumption"]["statement"] == "argon2-cffi has no open advisory"
    assert facet["disproofSeq"] == DISPROOF_SEQ and "<-depends_on- hashing" in facet["reasonChain"]
    assert events[0]["eventTime"] == "2026-03-01T12:00:00.000+00:00"


def test_the_prov_export_is_one_json_ld_document_and_bad_option_pairs_are_refused(
    loop: Loop, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, err = run(capsys, "lineage", "export", "--format", "prov", "--session", loop.directory)
    assert (code, err) == (0, "")
    document = json.loads(stdout)
    assert "prov" in document["@context"]
    invalidated = [n for n in document["@graph"] if "prov:wasInvalidatedBy" in n]
    assert invalidated, "the fallen nodes are invalidated by the disproof"
    argv = [
        "lineage",
        "export",
        "--format",
        "prov",
        "--session",
        loop.directory,
        "--started-at",
        "2026-03-01T12:00:00Z",
    ]
    code, _, err = run(capsys, *argv)
    assert code == 2 and "--started-at" in one_line(err)
    code, stdout, err = run(
        capsys,
        "lineage",
        "export",
        "--format",
        "openlineage",
        "--session",
        loop.directory,
        "--started-at",
        "2026-03-01T12:00:00",
    )
    assert code == 2 and "offset" in one_line(err)

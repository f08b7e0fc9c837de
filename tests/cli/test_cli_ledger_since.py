"""``ledger consistency --since FILE``: a head an auditor kept, proved to be a prefix of today's ledger.

The directory keeps only its newest two generations, so ``ledger consistency OLD NEW`` cannot reach a
checkpoint from weeks ago; the auditor who saw it kept it (the inclusion bundle they were given, or
the note itself). A tiny session is committed signed, an entry is proved and the bundle kept, then
the session moves on past the sweep. Checked here, through ``main``:

* from the kept bundle (and from a kept note, as ``ledger verify --json`` prints it) to the newest
  generation: a consistency bundle that the stand-alone verifier and ``ledger verify --bundle`` accept;
* a history rewritten since — even re-signed with the deployment's own key — is refused naming the
  kept file, and so is a directory rolled back to before the kept head;
* a checkpoint of another session, a file that is no checkpoint, and bad option pairs are refused in
  one line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import failure_document, one_line
from session_helpers import build_tiny_session, clone, manifest_doc, reseal_ledger, touch_all

from contextmesh.cli import main
from contextmesh.core.canonical import file_bytes
from contextmesh.formats.signed_note import NoteSigner
from contextmesh.session.session import Session

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "verify_ledger_proofs.py"
KEY = NoteSigner.generate("contextmesh.test/since")
KEPT_SIZE, NEWEST_SIZE = 3, 8


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def advance(session: Session, ticks: range) -> None:
    """One ledger entry and one signed commit per tick."""
    for tick in ticks:
        touch_all(session, tick)
        session.commit(signer=KEY)


class Audit:
    """A signed tiny session, a bundle kept at 3 entries, and the session moved on to 8 entries since."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.directory = root / "session"
        session = build_tiny_session(self.directory)
        advance(session, range(KEPT_SIZE))
        self.then = clone(self.directory, root / "then")  # the directory as it stood when the bundle was kept
        self.kept_generation = session.generation
        code, stdout, _ = run(capsys, "ledger", "prove", "2", "--session", self.directory, "--json")
        assert code == 0
        self.kept = root / "kept.proof.json"
        self.kept.write_text(stdout)
        advance(session, range(KEPT_SIZE, NEWEST_SIZE))
        self.generation = session.generation
        self.vkey = root / "deploy.vkey"
        self.vkey.write_text(KEY.verifier().vkey() + "\n")


@pytest.fixture
def audit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Audit:
    return Audit(tmp_path, capsys)


def verified_by_both(bundle_text: str, path: Path, vkey: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    path.write_text(bundle_text)
    done = subprocess.run(
        [sys.executable, str(TOOL), str(path), "--key-file", str(vkey)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    code, stdout, err = run(capsys, "ledger", "verify", "--bundle", path, "--trusted-key", vkey, "--json")
    assert (code, err) == (0, "")
    return dict(json.loads(stdout))


def test_the_kept_generation_is_swept_so_old_new_cannot_reach_it(
    audit: Audit, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "ledger", "consistency", str(audit.kept_generation), str(audit.generation), "--session", audit.directory
    )
    assert code == 1 and f"no longer holds generation {audit.kept_generation}" in one_line(err)


def test_from_a_kept_bundle_to_the_newest_generation_verifies(
    audit: Audit, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, err = run(capsys, "ledger", "consistency", "--since", audit.kept, "--session", audit.directory)
    assert (code, err) == (0, "")
    assert f"({KEPT_SIZE} entries" in stdout and f"generation {audit.generation} ({NEWEST_SIZE} entries)" in stdout
    code, stdout, err = run(
        capsys, "ledger", "consistency", "--since", audit.kept, "--session", audit.directory, "--json"
    )
    assert (code, err) == (0, "")
    bundle = json.loads(stdout)
    assert bundle["old_checkpoint"] == json.loads(audit.kept.read_text())["checkpoint"]
    assert bundle["new_checkpoint"] == manifest_doc(audit.directory)[1]["checkpoint"]
    proven = verified_by_both(stdout, tmp_path / "since.proof.json", audit.vkey, capsys)
    assert (proven["old_size"], proven["new_size"]) == (KEPT_SIZE, NEWEST_SIZE)


def test_from_a_kept_note_verifies_too(audit: Audit, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    note = tmp_path / "kept.checkpoint"
    note.write_text(json.loads(audit.kept.read_text())["checkpoint"])
    code, stdout, err = run(capsys, "ledger", "consistency", "--since", note, "--session", audit.directory, "--json")
    assert (code, err) == (0, "")
    proven = verified_by_both(stdout, tmp_path / "since.proof.json", audit.vkey, capsys)
    assert (proven["old_size"], proven["new_size"]) == (KEPT_SIZE, NEWEST_SIZE)


def test_the_checkpoint_ledger_verify_prints_is_one_to_keep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = build_tiny_session(tmp_path / "session")
    advance(session, range(KEPT_SIZE))
    vkey = tmp_path / "deploy.vkey"
    vkey.write_text(KEY.verifier().vkey() + "\n")
    code, stdout, err = run(capsys, "ledger", "verify", "--session", session.directory, "--trusted-key", vkey, "--json")
    assert (code, err) == (0, "")
    seen = json.loads(stdout)
    assert seen["checkpoint"] == manifest_doc(tmp_path / "session")[1]["checkpoint"]
    kept = tmp_path / "seen.checkpoint"
    kept.write_text(seen["checkpoint"])
    advance(session, range(KEPT_SIZE, NEWEST_SIZE))
    code, stdout, err = run(capsys, "ledger", "consistency", "--since", kept, "--session", session.directory, "--json")
    assert (code, err) == (0, "")
    proven = verified_by_both(stdout, tmp_path / "since.proof.json", vkey, capsys)
    assert (proven["old_size"], proven["new_size"]) == (KEPT_SIZE, NEWEST_SIZE)


def test_a_history_rewritten_since_is_refused_even_re_signed_with_the_deployments_key(
    audit: Audit, capsys: pytest.CaptureFixture[str]
) -> None:
    def rewrite(entries: list[dict[str, Any]]) -> None:
        entries[0]["detail"] = "rewritten: nothing was audited"

    reseal_ledger(audit.directory, rewrite, signer=KEY)  # the key holder's own rewrite: the newest head is signed
    code, stdout, err = run(
        capsys, "ledger", "consistency", "--since", audit.kept, "--session", audit.directory, "--json"
    )
    assert code == 1 and err.startswith("contextmesh: ")
    error = failure_document(stdout)
    assert error["path"] == str(audit.kept)
    assert f"a head of {KEPT_SIZE} entries" in error["message"] and "rewritten since" in error["message"]


def test_a_directory_rolled_back_to_before_the_kept_head_is_refused(
    audit: Audit, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, stdout, _ = run(capsys, "ledger", "prove", "7", "--session", audit.directory, "--json")
    assert code == 0
    newest = tmp_path / "newest.proof.json"
    newest.write_text(stdout)
    code, _, err = run(capsys, "ledger", "consistency", "--since", newest, "--session", audit.then)
    message = one_line(err)
    assert code == 1 and message.startswith(f"contextmesh: {newest}: ")
    assert f"a head of {NEWEST_SIZE} entries" in message and "rolled back since" in message


def test_a_checkpoint_of_another_session_is_refused_at_its_origin_line(
    audit: Audit, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = build_tiny_session(tmp_path / "other")
    advance(other, range(KEPT_SIZE))
    code, stdout, _ = run(capsys, "ledger", "prove", "1", "--session", other.directory, "--json")
    assert code == 0
    foreign = tmp_path / "foreign.proof.json"
    foreign.write_text(stdout)
    code, _, err = run(capsys, "ledger", "consistency", "--since", foreign, "--session", audit.directory)
    assert code == 1 and one_line(err).startswith(f"contextmesh: {foreign}:checkpoint.line[0]: ")


@pytest.mark.parametrize(
    ("content", "where"),
    [
        (b"not a checkpoint\n", "checkpoint"),
        (file_bytes({"schema": "contextmesh.proof", "version": 1, "kind": "inclusion"}), "checkpoint"),
        (file_bytes({"schema": "contextmesh.other", "version": 1}), "schema"),
    ],
    ids=["text", "bundle-missing-fields", "foreign-schema"],
)
def test_a_kept_file_that_holds_no_checkpoint_is_refused_with_its_path(
    content: bytes, where: str, audit: Audit, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = tmp_path / "kept.bin"
    kept.write_bytes(content)
    before = sorted(p.name for p in audit.directory.iterdir())
    code, stdout, err = run(capsys, "ledger", "consistency", "--since", kept, "--session", audit.directory, "--json")
    assert code == 1 and err.startswith("contextmesh: ")
    assert failure_document(stdout)["path"].startswith(f"{kept}:{where}")
    assert sorted(p.name for p in audit.directory.iterdir()) == before  # read only


@pytest.mark.parametrize(
    "argv",
    [("1",), ("1", "2", "--since", "KEPT"), ("1", "--since", "KEPT"), ()],
    ids=["old-alone", "both-and-since", "old-and-since", "nothing"],
)
def test_old_new_or_since_alone(argv: tuple[str, ...], audit: Audit, capsys: pytest.CaptureFixture[str]) -> None:
    args = [str(audit.kept) if a == "KEPT" else a for a in argv]
    code, _, err = run(capsys, "ledger", "consistency", *args, "--session", audit.directory)
    assert code == 2 and "OLD and NEW" in one_line(err) and "--since FILE alone" in one_line(err)


def test_the_kept_file_must_be_a_regular_file(audit: Audit, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(audit.then)
    code, _, err = run(capsys, "ledger", "consistency", "--since", audit.then, "--session", audit.directory)
    assert code == 2 and "regular file" in one_line(err)

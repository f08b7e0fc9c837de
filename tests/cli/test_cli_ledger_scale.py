"""The issue's acceptance at scale: a disproof receipt in a 100,000-entry session ledger, proved and checked.

The demo is saved, 99,971 ``audited`` entries are recorded and committed, and then the demo loop runs
through the session (advisory, recheck, disproof, repair, re-run), every commit signed with the
deployment's key: the ledger holds exactly 100,000 entries and the disproof's receipt lies near its
end. ``contextmesh ledger prove`` of the receipt prints a bundle whose audit path has at most
⌈log₂ n⌉ + 1 hashes; the stand-alone verifier checks it with the bundle and the verifier key alone —
the session directory is deleted first, so it cannot have read the ledger.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from session_helpers import build_demo_template

from contextmesh.cli import main
from contextmesh.demo.execute import run_session_walkthrough
from contextmesh.demo.saved import open_demo_session
from contextmesh.execution.in_process import InProcessExecutor
from contextmesh.formats.signed_note import NoteSigner

pytestmark = pytest.mark.slow  # about half a minute: 100,000 entries recorded, committed, loaded twice

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "verify_ledger_proofs.py"
SIZE = 100_000
LOOP_ENTRIES = 29  # the demo loop's own ledger


def test_a_receipt_in_a_100000_entry_session_ledger_is_proved_in_at_most_log2_n_plus_one_hashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = NoteSigner.generate("contextmesh.test/scale")
    directory, feed = build_demo_template(tmp_path / "built")
    session = open_demo_session(directory, feed=feed, policy="never")
    assert session.runner is not None
    for tick in range(SIZE - LOOP_ENTRIES):
        session.runner.ledger.record("audited", round=session.runner.round, detail=f"filler {tick}")
    session.commit(signer=key)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONTEXTMESH_LEDGER_KEY", key.skey())  # the loop's own commits sign too
        run_session_walkthrough(session, feed=feed, executor=InProcessExecutor(width=2))
    ledger = session.runner.ledger
    assert len(ledger) == SIZE
    seq = next(e.seq for e in ledger.entries if e.event == "disproved")
    assert seq > SIZE - LOOP_ENTRIES

    assert main(["ledger", "prove", str(seq), "--session", str(directory), "--json"]) == 0
    bundle = json.loads(capsys.readouterr().out)
    assert bundle["entry"]["seq"] == seq and bundle["entry"]["receipt"] is not None
    assert len(bundle["audit_path"]) <= math.ceil(math.log2(SIZE)) + 1 == 18

    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "receipt.proof.json").write_text(json.dumps(bundle))
    (alone / "deploy.vkey").write_text(key.verifier().vkey() + "\n")
    shutil.rmtree(directory)  # the verifier has the bundle and the key, and nothing else
    done = subprocess.run(
        [sys.executable, str(TOOL), "receipt.proof.json", "--key-file", "deploy.vkey"],
        cwd=alone,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"ok inclusion of entries[{seq - 1}] (disproved)")
    assert f"at size {SIZE} " in done.stdout
    assert (alone / "receipt.proof.json").stat().st_size < 16_000

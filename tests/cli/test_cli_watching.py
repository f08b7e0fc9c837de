"""``contextmesh recheck [--full]`` on a project whose auditor watches its world file (ADR 0019), in-process.

The scaffolded project's auditor is given ``watches=``: the world file's text. A recheck with the
world unchanged runs no auditor and says which it skipped; ``--full`` runs them all; a changed
world wakes them; a fingerprint function that returns no text is one line (JSON under ``--json``)
naming the auditor, the task and the rule, and the session is left as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow
AUDITOR = "@registry.auditor(AUDIT)"


def _cm(root: Path, home: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTEXTMESH_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "contextmesh", *args, "--project", str(root), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert (done.returncode == 0) is ok, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(done.stdout)["report"]
    return report


def _project(tmp_path: Path, watches: str) -> tuple[Path, Path]:
    home = tmp_path / "home"
    subprocess.run(
        [sys.executable, "-m", "contextmesh", "init", str(tmp_path / "shop")],
        env={**os.environ, "CONTEXTMESH_HOME": str(home)},
        check=True,
        capture_output=True,
    )
    root = tmp_path / "shop"
    plan = root / "shop" / "plan.py"
    text = plan.read_text()
    assert AUDITOR in text
    plan.write_text(text.replace(AUDITOR, f"@registry.auditor(AUDIT, watches={watches})"))
    return root, home


def test_a_recheck_skips_what_is_unchanged_full_runs_everything_and_a_change_wakes_them(tmp_path: Path) -> None:
    root, home = _project(tmp_path, "lambda ctx: world_file.read_text()")
    assert _report(_cm(root, home, "run", "--local"))["executed"] == ["load", "summarise", "publish"]
    quiet = _cm(root, home, "recheck", "--local")
    assert _report(quiet)["audited"] == [] and _report(quiet)["skipped"] == ["load", "summarise", "publish"]
    text = _cm(root, home, "recheck", "--local").stdout
    assert "skipped" in text
    human = subprocess.run(
        [sys.executable, "-m", "contextmesh", "recheck", "--local", "--project", str(root)],
        env={**os.environ, "CONTEXTMESH_HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "skipped 3, nothing they watch changed: load, summarise, publish" in human
    full = _report(_cm(root, home, "recheck", "--full", "--local"))
    assert full["audited"] == ["load", "summarise", "publish"] and full["skipped"] == []
    world = root / "world.json"
    world.write_text(world.read_text().replace('"EUR"', '"USD"'))
    woken = _report(_cm(root, home, "recheck", "--local"))
    assert woken["audited"] == ["load", "summarise", "publish"] and woken["stale"] == ["summarise", "publish"]


def test_a_fingerprint_that_is_not_text_is_one_line_naming_its_place_and_changes_nothing(tmp_path: Path) -> None:
    root, home = _project(tmp_path, "lambda ctx: len(ctx.task)")
    _cm(root, home, "run", "--local")
    session = root / ".contextmesh" / "session"
    before = {p.name: p.read_bytes() for p in session.iterdir() if p.is_file()}
    refused = _cm(root, home, "recheck", "--local", ok=False)
    error = json.loads(refused.stdout)["error"]
    assert error["path"] == "auditor 'report.audit.world.v1' of task 'load'"
    assert error["message"] == (
        "auditor 'report.audit.world.v1' of task 'load': its fingerprint function returned int 4; "
        "a fingerprint is text (str)"
    )
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert {p.name: p.read_bytes() for p in session.iterdir() if p.is_file()} == before

"""The CLI says what happened and what next: resume lists executed / cached / blocked with reasons,
repair ends with the next step, help texts name registered keys and say truthfully what commits.

In-process (``--local``) on a saved demo session; the dispatched path is covered on a real Prefect
server by ``tests/orchestration/test_runs_explain.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contextmesh.cli import main
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, publish
from contextmesh.demo.saved import demo_registry, save_demo_session

GROUND = "argon2-cffi has no open advisory"


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_repair_help_lists_the_registered_worker_keys_and_its_example_key_is_registered(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = _help("repair", capsys)
    registry = demo_registry(tmp_path / "feed.json")
    for key in registry.describe()["workers"]:
        assert f"  {key}\n" in text
    (example,) = re.findall(r"contextmesh repair hashing --worker-key (\S+)", text)
    assert registry.has_worker(example), f"repair --help's example key {example!r} is not registered"
    assert "and commit it (runs no code)" in " ".join(text.split())


def test_export_help_says_it_commits_nothing_and_the_writes_say_they_commit(capsys: pytest.CaptureFixture[str]) -> None:
    exported = " ".join(_help("export", capsys).split())
    assert "commit through it" not in exported
    assert "export never commits" in exported and "commits nothing to a session" in exported
    top = " ".join(_help("recheck", capsys).split())
    assert "commit what they find" in top
    assert "and commit it" in " ".join(_help("resume", capsys).split())


def test_resume_and_repair_say_what_ran_what_waits_and_what_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    feed, directory = tmp_path / "feed.json", tmp_path / "session"
    save_demo_session(directory, rounds=0, feed=feed)
    publish(feed, "argon2-cffi", ADVISORY_TEXT)
    where = ["--session", str(directory), "--feed", str(feed), "--local"]

    assert main(["recheck", *where]) == 0
    rechecked = capsys.readouterr().out
    assert rechecked.startswith("RECHECK round 2 · 5 audited: ")
    assert f"  DISPROVED {GROUND}\n" in rechecked and "    evidence: evidence:" in rechecked
    assert "now stale, waiting for repair or resume: hashing, routes, rate_limit" in rechecked

    assert main(["resume", *where]) == 0
    blocked = capsys.readouterr().out
    assert "ROUND 3 · 0 executed, 2 cached, 3 blocked" in blocked
    assert f"  blocked  hashing    — its ground '{GROUND}' is rejected" in blocked
    assert "  cached   schema     — untouched, its previous result stands" in blocked

    repair = ["repair", "hashing", "--worker-key", DEFAULT_KEYS["bcrypt"], "--assumes", "bcrypt has no open advisory"]
    assert main([*repair, *where]) == 0
    repaired = capsys.readouterr().out
    assert repaired.rstrip().endswith(
        f"next: `contextmesh resume --session {directory}` runs hashing, routes, rate_limit (nothing runs until then)"
    )

    assert main(["resume", *where]) == 0
    resumed = capsys.readouterr().out
    assert "ROUND 4 · 3 executed, 2 cached, 0 blocked" in resumed
    assert f"  executed hashing    — repaired onto {DEFAULT_KEYS['bcrypt']}: now assumes" in resumed
    assert f"  executed routes     — '{GROUND}' was disproved (evidence evidence:" in resumed
    assert not re.search(r"^  done ", resumed, re.MULTILINE)

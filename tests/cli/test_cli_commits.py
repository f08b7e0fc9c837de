"""Whether an ``ask --session`` committed is always said (issue 15 items 8 and the CLI half of 5).

Skipping a commit under contention is the design (another writer holds the lock, or committed first);
staying silent about it is not. The text says ``commit skipped`` and why; ``--json`` carries
``committed`` (and ``commit``, ``reason``). A commit the session layer refuses (a ``SessionError``)
still prints the answer and says the commit failed; the other committing commands refuse in one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import failure_document, one_line
from demo_cache import DemoSessions
from session_helpers import QUESTIONS, clone

from contextmesh.cli import main
from contextmesh.session.commit import latest_generation
from contextmesh.session.lock import WriterLock

QUESTION = "What made the sharding rule wrong?"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    return demo_sessions.copy(tmp_path_factory.mktemp("cli-commits"))


@pytest.fixture
def session(template: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    return clone(template[0], tmp_path / "session"), template[1]


def _ask(directory: Path, feed: Path, *extra: str, question: str = QUESTION) -> list[str]:
    return ["ask", question, "--session", str(directory), "--feed", str(feed), *extra]


def test_a_landed_commit_says_so(session: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    directory, feed = session
    assert main(_ask(directory, feed, "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["committed"], data["commit"], data["reason"], data["generation"]) == (True, "committed", None, 2)
    assert latest_generation(directory) == 2
    assert main(_ask(directory, feed)) == 0
    assert capsys.readouterr().out.endswith("(session generation 3: committed)\n")


def test_a_commit_skipped_because_the_lock_is_held_is_said_in_text_and_json(
    session: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, feed = session
    with WriterLock(directory, wait=5.0):  # another writer (a second open file description) holds it
        assert main(_ask(directory, feed)) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"Q: {QUESTION}\nA: The sharding rule was wrong")  # the answer is printed
        assert "(session generation 1: commit skipped — another writer held the lock: " in out
        assert f"pid {os.getpid()}" in out and "was not saved)" in out
        assert main(_ask(directory, feed, "--json")) == 0
        data = json.loads(capsys.readouterr().out)
    assert data["committed"] is False and data["commit"] == "skipped"
    assert data["reason"].startswith("another writer held the lock: ") and data["answer_id"]
    assert latest_generation(directory) == 1


def test_concurrent_asks_each_say_whether_they_committed(session: tuple[Path, Path], tmp_path: Path) -> None:
    """Twelve processes ask at once: every one exits 0 and the ones saying committed are the new generations."""
    directory, feed = session
    env = {**os.environ, "CONTEXTMESH_HOME": str(tmp_path / "home")}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "contextmesh",
                *_ask(directory, feed, "--json", question=QUESTIONS[i % len(QUESTIONS)]),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(12)
    ]
    results = [(proc.communicate(timeout=300), proc.returncode) for proc in procs]
    documents = []
    for (out, err), code in results:
        assert code == 0, err
        documents.append(json.loads(out))
    landed = [d for d in documents if d["committed"]]
    skipped = [d for d in documents if not d["committed"]]
    assert len(landed) == latest_generation(directory) - 1  # every "committed: true" is one generation on disk
    assert sorted(d["generation"] for d in landed) == list(range(2, 2 + len(landed)))
    for document in skipped:
        assert document["commit"] == "skipped"
        assert document["reason"].startswith(("another writer held the lock: ", "the session moved on: "))


def test_a_commit_the_session_layer_refuses_still_prints_the_answer(
    session: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory under the lock's name: the walk is answered, the commit failed, and both are said."""
    directory, feed = session
    (directory / "session.lock").unlink()
    (directory / "session.lock").mkdir()
    assert main(_ask(directory, feed)) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Q: {QUESTION}\nA: The sharding rule was wrong")
    assert "(session generation 1: commit failed — " in out and "session.lock" in out
    assert main(_ask(directory, feed, "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["committed"] is False and data["commit"] == "failed" and "session.lock" in data["reason"]
    assert latest_generation(directory) == 1


@pytest.mark.parametrize(
    "command",
    [
        ["invalidate", "--session", "{dir}", "--feed", "{feed}"],
        ["recheck", "--session", "{dir}", "--feed", "{feed}", "--local"],
        ["resume", "--session", "{dir}", "--feed", "{feed}", "--local"],
    ],
)
def test_other_committing_commands_refuse_a_failed_commit_in_one_line(
    session: tuple[Path, Path], capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    directory, feed = session
    (directory / "session.lock").unlink()
    (directory / "session.lock").mkdir()
    argv = [a.format(dir=directory, feed=feed) for a in command]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "session.lock" in one_line(captured.err)
    assert main([*argv, "--json"]) == 1
    error = failure_document(capsys.readouterr().out)
    assert error["type"] == "SessionError" and "session.lock" in error["message"]
    assert latest_generation(directory) == 1


def test_session_show_shows_the_commit_counters_and_what_they_count(
    session: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, feed = session
    assert main(["session", "show", str(directory), "--feed", str(feed), "--json"]) == 0
    counters = json.loads(capsys.readouterr().out)["checkpoints"]
    assert counters == {
        "scope": "this process",
        "pending": 0,
        "commits": 0,
        "skipped": 0,
        "contended": 0,
        "conflicts": 0,
        "failed": 0,
        "last_skip": None,
    }
    assert main(["session", "show", str(directory), "--feed", str(feed)]) == 0
    out = capsys.readouterr().out
    assert "commits: generation 1 on disk" in out and "0 skipped" in out
    assert "a skipped commit cannot record itself on disk" in out

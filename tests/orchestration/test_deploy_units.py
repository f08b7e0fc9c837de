"""The deployment pieces that need no server: resume keys, served records, and the CLI's in-process writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from demo_cache import DemoSessions

from contextmesh.cli import main
from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import ExecutionError
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, publish
from contextmesh.demo.saved import open_demo_session, save_demo_session
from contextmesh.orchestration import served_record as served
from contextmesh.orchestration.resume import idempotency_key
from contextmesh.session.commit import latest_generation

ROOT = Path(__file__).resolve().parents[2]


# -- the resume key ----------------------------------------------------------------------------------


def test_the_resume_key_names_session_head_stale_set_and_attempt() -> None:
    key = idempotency_key("s1", "head1", ["routes", "hashing"], 0)
    assert key == idempotency_key("s1", "head1", ["hashing", "routes", "hashing"], 0), "a set: order and repeats"
    assert key.startswith("contextmesh-resume|s1|head1|") and key.endswith("|0")
    others = {
        idempotency_key("s2", "head1", ["hashing", "routes"], 0),
        idempotency_key("s1", "head2", ["hashing", "routes"], 0),
        idempotency_key("s1", "head1", ["hashing"], 0),
        idempotency_key("s1", "head1", ["hashing", "routes"], 1),
    }
    assert key not in others and len(others) == 4


# -- served records ------------------------------------------------------------------------------------


def _record(session_dir: Path, pid: int | None = None) -> served.ServedRecord:
    return served.ServedRecord(
        "0d6c5c1e-1111-4222-8333-944445555666",
        str(session_dir),
        "http://127.0.0.1:4999/api",
        "contextmesh-plan/plan",
        "contextmesh-recheck/recheck",
        "contextmesh-repair/repair",
        "run-deployment",
        os.getpid() if pid is None else pid,
    )


def test_a_served_record_round_trips_and_is_found_for_its_directory(tmp_path: Path) -> None:
    record = _record(tmp_path / "session")
    path = served.remember(record, tmp_path / "home")
    assert path == tmp_path / "home" / "served" / f"{record.session_id}.json"
    assert served.parse(path) == record
    assert served.find(record.session_id, tmp_path / "session", tmp_path / "home") == record
    assert served.find(record.session_id, tmp_path / "elsewhere", tmp_path / "home") is None
    assert record.flow_run_url("abc") == "http://127.0.0.1:4999/runs/flow-run/abc"


def test_a_record_whose_process_is_gone_counts_as_absent(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    record = _record(tmp_path / "session", pid=gone.pid)
    served.remember(record, tmp_path)
    assert served.find(record.session_id, tmp_path / "session", tmp_path) is None


def test_forget_with_another_pid_keeps_the_record(tmp_path: Path) -> None:
    record = _record(tmp_path / "s")
    path = served.remember(record, tmp_path)
    served.forget(record.session_id, tmp_path, pid=record.pid + 1)
    assert path.exists()
    served.forget(record.session_id, tmp_path, pid=record.pid)
    assert not path.exists()


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        ({"extra": 1}, "extra ['extra']"),
        ({"pid": None}, "field 'pid' is NoneType"),
        ({"pid": True}, "field 'pid' is bool"),
        ({"pid": -4}, "positive process id"),
        ({"trigger": "cron"}, "field 'trigger' is 'cron'"),
        ({"api_url": "file:///etc/passwd"}, "http(s) URL"),
        ({"format": "contextmesh.other"}, "field 'format'"),
    ],
)
def test_a_served_record_that_is_not_what_serve_writes_is_refused(
    tmp_path: Path, change: dict[str, object], rule: str
) -> None:
    record = _record(tmp_path / "s")
    path = served.remember(record, tmp_path)
    data = loads(path.read_bytes())
    data.update(change)
    before = file_bytes(data)
    path.write_bytes(before)
    with pytest.raises(served.ServedError) as caught:
        served.find(record.session_id, tmp_path / "s", tmp_path)
    assert str(path) in str(caught.value) and rule in str(caught.value)
    assert path.read_bytes() == before, "a refused record is left as it was"


def test_a_missing_field_is_named(tmp_path: Path) -> None:
    record = _record(tmp_path / "s")
    path = served.remember(record, tmp_path)
    data = loads(path.read_bytes())
    del data["recheck"]
    path.write_bytes(file_bytes(data))
    with pytest.raises(served.ServedError, match=r"missing \['recheck'\]"):
        served.parse(path)


@pytest.mark.parametrize("session_id", ["../escape", "a/b", "", "with space"])
def test_a_session_id_that_cannot_be_a_file_name_is_refused(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(served.ServedError, match="cannot name a served record"):
        served.path_for(session_id, tmp_path)


def test_peek_reads_identity_and_refuses_a_directory_without_a_session(tmp_path: Path) -> None:
    with pytest.raises(ExecutionError, match="holds no session manifest"):
        served.peek(str(tmp_path))
    session = save_demo_session(tmp_path / "s", rounds=0, feed=tmp_path / "feed.json")
    assert served.peek(str(tmp_path / "s")) == (session.session_id, "secure-authentication", 1)


# -- the CLI's writes, in-process (no served deployment) ---------------------------------------------


def test_recheck_repair_resume_run_in_process_without_a_served_deployment(
    tmp_path: Path, demo_sessions: DemoSessions, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    directory, feed = demo_sessions.copy(tmp_path, rounds=0, name="session")
    common = ["--session", str(directory), "--feed", str(feed), "--json"]
    entries = len(open_demo_session(directory, feed=feed).runner.ledger)  # type: ignore[union-attr]
    assert main(["recheck", *common]) == 0
    quiet = loads(capsys.readouterr().out)
    assert quiet["executor"] == "in-process" and quiet["report"]["stale"] == []
    after = open_demo_session(directory, feed=feed).runner.ledger  # type: ignore[union-attr]
    assert len(after) == entries + 1 and after.entries[-1].event == "audited", "one summary entry, nothing else"
    publish(feed, "argon2-cffi", ADVISORY_TEXT)
    assert main(["recheck", *common]) == 0
    assert loads(capsys.readouterr().out)["report"]["stale"] == ["hashing", "routes", "rate_limit"]
    assert main(["resume", *common]) == 0
    blocked = loads(capsys.readouterr().out)["report"]
    assert blocked["executed"] == [] and set(blocked["blocked"]) == {"hashing", "routes", "rate_limit"}
    repair = ["repair", "hashing", "--worker-key", DEFAULT_KEYS["bcrypt"], "--assumes", "bcrypt has no open advisory"]
    assert main([*repair, *common]) == 0
    assert loads(capsys.readouterr().out)["worker_key"] == DEFAULT_KEYS["bcrypt"]
    assert main(["resume", *common]) == 0
    assert loads(capsys.readouterr().out)["report"]["executed"] == ["hashing", "routes", "rate_limit"]
    session = open_demo_session(directory, feed=feed)
    assert session.runner is not None and set(session.runner.states().values()) == {"done"}
    assert session.runner.ledger.verify()


def test_a_repair_onto_an_unregistered_key_changes_nothing(
    tmp_path: Path, demo_sessions: DemoSessions, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    directory, feed = demo_sessions.copy(tmp_path, rounds=0, name="session")
    publish(feed, "argon2-cffi", ADVISORY_TEXT)
    assert main(["recheck", "--session", str(directory), "--feed", str(feed)]) == 0
    generation = latest_generation(directory)
    code = main(["repair", "hashing", "--worker-key", "auth.bcrypt.v1", "--assumes", "x", "--session", str(directory)])
    assert code == 1
    err = capsys.readouterr().err
    assert "no worker is registered under 'auth.bcrypt.v1'" in err and DEFAULT_KEYS["bcrypt"] in err
    assert latest_generation(directory) == generation


def test_serve_without_the_deployment_folder_says_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--session", str(tmp_path), "--project", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert str(tmp_path / "deployments" / "serve.py") in err and "--project" in err


def test_serve_py_refuses_a_bad_interval_before_touching_anything(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "deployments" / "serve.py"), "--session", str(tmp_path), "--interval", "0"],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
        env={**os.environ, "CONTEXTMESH_HOME": str(tmp_path / "home")},
    )
    assert done.returncode == 2
    assert "--interval 0" in done.stderr and "positive number of seconds" in done.stderr
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-3", "soon"])
@pytest.mark.parametrize("command", [["recheck"], ["resume"], ["serve"]])
def test_a_wait_or_interval_that_is_not_a_positive_number_of_seconds_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], value: str
) -> None:
    option = "--interval" if command == ["serve"] else "--wait"
    assert main([*command, "--session", str(tmp_path), option, value]) == 2  # a usage error, reported, not raised
    err = capsys.readouterr().err
    assert option in err and repr(value) in err and "seconds" in err
    assert list(tmp_path.iterdir()) == []

"""The parts of ``serve``'s reactor that need no Prefect server (ADR 0017), on a real project, in-process.

What it watches (a project's world file, the session's *submitted* evidence and not the plan's own
notes), the reactions file a writer reads (fails closed: a broken or stale one is "nothing serves
it"), what ``evidence add`` and ``demo advisory`` say happens next, the one line per ended run, and
its settings refused by name.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from contextmesh.cli import main
from contextmesh.core.errors import ExecutionError
from contextmesh.orchestration import reactions
from contextmesh.orchestration.plain_api import dispatch_over_http
from contextmesh.orchestration.reactor import react_seconds, reacts, warm_runs
from contextmesh.orchestration.run_watch import RunWatch, finish_seconds, start_seconds
from contextmesh.orchestration.serve_lines import run_line, started_line
from contextmesh.orchestration.watched import Watched, auditor_files
from contextmesh.orchestration.what_next import after_evidence, after_feed
from contextmesh.project.project import load_project


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    document = json.loads(captured.out)
    assert isinstance(document, dict)
    return document


@pytest.fixture
def project(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    _cli(capsys, "init", "weekly")
    monkeypatch.chdir(tmp_path / "weekly")
    assert _cli(capsys, "run", "--local")["report"]["executed"] == ["load", "summarise", "publish"]
    return tmp_path / "weekly"


def _session(root: Path) -> Path:
    return root / ".contextmesh" / "session"


def test_the_world_file_a_setting_names_is_watched_and_nothing_else(project: Path) -> None:
    found = load_project(project)
    assert auditor_files(project, dict(found.settings)) == [(project / "world.json").resolve()]
    outside = {"world": "../elsewhere.json", "absolute": str(project / "world.json"), "count": 3, "word": "weekly"}
    (project.parent / "elsewhere.json").write_text("{}")
    assert auditor_files(project, outside) == [], "only relative paths to files inside the root"


def test_a_world_edit_is_a_change_and_so_is_its_removal(project: Path) -> None:
    world = project / "world.json"
    watched = Watched(_session(project), [world])
    assert watched.changes() == []
    world.write_text(world.read_text().replace('"EUR"', '"USD"'))
    assert watched.changes() == ["world.json changed"]
    assert watched.changes() == [], "a change is said once"
    world.unlink()
    assert watched.changes() == ["world.json was removed"]


def test_submitted_evidence_is_a_change_and_a_rounds_own_notes_are_not(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    watched = Watched(_session(project), [])
    added = _cli(capsys, "evidence", "add", "Regions are unchanged", "--source", "mail:data/1")
    assert watched.changes() == [f"new evidence {added['evidence_id']}"]
    # A recheck writes audit notes (evidence nodes of the plan's own) and commits: no change.
    assert _cli(capsys, "recheck", "--local")["report"]["audited"]
    assert watched.changes() == []
    again = _cli(capsys, "evidence", "add", "Regions are unchanged", "--source", "mail:data/1")
    assert again["evidence_id"] == added["evidence_id"] and watched.changes() == [], "the same evidence again"


def test_evidence_add_with_nothing_serving_says_who_must_recheck(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["evidence", "add", "Prices move to USD", "--source", "mail:finance/2"])
    out = capsys.readouterr().out
    assert status == 0
    assert "next: no `contextmesh serve` is serving this session, so nothing rechecks it yet" in out
    assert "every 600 s" in out, "the project's own interval"
    document = _cli(capsys, "evidence", "add", "Prices move to EUR", "--source", "mail:finance/3")
    assert document["next"]["served"] is False and document["next"]["flow_run_id"] is None


def _reacting(session_id: str, pid: int, **fields: Any) -> reactions.Reacting:
    return reactions.Reacting(session_id, "/s", pid, ("/w/feed.json",), 600.0, **fields)


def test_a_live_serving_process_that_started_a_recheck_is_named(tmp_path: Path) -> None:
    since = time.time()
    reactions.write(
        _reacting("s1", os.getpid(), started_at=since + 0.1, trigger="x", flow_run_id="r1", url="http://u/r1"), tmp_path
    )
    found = after_evidence("s1", since, interval=600, home=tmp_path, wait=0.2)
    assert found.served and found.flow_run_id == "r1"
    assert found.text == f"a recheck started now under serve (pid {os.getpid()}): http://u/r1"
    (fed,) = after_feed(Path("/w/feed.json"), since, home=tmp_path, wait=0.2)
    assert fed.flow_run_id == "r1"
    assert after_feed(Path("/w/other.json"), since, home=tmp_path, wait=0.2) == []


def test_a_recheck_started_before_the_change_is_not_the_one_for_it(tmp_path: Path) -> None:
    since = time.time()
    reactions.write(_reacting("s2", os.getpid(), started_at=since - 5, flow_run_id="old", url="http://u/old"), tmp_path)
    found = after_evidence("s2", since, interval=600, home=tmp_path, wait=0.2)
    assert found.served and not found.flow_run_id
    assert "starts a recheck as soon as the one running ends" in found.text


def test_a_broken_or_stale_reactions_file_means_nothing_serves(tmp_path: Path) -> None:
    path = reactions.reacting_path("s3", tmp_path)
    path.parent.mkdir(parents=True)
    for text in ("not json", "[]", json.dumps({"format": "contextmesh.reacting", "pid": "x"})):
        path.write_text(text)
        assert reactions.serving("s3", tmp_path) is None, text
    os.mkfifo(reactions.reacting_path("s4", tmp_path))
    assert reactions.serving("s4", tmp_path) is None, "a fifo is never opened for a blocking read"
    gone = 2**22 + 12345  # above any pid this machine hands out
    reactions.write(_reacting("s5", gone), tmp_path)
    assert reactions.serving("s5", tmp_path) is None, "a process that is gone serves nothing"
    assert not after_evidence("s5", time.time(), interval=60, home=tmp_path, wait=0.1).served


def test_one_line_per_ended_run_names_the_outcome_and_its_page() -> None:
    url = "http://127.0.0.1:4200/runs/flow-run/abc"
    assert run_line("recheck", {}, "Disproved", "disproved 'x'\n(evidence e)", url) == (
        f"disproof · disproved 'x' (evidence e) · {url}"
    )
    assert run_line("plan", {"mode": "resume"}, "Blocked", "2 wait", url) == f"resume Blocked · 2 wait · {url}"
    assert run_line("plan", {"mode": "run"}, "Completed", "", url) == f"round Completed · {url}"
    assert run_line("repair", {}, "Completed", "next: resume", url).startswith("repair Completed · next: resume")
    assert len(run_line("recheck", {}, "Completed", "y" * 5000, url)) < 900, "a long message is cut, the URL kept"
    assert run_line("recheck", {}, "Completed", "y" * 5000, url).endswith(url)
    assert started_line("world.json changed", url) == f"recheck started (world.json changed) · {url}"


@pytest.mark.parametrize("value", ["0", "-1", "61", "soon", "nan"])
def test_a_bad_react_interval_is_refused_by_name(value: str) -> None:
    with pytest.raises(ExecutionError, match=rf"CONTEXTMESH_REACT_SECONDS={value!r}: the rule is a number of seconds"):
        react_seconds({"CONTEXTMESH_REACT_SECONDS": value})


def test_the_settings_default_and_parse() -> None:
    assert react_seconds({}) == 0.5 and react_seconds({"CONTEXTMESH_REACT_SECONDS": "0.1"}) == 0.1
    assert warm_runs({}) is True and warm_runs({"CONTEXTMESH_WARM_RUNS": "0"}) is False
    with pytest.raises(ExecutionError, match=r"CONTEXTMESH_WARM_RUNS='yes': the rule is 1"):
        warm_runs({"CONTEXTMESH_WARM_RUNS": "yes"})
    assert reacts({}) is True and reacts({"CONTEXTMESH_REACT": "0"}) is False
    with pytest.raises(ExecutionError, match=r"CONTEXTMESH_REACT='off': the rule is 1"):
        reacts({"CONTEXTMESH_REACT": "off"})


@pytest.mark.parametrize("name", ["CONTEXTMESH_RUN_START_SECONDS", "CONTEXTMESH_RUN_SECONDS"])
@pytest.mark.parametrize("value", ["0", "-5", "never", "nan", "1e9"])
def test_a_bad_stuck_run_bound_is_refused_by_name(name: str, value: str) -> None:
    read = start_seconds if name == "CONTEXTMESH_RUN_START_SECONDS" else finish_seconds
    with pytest.raises(ExecutionError, match=rf"{name}={value!r}: the rule is a number of seconds above 0"):
        read({name: value})


def test_the_stuck_run_bounds_default_and_parse() -> None:
    assert start_seconds({}) == 120.0 and start_seconds({"CONTEXTMESH_RUN_START_SECONDS": "5"}) == 5.0
    assert finish_seconds({}) == 3600.0 and finish_seconds({"CONTEXTMESH_RUN_SECONDS": "90"}) == 90.0


def test_a_claimed_run_is_overdue_past_either_bound_and_a_given_up_one_stops_counting() -> None:
    now = [0.0]
    watch = RunWatch(start=10, finish=100, clock=lambda: now[0])
    quick, slow = uuid.uuid4(), uuid.uuid4()
    watch.claimed(quick, "recheck")
    now[0] = 5.0
    watch.claimed(slow, "plan")
    now[0] = 10.0
    assert watch.overdue() == [] and watch.active() == 2, "at the bound is not past it"
    now[0] = 10.5
    (stuck,) = watch.overdue()
    assert (stuck.flow_run_id, stuck.role, stuck.started) == (quick, "recheck", False)
    assert "did not reach its first step within 10 s (CONTEXTMESH_RUN_START_SECONDS)" in stuck.message
    assert len(watch.overdue()) == 1, "still overdue until it is given up"
    watch.given_up(stuck)
    assert watch.active() == 1 and watch.overdue() == []
    now[0] = 15.5
    assert [late.flow_run_id for late in watch.overdue()] == [slow]
    watch.ended(slow)
    assert watch.active() == 0 and watch.overdue() == []


def test_the_dispatch_setting_defaults_to_plain_http_and_a_bad_one_is_refused_by_name() -> None:
    assert dispatch_over_http({}) is True and dispatch_over_http({"CONTEXTMESH_DISPATCH": "prefect"}) is False
    with pytest.raises(ExecutionError, match=r"CONTEXTMESH_DISPATCH='grpc': the rule is http .* or prefect"):
        dispatch_over_http({"CONTEXTMESH_DISPATCH": "grpc"})


def test_a_run_created_in_this_process_wakes_every_listening_reactor_and_no_stopped_one() -> None:
    from contextmesh.orchestration import wakeups

    first, second, stopped = wakeups.listen(), wakeups.listen(), wakeups.listen()
    wakeups.forget(stopped)
    assert not (first.is_set() or second.is_set())
    wakeups.wake()
    assert first.is_set() and second.is_set() and not stopped.is_set()
    wakeups.forget(first)
    wakeups.forget(second)

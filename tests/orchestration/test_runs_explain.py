"""Runs that explain themselves (ADR 0016), read back through a real Prefect server's API.

``deployments/serve.py`` serves a demo session with a recheck every 1 s (no longer than a recheck
takes here since ADR 0032, so scheduled rechecks collide). A quiet recheck runs; an advisory is published; the
scheduled recheck disproves hashing's ground and starts a resume that runs nothing (every stale
task waits for repair); ``contextmesh repair`` and ``contextmesh resume`` dispatch to the served
deployments and the resume re-runs the stale closure. Then, for every flow run of the session:
a named Completed-type state with a message (naming the disproved assumption where one was), log
lines, a reason on every executed task's table row; the receipt, the recheck and the resume
reference each other; no recheck is left cancelled. The module runs its own server with the UI,
so headless Chromium can open the resume's page and the runs list and find the state message and
the state names in the page's text; ``CONTEXTMESH_SCREENSHOT=1`` saves both to ``docs/img/``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from orch_helpers import artifacts, events, flow_run, pause_schedules, post

from contextmesh.core.canonical import loads
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, publish
from contextmesh.demo.saved import open_demo_session, save_demo_session
from contextmesh.orchestration import local_server as server
from contextmesh.orchestration import served_record as served
from contextmesh.orchestration.announce import announcements
from contextmesh.orchestration.settings import client_settings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
GROUND = "argon2-cffi has no open advisory"
STALE = ["hashing", "routes", "rate_limit"]
_SERVE = [sys.executable, str(ROOT / "deployments" / "serve.py")]


CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


@pytest.fixture(scope="module")
def prefect_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """This module's own server, with its UI (the session's test server runs without one)."""
    home = tmp_path_factory.mktemp("prefect-ui-server")
    info = server.start(home, port=server.free_port(), ui=True, keep=False, timeout=180)
    try:
        with client_settings(info.api_url, heartbeat=False):
            yield info.api_url
            server.drain_workers()
    finally:
        server.stop(home)


@dataclass
class Loop:
    api: str
    directory: Path
    feed: Path
    session_id: str
    disproving: dict[str, Any]  # the recheck that committed the disproof
    blocked: dict[str, Any]  # the resume it started
    repair: dict[str, Any]
    resume: dict[str, Any]
    repair_text: str
    resume_text: str


def _wait_for(what: str, probe: Any, timeout: float = 120.0, seen: Any = None) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.5)
    shown = "" if seen is None else "\n" + "\n".join(seen())
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{shown}")


def _seen(api: str, session_id: str) -> Any:
    def lines() -> list[str]:
        return [
            f"{r['name']} · {r['state_type']}/{r['state_name']} · due {r['expected_start_time']} · "
            f"{(r['state'] or {}).get('message')}"
            for r in _runs(api, session_id)
        ]

    return lines


def _runs(api: str, session_id: str, flow: str | None = None) -> list[dict[str, Any]]:
    body: dict[str, Any] = {
        "flow_runs": {"tags": {"all_": [f"cm.session:{session_id}"]}},
        "sort": "EXPECTED_START_TIME_ASC",
        "limit": 200,
    }
    if flow is not None:
        body["flows"] = {"name": {"any_": [flow]}}
    return list(post(api, "/flow_runs/filter", body))


def _named(api: str, session_id: str, flow: str, name: str) -> list[dict[str, Any]]:
    return [r for r in _runs(api, session_id, flow) if r["state_type"] == "COMPLETED" and r["state_name"] == name]


@pytest.fixture(scope="module")
def loop(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    root = tmp_path_factory.mktemp("explained")
    home, feed, directory = root / "home", root / "feed.json", root / "session"
    session = save_demo_session(directory, rounds=0, feed=feed)
    sid = session.session_id
    env = {**os.environ, "PREFECT_API_URL": prefect_api, "CONTEXTMESH_HOME": str(home)}
    env["PREFECT_RUNNER_POLL_FREQUENCY"] = "2"
    log = root / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*_SERVE, "--session", str(directory), "--feed", str(feed), "--interval", "1"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    mp = pytest.MonkeyPatch()
    mp.setenv("CONTEXTMESH_HOME", str(home))
    try:
        _wait_for("the served record", lambda: served.find(sid, directory, home), timeout=90)
        seen = _seen(prefect_api, sid)
        _wait_for("a quiet recheck", lambda: _named(prefect_api, sid, "contextmesh-recheck", "Completed"), seen=seen)
        publish(feed, "argon2-cffi", ADVISORY_TEXT)
        (disproving,) = _wait_for(
            "the disproving recheck", lambda: _named(prefect_api, sid, "contextmesh-recheck", "Disproved"), seen=seen
        )
        (blocked,) = _wait_for(
            "the blocked resume", lambda: _named(prefect_api, sid, "contextmesh-plan", "Blocked"), seen=seen
        )
        repair, repair_text = _dispatch(
            ["repair", "hashing", "--worker-key", DEFAULT_KEYS["bcrypt"], "--assumes", "bcrypt has no open advisory"],
            directory,
        )
        resume, resume_text = _dispatch(["resume"], directory)
        assert "still " not in repair_text + resume_text, "\n".join([repair_text, resume_text, *seen()])
        # The story is told: stop the 1 s schedule so the runs list (newest 100 first) still holds the
        # disproving recheck and the blocked resume however long the module's tests take under load.
        pause_schedules(prefect_api, disproving["deployment_id"])
        yield Loop(prefect_api, directory, feed, sid, disproving, blocked, repair, resume, repair_text, resume_text)
    finally:
        mp.undo()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def _dispatch(command: list[str], directory: Path) -> tuple[dict[str, Any], str]:
    """Run a CLI write as a person would (text), in a subprocess, and read its flow run back."""
    done = subprocess.run(
        [sys.executable, "-m", "contextmesh", *command, "--session", str(directory), "--wait", "120"],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
        env=os.environ.copy(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    url = done.stdout.splitlines()[0].rsplit(" · ", 1)[1]
    return {"id": url.rsplit("/", 1)[1]}, done.stdout


def _logs(api: str, *, last: tuple[str, str] | None = None, **match: list[str]) -> list[dict[str, Any]]:
    """The log lines of the runs named by ``match``, once each has one (and, with ``last``, once the
    run ``last[0]`` wrote a line starting ``last[1]``): lines leave serve in two-second batches."""
    key, ids = next(iter(match.items()))
    body = {"logs": {key: {"any_": ids}}, "limit": 200}
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = list(post(api, "/logs/filter", body))
        arrived = {str(entry[key]) for entry in found} >= set(ids)
        if arrived and (
            last is None or any(str(e[key]) == last[0] and e["message"].startswith(last[1]) for e in found)
        ):
            break
        time.sleep(0.5)
    return found


def _table(api: str, run: dict[str, Any]) -> dict[str, Any]:
    found = post(
        api, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [run["id"]]}, "type": {"any_": ["table"]}}}
    )
    (table,) = found
    return dict(table)


def _rows(table: dict[str, Any]) -> list[dict[str, str]]:
    data = table["data"]
    rows = loads(data) if isinstance(data, str) else data
    assert isinstance(rows, list)
    return rows


def test_every_flow_run_ends_in_a_named_completed_state_with_a_message(loop: Loop) -> None:
    runs = _runs(loop.api, loop.session_id)
    assert len(runs) >= 5
    for run in runs:
        if run["state_type"] in {"SCHEDULED", "PENDING", "RUNNING", "CANCELLED"}:
            continue  # a recheck still to come, or turned away just now (see the relabel test)
        assert run["state_type"] == "COMPLETED", (run["name"], run["state_name"], run["state"]["message"])
        assert run["state"]["message"], f"{run['name']} ({run['state_name']}) ended without a message"
    states = {r["id"]: (r["state_name"], r["state"]["message"]) for r in runs}
    disproved, blocked = states[loop.disproving["id"]], states[loop.blocked["id"]]
    repaired, resumed = states[loop.repair["id"]], states[loop.resume["id"]]
    assert disproved[0] == "Disproved" and f"disproved '{GROUND}' (evidence evidence:" in disproved[1]
    assert blocked[0] == "Blocked" and "3 task(s) wait for repair: hashing" in blocked[1] and GROUND in blocked[1]
    assert repaired[0] == "Completed" and f"(replaces '{GROUND}')" in repaired[1] and "next: resume" in repaired[1]
    assert resumed[0] == "Completed"
    assert f"re-ran hashing, routes, rate_limit after '{GROUND}' was disproved" in resumed[1]
    assert "schema, tokens cached" in resumed[1]


def test_a_recheck_turned_away_by_the_limit_is_relabelled_skipped_and_none_is_left_cancelled(loop: Loop) -> None:
    """At a 1 s interval rechecks collide (a recheck takes about as long); the runner fetches none early,
    and the one that ran relabels the rest."""
    rechecks = _runs(loop.api, loop.session_id, "contextmesh-recheck")
    ran = [r for r in rechecks if r["state_type"] == "COMPLETED" and r["state_name"] != "Skipped"]
    newest = max(r["start_time"] for r in ran)
    for run in rechecks:
        if run["state_type"] == "CANCELLED":  # turned away by the recheck running now, relabelled when it ends
            assert run["expected_start_time"] >= newest, (run["name"], run["state"]["message"])
        assert run["state_type"] in {"COMPLETED", "CANCELLED", "SCHEDULED", "PENDING", "RUNNING"}
    skipped = [r for r in rechecks if r["state_name"] == "Skipped"]
    assert skipped, "a 1 s interval never collided: the test no longer shows the relabel"
    for run in skipped:
        assert run["state_type"] == "COMPLETED" and run["state"]["message"].startswith("skipped: it came due while")
    assert all(r["run_count"] == 0 for r in skipped), "a skipped recheck never ran (no process started for it)"


def test_the_disproving_audit_and_the_blocked_round_differ_from_success_by_state_name(loop: Loop) -> None:
    body = {
        "flow_runs": {
            "tags": {"all_": [f"cm.session:{loop.session_id}"]},
            "state": {"name": {"any_": ["Disproved", "Blocked"]}},
        }
    }
    found = {r["id"] for r in post(loop.api, "/flow_runs/filter", body)}
    assert found == {loop.disproving["id"], loop.blocked["id"]}
    audits = post(
        loop.api,
        "/task_runs/filter",
        {"flow_runs": {"id": {"any_": [loop.disproving["id"]]}}, "task_runs": {"name": {"any_": ["hashing · audit"]}}},
    )
    assert [a["state_name"] for a in audits] == ["Disproved"]


def test_every_executed_task_row_has_its_reason(loop: Loop) -> None:
    """Round 1 ran in the saved session (in-process); "first run" is checked in tests/execution/test_run_reasons.py."""
    plan_runs = [r for r in _runs(loop.api, loop.session_id, "contextmesh-plan") if r["state_type"] == "COMPLETED"]
    assert {loop.blocked["id"], loop.resume["id"]} <= {r["id"] for r in plan_runs}
    for run in plan_runs:
        rows = _rows(_table(loop.api, run))
        assert all(row["reason"] for row in rows), rows
    rows = {row["task"]: row for row in _rows(_table(loop.api, loop.resume))}
    assert [t for t, row in rows.items() if row["outcome"] == "executed"] == STALE
    assert rows["hashing"]["reason"].startswith(f"repaired onto {DEFAULT_KEYS['bcrypt']}")
    for task in ("routes", "rate_limit"):
        assert rows[task]["reason"].startswith(f"'{GROUND}' was disproved (evidence evidence:"), rows[task]


def test_every_run_and_every_executed_task_run_logs_what_it_did(loop: Loop) -> None:
    runs = [loop.disproving, loop.blocked, loop.repair, loop.resume]
    logs = _logs(loop.api, last=(loop.resume["id"], "published "), flow_run_id=[r["id"] for r in runs])
    by_run: dict[str, list[str]] = {}
    for entry in logs:
        by_run.setdefault(str(entry["flow_run_id"]), []).append(entry["message"])
    for run in runs:
        assert by_run.get(run["id"]), f"flow run {run['id']} wrote no log line"
    assert any(m.startswith("loaded session ") for m in by_run[loop.resume["id"]])
    assert any(m.startswith("executed hashing — repaired onto") for m in by_run[loop.resume["id"]])
    assert any(m.startswith("committed round ") for m in by_run[loop.resume["id"]])
    assert any("announced the disproof of" in m for m in by_run[loop.disproving["id"]])
    task_runs = post(loop.api, "/task_runs/filter", {"flow_runs": {"id": {"any_": [loop.resume["id"]]}}, "limit": 50})
    workers = [t["id"] for t in task_runs if t["name"] in STALE]
    assert len(workers) == 3
    worker_logs = _logs(loop.api, task_run_id=workers)
    assert {str(entry["task_run_id"]) for entry in worker_logs} == set(workers)
    assert any(f"worker {DEFAULT_KEYS['bcrypt']} runs hashing" in entry["message"] for entry in worker_logs)


def test_the_receipt_the_recheck_and_the_resume_reference_each_other(loop: Loop) -> None:
    session = open_demo_session(loop.directory, feed=loop.feed)
    assert session.runner is not None
    (item,) = announcements(session.runner.ledger, loop.session_id)
    (receipt,) = artifacts(loop.api, item.artifact_key)
    assert receipt["flow_run_id"] == loop.disproving["id"]
    assert f"/runs/flow-run/{loop.disproving['id']}" in receipt["data"]
    assert f"/runs/flow-run/{loop.blocked['id']}" in receipt["data"]
    (event,) = events(loop.api, str(item.id))
    roles = {r["prefect.resource.role"]: r["prefect.resource.id"] for r in event["related"]}
    assert roles["recheck"] == f"prefect.flow-run.{loop.disproving['id']}"
    assert roles["resume"] == f"prefect.flow-run.{loop.blocked['id']}"
    assert event["payload"]["resume_flow_run_id"] == loop.blocked["id"]
    recheck = flow_run(loop.api, loop.disproving["id"])
    assert "resume started: " in recheck["state"]["message"] and loop.blocked["id"] in recheck["state"]["message"]
    for run in (loop.blocked, loop.resume):
        table = _table(loop.api, run)
        assert f"/artifacts/key/{item.artifact_key}" in table["description"]
        assert f"/runs/flow-run/{loop.disproving['id']}" in table["description"]
        assert f"/artifacts/key/{item.artifact_key}" in flow_run(loop.api, run["id"])["state"]["message"]


def test_the_cli_says_what_ran_what_is_cached_what_waits_and_what_next(loop: Loop) -> None:
    assert f"next: `contextmesh resume --session {loop.directory}` runs hashing, routes, rate_limit" in loop.repair_text
    text = loop.resume_text
    assert "\nROUND " in text and " · 3 executed, 2 cached, 0 blocked\n" in text
    assert f"executed hashing    — repaired onto {DEFAULT_KEYS['bcrypt']}" in text
    assert f"executed routes     — '{GROUND}' was disproved" in text
    assert "cached   schema     — untouched, its previous result stands" in text
    assert " done\n" not in text.split("session generation")[0]


def _page_text(driver: Any, url: str, needles: list[str], timeout: float = 60.0) -> str:
    driver.get(url)
    return _wait_text(driver, needles, timeout, url)


def _scroll_to(driver: Any, label: str, where: str) -> None:
    """Scroll the first leaf element reading ``label`` into view (what the screenshot should show)."""
    driver.execute_script(
        "const hit = [...document.querySelectorAll('*')]"
        ".find(n => n.children.length === 0 && n.innerText && n.innerText.trim() === arguments[0]);"
        "if (hit) { hit.scrollIntoView({block: arguments[1]}); }",
        label,
        where,
    )


def _wait_text(driver: Any, needles: list[str], timeout: float = 60.0, url: str = "the page") -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = str(driver.execute_script("return document.body ? document.body.innerText : ''"))
        if all(needle in text for needle in needles):
            return text
        time.sleep(0.5)
    raise AssertionError(f"{url} never showed {needles}; page text:\n{text[:2000]}")


def test_the_resume_page_and_the_runs_list_show_the_why_in_a_browser(loop: Loop, tmp_path: Path) -> None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    assert not missing, f"missing {missing}: run `bash scripts/install-browser`"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1600,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    ui = loop.api.removesuffix("/api")
    shots = ROOT / "docs" / "img" if os.environ.get("CONTEXTMESH_SCREENSHOT") == "1" else tmp_path
    try:
        driver.set_page_load_timeout(60)
        _page_text(driver, f"{ui}/runs/flow-run/{loop.resume['id']}", ["Details", "Logs"])
        clicked = driver.execute_script(
            "const tab = [...document.querySelectorAll('[role=tab], button, a, li')]"
            ".find(n => n.offsetParent !== null && n.innerText.trim() === 'Details');"
            "if (tab) { tab.click(); return true; } return false;"
        )
        assert clicked, "the flow-run page has no Details tab"
        _wait_text(driver, ["State Message", "re-ran hashing, routes, rate_limit"])
        driver.execute_script(  # the Details tab truncates a long message behind "See More"
            "const more = [...document.querySelectorAll('*')]"
            ".find(n => n.children.length === 0 && n.innerText && n.innerText.trim() === 'See More');"
            "if (more) { more.click(); }"
        )
        text = _wait_text(driver, ["State Message", "schema, tokens cached"])
        shown = text.split("State Message", 1)[1].strip()
        assert shown.startswith("round ") and f"re-ran hashing, routes, rate_limit after '{GROUND}'" in shown, shown[
            :400
        ]
        settle = 1.0 if shots != tmp_path else 0.0  # let the badges settle before a picture for docs/img
        _scroll_to(driver, "State Message", "center")
        time.sleep(settle)
        driver.save_screenshot(str(shots / "prefect-resume-explained.png"))
        _page_text(driver, f"{ui}/runs", ["Disproved", "Blocked"])
        _scroll_to(driver, "Blocked", "start")
        time.sleep(settle)
        driver.save_screenshot(str(shots / "prefect-runs-explained.png"))
    finally:
        driver.quit()
    assert (shots / "prefect-resume-explained.png").stat().st_size > 10_000

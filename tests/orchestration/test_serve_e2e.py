"""End to end on a real Prefect server (SQLite) with ``deployments/serve.py`` serving a demo session.

An advisory is published to the feed; a recheck — the one serve.py starts when the feed changes
(ADR 0017), or a scheduled one (every 4 s here) already under way — disproves the argon2 ground and
starts a resume flow run, which runs nothing (every stale task waits for repair) and
says so in its round table; ``contextmesh repair`` and ``contextmesh resume`` dispatch to the served
deployments; the resume executes exactly the stale closure and shows the rest ``Cached``. Everything
is read back from Prefect's REST API. The runner's poll interval is lowered to 2 s so the test is
not paced by Prefect's 10 s default.
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
from orch_helpers import artifacts, events, flow_run, pause_schedules, post, task_runs

from contextmesh.cli import main
from contextmesh.core.canonical import loads
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, publish
from contextmesh.demo.saved import open_demo_session, save_demo_session
from contextmesh.orchestration import served_record as served
from contextmesh.orchestration.announce import announcements
from contextmesh.orchestration.resume import ResumeTrigger

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PLAN_DEPLOYMENT = "contextmesh-plan/plan"
STALE = ["hashing", "routes", "rate_limit"]
_SERVE = [sys.executable, str(ROOT / "deployments" / "serve.py")]


@dataclass
class Served:
    api: str
    home: Path
    feed: Path
    directory: Path
    session_id: str
    process: subprocess.Popen[bytes]
    log: Path


def _wait_for(what: str, probe: Any, timeout: float = 120.0, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def _flow_runs(api: str, flow: str, **extra: Any) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"flows": {"name": {"any_": [flow]}}, "sort": "EXPECTED_START_TIME_ASC", "limit": 200}
    body.update(extra)
    return list(post(api, "/flow_runs/filter", body))


def _completed_rechecks(api: str) -> int:
    return len(_flow_runs(api, "contextmesh-recheck", flow_runs={"state": {"type": {"any_": ["COMPLETED"]}}}))


def _resumes(api: str, session_id: str) -> list[dict[str, Any]]:
    tagged = {"flow_runs": {"tags": {"all_": [f"cm.session:{session_id}", "cm.trigger:recheck"]}}}
    return _flow_runs(api, "contextmesh-plan", **tagged)


@pytest.fixture(scope="module")
def serving(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("served")
    home, feed, directory = root / "home", root / "feed.json", root / "session"
    session = save_demo_session(directory, rounds=0, feed=feed)
    env = {
        **os.environ,
        "PREFECT_API_URL": prefect_api,
        "CONTEXTMESH_HOME": str(home),
        "PREFECT_RUNNER_POLL_FREQUENCY": "2",
    }
    log = root / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*_SERVE, "--session", str(directory), "--feed", str(feed), "--interval", "4"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    mp = pytest.MonkeyPatch()
    mp.setenv("CONTEXTMESH_HOME", str(home))
    try:
        _wait_for("the served record", lambda: served.find(session.session_id, directory, home), timeout=90)
        yield Served(prefect_api, home, feed, directory, session.session_id, process, log)
    finally:
        mp.undo()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
            raise AssertionError(
                f"serve.py did not stop on SIGTERM within 60 s; log:\n{log.read_text()[-3000:]}"
            ) from None
    assert not served.path_for(session.session_id, home).exists(), "serve.py removes its served record when it stops"


@pytest.fixture(scope="module")
def disproof(serving: Served) -> dict[str, Any]:
    """Publish the advisory once a quiet recheck has run; return the resume run the disproof started."""
    api = serving.api
    _wait_for(
        "a completed recheck",
        lambda: [r for r in _flow_runs(api, "contextmesh-recheck") if r["state_type"] == "COMPLETED"],
    )
    assert _resumes(api, serving.session_id) == [], "a quiet recheck starts nothing"
    publish(serving.feed, "argon2-cffi", ADVISORY_TEXT)
    resume = _wait_for(
        "the resume the disproof starts",
        lambda: [r for r in _resumes(api, serving.session_id) if r["state_type"] == "COMPLETED"],
    )[0]
    return resume


def test_a_recheck_of_the_deployment_discovers_the_advisory_and_starts_one_resume(
    serving: Served, disproof: dict[str, Any]
) -> None:
    api = serving.api
    assert disproof["parameters"]["mode"] == "resume"
    assert disproof["parameters"]["session_dir"] == str(serving.directory)
    assert disproof["idempotency_key"].startswith(f"contextmesh-resume|{serving.session_id}|")
    assert disproof["idempotency_key"].endswith("|0")
    session = open_demo_session(serving.directory, feed=serving.feed)
    assert session.runner is not None
    (item,) = announcements(session.runner.ledger, session.session_id)
    (event,) = events(api, str(item.id))
    recheck_id = next(
        r["prefect.resource.id"].removeprefix("prefect.flow-run.")
        for r in event["related"]
        if r["prefect.resource.id"].startswith("prefect.flow-run.")
    )
    recheck = flow_run(api, recheck_id)
    assert recheck["state_type"] == "COMPLETED" and recheck["name"].endswith(" · recheck")
    started_by = "schedule" if (recheck["created_by"] or {}).get("type") == "SCHEDULE" else None
    if "cm.trigger:change" in recheck["tags"]:
        started_by = "the feed's change"
    assert recheck["deployment_id"] is not None and started_by is not None, (recheck["created_by"], recheck["tags"])
    assert event["payload"]["stale"] == STALE
    assert disproof["idempotency_key"].split("|")[2] == item.entry.digest


def test_the_blocked_resume_runs_nothing_and_its_table_says_what_waits_for_repair(
    serving: Served, disproof: dict[str, Any]
) -> None:
    runs = task_runs(serving.api, disproof["id"], 2)
    assert {r["name"]: r["state_name"] for r in runs} == {"schema · cached": "Cached", "tokens · cached": "Cached"}
    round_ = int(disproof["name"].rsplit(" ", 1)[1])
    (table,) = [a for a in artifacts(serving.api, f"cm-round-{round_}") if a["flow_run_id"] == disproof["id"]]
    rows = {row["task"]: row for row in _rows(table["data"])}
    assert {t for t, row in rows.items() if row["outcome"] == "blocked"} == set(STALE)
    assert "repair it onto new ground" in rows["hashing"]["reason"]
    assert rows["routes"]["reason"] == "it needs 'hashing', which is blocked"
    assert all(rows[t]["task run"] == "none" for t in STALE)
    assert "wait for repair" in table["description"]


def test_the_same_disproof_triggered_again_lands_on_the_same_resume(serving: Served, disproof: dict[str, Any]) -> None:
    api = serving.api
    session = open_demo_session(serving.directory, feed=serving.feed)
    assert session.runner is not None
    (item,) = announcements(session.runner.ledger, session.session_id)
    again = ResumeTrigger(PLAN_DEPLOYMENT)(
        session_id=session.session_id, session_dir=str(serving.directory), ledger_head=item.entry.digest, stale=STALE
    )
    assert again["flow_run_id"] == disproof["id"] and again["attempt"] == 0
    seen = _completed_rechecks(api)
    _wait_for("another completed recheck", lambda: _completed_rechecks(api) > seen, timeout=90)
    assert [r["id"] for r in _resumes(api, serving.session_id)] == [disproof["id"]], "one disproof, one resume"
    # No later test needs a scheduled recheck (the disproof fixture has run; the rest ask for theirs):
    # stop the 4 s schedule rather than let it run to the module's end (ADR 0040).
    pause_schedules(api, _recheck_deployment_id(api))


def _recheck_deployment_id(api: str) -> str:
    found = post(api, "/deployments/filter", {"flows": {"name": {"any_": ["contextmesh-recheck"]}}, "limit": 10})
    (deployment,) = [d for d in found if d["name"] == "recheck"]
    return str(deployment["id"])


def test_repair_and_resume_dispatch_to_the_deployment_and_rerun_only_the_stale_closure(
    serving: Served, disproof: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    api = serving.api
    assert disproof["state_type"] == "COMPLETED"
    common = ["--session", str(serving.directory), "--json", "--wait", "120"]
    repair = ["repair", "hashing", "--worker-key", DEFAULT_KEYS["bcrypt"], "--assumes", "bcrypt has no open advisory"]
    assert main([*repair, *common]) == 0, capsys.readouterr().err
    repaired = loads(capsys.readouterr().out)
    assert repaired["executor"] == "deployment"
    assert repaired["dispatched"]["deployment"] == "contextmesh-repair/repair"
    assert repaired["dispatched"]["state"] == "COMPLETED"
    assert main(["resume", *common]) == 0, capsys.readouterr().err
    resumed = loads(capsys.readouterr().out)
    assert resumed["dispatched"]["deployment"] == PLAN_DEPLOYMENT and resumed["dispatched"]["state"] == "COMPLETED"
    assert set(resumed["states"].values()) == {"done"}
    runs = task_runs(api, resumed["dispatched"]["flow_run_id"], 8)
    names = {r["name"]: r["state_name"] for r in runs}
    assert names == {
        **dict.fromkeys(STALE, "Completed"),
        **{f"{t} · audit": "Completed" for t in STALE},
        "schema · cached": "Cached",
        "tokens · cached": "Cached",
    }
    session = open_demo_session(serving.directory, feed=serving.feed)
    assert session.runner is not None and session.runner.ledger.verify()
    assert session.runner.tasks["hashing"].worker_key == DEFAULT_KEYS["bcrypt"]
    refs = [e.run for e in session.runner.ledger.entries if e.run is not None]
    ids = sorted({str(ref["task_run_id"]) for ref in refs})
    found = post(api, "/task_runs/filter", {"task_runs": {"id": {"any_": ids}}, "limit": 200})
    assert {r["id"]: r["flow_run_id"] for r in found} == {str(r["task_run_id"]): r["flow_run_id"] for r in refs}
    verifier = [sys.executable, str(ROOT / "tools" / "verify_runledger.py")]
    # serve's 4 s schedule may commit a recheck between loading the session and reading the newest
    # manifest's ledger file (then the file is a later history than the head loaded): load again.
    # A ledger that does not verify at its own generation's head fails every attempt.
    for _attempt in range(5):
        loaded = open_demo_session(serving.directory, feed=serving.feed)
        assert loaded.runner is not None
        verify = subprocess.run(
            [*verifier, str(_ledger_file(serving.directory)), "--expect-head", loaded.runner.ledger.head],
            capture_output=True,
            check=False,
            text=True,
            timeout=60,
        )
        if verify.returncode == 0 or _latest(serving.directory) == loaded.generation:
            break
    assert verify.returncode == 0, verify.stdout + verify.stderr


def _latest(directory: Path) -> int:
    from contextmesh.session.commit import latest_generation

    return latest_generation(directory)


def _ledger_file(directory: Path) -> Path:
    from contextmesh.session.commit import latest_generation
    from contextmesh.session.layout import manifest_name, parse_manifest

    generation = latest_generation(directory)
    manifest = parse_manifest(loads((directory / manifest_name(generation)).read_bytes()), generation)
    assert manifest.runledger is not None
    return directory / manifest.runledger.name


def _rows(data: object) -> list[dict[str, str]]:
    rows = loads(data) if isinstance(data, str) else data
    assert isinstance(rows, list)
    return rows


def test_deployment_flag_dispatches_without_a_served_record_and_refuses_another_session(
    serving: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--deployment``: the work-pool path (prefect.yaml, no serve.py) names the deployments on the API."""
    other = tmp_path / "other"
    save_demo_session(other, rounds=0, feed=tmp_path / "feed.json")
    assert main(["recheck", "--session", str(other), "--deployment"]) == 1
    err = capsys.readouterr().err
    assert "contextmesh-plan/plan" in err and str(serving.directory) in err and str(other) in err
    assert main(["recheck", "--session", str(serving.directory), "--deployment", "--json", "--wait", "120"]) == 0
    done = loads(capsys.readouterr().out)
    assert done["dispatched"]["deployment"] == "contextmesh-recheck/recheck"
    assert done["dispatched"]["state"] in {"COMPLETED", "CANCELLED"}  # CANCEL_NEW when a scheduled one runs


_IMPORTS_PREFECT = (
    "import sys; from contextmesh.cli import main; status = main(sys.argv[1:]); "
    "print('imported prefect: ' + str(any(m.split('.')[0] == 'prefect' for m in sys.modules)), file=sys.stderr); "
    "sys.exit(status)"
)


def test_a_dispatched_resume_goes_over_plain_http_and_imports_no_prefect(
    serving: Served, disproof: dict[str, Any]
) -> None:
    """``contextmesh resume`` on a served session, in a fresh process: the flow run is made under ADR
    0006's key with the resume's tags and awaited over plain HTTP (plain_api), and the command never
    imports Prefect (issue 20). The repair and resume above take the same path in this process."""
    args = ["resume", "--session", str(serving.directory), "--feed", str(serving.feed), "--json", "--wait", "120"]
    env = {**os.environ, "CONTEXTMESH_HOME": str(serving.home)}
    env.pop("CONTEXTMESH_DISPATCH", None)
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS_PREFECT, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "imported prefect: False" in done.stderr
    dispatched = loads(done.stdout)["dispatched"]
    assert dispatched["state"] == "COMPLETED" and dispatched["finished"] is True
    run = flow_run(serving.api, dispatched["flow_run_id"])
    assert run["state_type"] == "COMPLETED"
    assert run["parameters"]["mode"] == "resume" and run["parameters"]["feed"] == str(serving.feed.resolve())
    assert {f"cm.session:{serving.session_id}", "cm.trigger:cli"} <= set(run["tags"])
    assert run["idempotency_key"].startswith(f"contextmesh-resume|{serving.session_id}|")

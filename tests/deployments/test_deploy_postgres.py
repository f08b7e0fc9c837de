"""The deployments end to end on a team-server shape: Prefect on PostgreSQL, a separate process worker.

The deployments come from ``deployments/prefect.yaml`` (``prefect deploy --all``), every flow run is
picked up by ``prefect worker start --pool contextmesh --type process`` and runs in a flow-run process
of its own; the test drives them through Prefect's API (``run_deployment``) and reads everything back
from the REST API: an advisory published to the feed; the recheck deployment run → COMPLETED, and
the resume it started (mode=resume, its idempotency key) whose round table lists the stale tasks as
blocked; the repair deployment; the plan deployment in resume mode running exactly the stale
closure with the rest ``Cached``; the ledger verifying, its run ids Prefect's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from typing import Any

import pytest
from deploy_helpers import ROOT, flow_run, post, table_rows, task_runs, timed, wait_flow_runs, wait_state

from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS
from contextmesh.demo.execute import REPAIR_GROUND
from contextmesh.demo.saved import open_demo_session
from contextmesh.orchestration.announce import announcements
from contextmesh.orchestration.resume import idempotency_key
from contextmesh.session.commit import latest_generation

pytestmark = pytest.mark.integration

PLAN_DEPLOYMENT, RECHECK_DEPLOYMENT, REPAIR_DEPLOYMENT = (
    "contextmesh-plan/plan",
    "contextmesh-recheck/recheck",
    "contextmesh-repair/repair",
)
STALE = {"hashing", "routes", "rate_limit"}


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "contextmesh", *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def _run(name: str, parameters: dict[str, Any], *, timeout: float = 150.0) -> str:
    """Start a flow run of deployment ``name`` and wait (bounded) for it; its id."""
    from prefect.client.schemas.objects import FlowRun
    from prefect.deployments import run_deployment

    run = run_deployment(name, parameters=parameters, timeout=timeout, poll_interval=1, as_subflow=False)
    assert isinstance(run, FlowRun)
    return str(run.id)


def test_prefect_yaml_deploys_three_deployments_on_the_process_pool(deployed: dict[str, Any], demo: Any) -> None:
    assert set(deployed) == {"plan", "recheck", "repair"}
    for found in deployed.values():
        assert found["work_pool_name"] == "contextmesh"
        assert found["parameters"]["session_dir"] == str(demo.directory)
        assert found["pull_steps"] == [
            {"prefect.deployments.steps.set_working_directory": {"directory": str(ROOT.resolve())}}
        ]
    assert deployed["plan"]["entrypoint"] == "flows/plan_flow.py:plan" and deployed["plan"]["schedules"] == []
    recheck = deployed["recheck"]
    assert recheck["entrypoint"] == "flows/recheck_flow.py:recheck"
    assert recheck["parameters"]["resume_deployment"] == PLAN_DEPLOYMENT
    ((schedule),) = recheck["schedules"]
    assert schedule["schedule"]["interval"] == 600 and schedule["active"]
    assert recheck["global_concurrency_limit"]["limit"] == 1
    assert recheck["concurrency_options"] == {"collision_strategy": "CANCEL_NEW", "grace_period_seconds": None}
    assert deployed["repair"]["entrypoint"] == "flows/repair_flow.py:repair"


def test_recheck_resume_repair_resume_on_postgres_through_a_process_worker(
    prefect_api: str, deployed: dict[str, Any], worker: Any, demo: Any
) -> None:
    session_dir = str(demo.directory)
    session_id = open_demo_session(demo.directory, feed=demo.feed).session_id
    _cli("demo", "advisory", "publish", "argon2-cffi", ADVISORY_TEXT, "--feed", str(demo.feed))

    # The recheck deployment: its flow run completes and starts the resume itself.
    with timed("recheck run"):
        recheck_id = _run(RECHECK_DEPLOYMENT, {"session_dir": session_dir})
    recheck = flow_run(prefect_api, recheck_id)
    assert recheck["state_type"] == "COMPLETED", recheck["state"]
    assert recheck["name"] == "secure-authentication · round 2 · recheck"
    audits = task_runs(prefect_api, recheck_id, 5)
    assert {r["name"]: r["state_name"] for r in audits}["hashing · audit"] == "Disproved"

    # The resume the recheck started: plan deployment, mode=resume, under the idempotency key.
    plan_id = deployed["plan"]["id"]
    body = {"flow_runs": {"deployment_id": {"any_": [plan_id]}, "tags": {"all_": ["cm.trigger:recheck"]}}}
    with timed("resume started by the recheck"):
        (resume,) = wait_flow_runs(prefect_api, body, 1, timeout=30)
        resume = wait_state(prefect_api, resume["id"], {"COMPLETED", "FAILED", "CRASHED"}, timeout=150)
    assert resume["state_type"] == "COMPLETED", resume["state"]
    assert resume["parameters"] == {"session_dir": session_dir, "mode": "resume"}
    # Made by the recheck: created while it ran, under the key of its disproof (the ledger entry's
    # digest, the stale set, attempt 0).
    assert _at(recheck["start_time"]) <= _at(resume["created"]) <= _at(recheck["end_time"])
    after_recheck = open_demo_session(demo.directory, feed=demo.feed)
    assert after_recheck.runner is not None
    (disproof,) = announcements(after_recheck.runner.ledger, session_id)
    assert resume["idempotency_key"] == idempotency_key(session_id, disproof.entry.digest, sorted(STALE), 0)
    assert resume["idempotency_key"].startswith(f"contextmesh-resume|{session_id}|")
    assert f"cm.session:{session_id}" in resume["tags"]
    assert resume["name"] == "secure-authentication · round 3"
    rows = {row["task"]: row for row in table_rows(prefect_api, "cm-round-3", resume["id"])}
    assert {name for name, row in rows.items() if row["outcome"] == "blocked"} == STALE
    assert all(rows[name]["task run"] == "none" and rows[name]["reason"] for name in STALE)
    blocked_round = task_runs(prefect_api, resume["id"], 2)
    assert {r["name"] for r in blocked_round} == {"schema · cached", "tokens · cached"}

    # The repair deployment: hashing onto bcrypt and new ground.
    repair_parameters = {
        "session_dir": session_dir,
        "task": "hashing",
        "worker_key": DEFAULT_KEYS["bcrypt"],
        "assumes": REPAIR_GROUND,
    }
    with timed("repair run"):
        repair_id = _run(REPAIR_DEPLOYMENT, repair_parameters)
    assert flow_run(prefect_api, repair_id)["state_type"] == "COMPLETED"

    # The plan deployment in resume mode: exactly the stale closure runs, the rest shows Cached.
    with timed("resume run"):
        final_id = _run(PLAN_DEPLOYMENT, {"session_dir": session_dir, "mode": "resume"})
    final = flow_run(prefect_api, final_id)
    assert final["state_type"] == "COMPLETED", final["state"]
    assert final["name"] == "secure-authentication · round 4"
    runs = task_runs(prefect_api, final_id, 8)
    by_name = {r["name"]: r for r in runs}
    assert set(by_name) == STALE | {f"{t} · audit" for t in STALE} | {"schema · cached", "tokens · cached"}
    for name in STALE:
        assert (by_name[name]["state_type"], by_name[name]["state_name"]) == ("COMPLETED", "Completed")
        assert "cm.role:worker" in by_name[name]["tags"]
    assert f"cm.worker:{DEFAULT_KEYS['bcrypt']}" in by_name["hashing"]["tags"]
    for name in ("schema · cached", "tokens · cached"):
        assert (by_name[name]["state_type"], by_name[name]["state_name"]) == ("COMPLETED", "Cached")
    final_rows = {row["task"]: row["outcome"] for row in table_rows(prefect_api, "cm-round-4", final_id)}
    assert final_rows == {"schema": "cached", "tokens": "cached"} | dict.fromkeys(STALE, "executed")

    # The ledger verifies (CLI and the independent verifier), and every run id in it is Prefect's.
    _cli("session", "verify", session_dir, "--feed", str(demo.feed))
    manifest = json.loads((demo.directory / f"session-{latest_generation(demo.directory):06d}.json").read_text())
    ledger_file = demo.directory / manifest["runledger"]["name"]
    verifier = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "verify_runledger.py"),
            str(ledger_file),
            "--expect-head",
            manifest["ledger_head"],
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert verifier.returncode == 0, verifier.stdout + verifier.stderr
    session = open_demo_session(demo.directory, feed=demo.feed)
    assert session.runner is not None and session.runner.ledger.verify()
    assert session.runner.states() == dict.fromkeys(["schema", "hashing", "tokens", "routes", "rate_limit"], "done")
    refs = [entry.run for entry in session.runner.ledger.entries if entry.run is not None]
    assert refs, "the deployed rounds recorded no run ids"
    flow_ids = sorted({str(ref["flow_run_id"]) for ref in refs})
    found_flows = post(prefect_api, "/flow_runs/filter", {"flow_runs": {"id": {"any_": flow_ids}}, "limit": 200})
    assert {r["id"] for r in found_flows} == set(flow_ids)
    assert set(flow_ids) <= {recheck_id, resume["id"], repair_id, final_id}
    assert {recheck_id, final_id} <= set(flow_ids)
    task_ids = sorted({str(ref["task_run_id"]) for ref in refs if ref["task_run_id"] is not None})
    found_tasks = post(prefect_api, "/task_runs/filter", {"task_runs": {"id": {"any_": task_ids}}, "limit": 200})
    assert {r["id"] for r in found_tasks} == set(task_ids)
    owner = {r["id"]: r["flow_run_id"] for r in found_tasks}
    for ref in refs:
        if ref["task_run_id"] is not None:
            assert owner[str(ref["task_run_id"])] == str(ref["flow_run_id"])

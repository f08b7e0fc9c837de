"""``contextmesh serve`` reacts: evidence or a changed world starts a recheck at once, run in the serving process.

One project made by ``contextmesh init``, served by ``contextmesh serve`` with a recheck interval of
an hour — so within these tests only a trigger can explain a recheck (ADR 0017). Read back through
Prefect's REST API:

* evidence submitted through MCP (the official SDK client, ``contextmesh-mcp --project``) starts a
  recheck of the project's recheck deployment, tagged ``cm.trigger:evidence``, that completes;
* ``contextmesh evidence add`` on the served project names the recheck it started (its flow-run URL);
* an edit to ``world.json`` starts a recheck that disproves the ground and starts the resume, and
  both run in the serving process (Prefect's runner opens no flow-run process), each ended run one
  line of ``serve``'s output with its state name and page.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from orch_helpers import flow_run, post
from project_helpers import Served, cm, deployments, flow_runs, init_project, project_env, serve, stop, wait_for

from contextmesh.core.canonical import loads

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HOUR = 3600


@pytest.fixture(scope="module")
def served(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], Served]]:
    where = tmp_path_factory.mktemp("reacting")
    env = project_env(prefect_api, where / "home")
    root = init_project(env, where, "weekly-report", HOUR)
    assert cm(env, "run", "--project", str(root))["report"]["executed"] == ["load", "summarise", "publish"]
    one = serve(env, root)
    try:
        react = Path(env["CONTEXTMESH_HOME"]) / "served" / "react" / f"{one.session_id}.json"
        wait_for("serve's reactor", react.exists, timeout=120)
        yield env, one
    finally:
        stop(one)
    assert not react.exists(), "serve removes its reactions file when it stops"


def _recheck_id(api: str, served: Served) -> str:
    return str(deployments(api)[f"contextmesh-recheck/{served.name}"]["id"])


def _ended_after(api: str, deployment: str, since: float, tag: str) -> list[dict[str, Any]]:
    runs = flow_runs(api, [deployment], flow_runs={"tags": {"all_": [tag]}})
    return [
        run
        for run in runs
        if datetime.fromisoformat(run["created"]).timestamp() >= since - 1
        and run["state_type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")
    ]


def _by_run(runs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return {kind: {"flow_run_id": {"any_": [r["id"] for r in runs]}}}


def _every_run_logged(api: str, runs: list[dict[str, Any]]) -> bool:
    """Whether each run wrote a log line yet (Prefect ships run logs in batches, a moment late)."""
    found = post(api, "/logs/filter", {**_by_run(runs, "logs"), "limit": 200})
    return {str(entry["flow_run_id"]) for entry in found} >= {run["id"] for run in runs}


def _log_saying(one: Served, *lines: str) -> str:
    """serve's log once it holds every one of ``lines``: it prints a run's line after the run has
    ended in Prefect's API, so a reader that saw the end may be a moment ahead of the line."""
    deadline = time.monotonic() + 30
    while True:
        log = one.log.read_text()
        missing = [line for line in lines if line not in log]
        if not missing:
            return log
        assert time.monotonic() < deadline, f"serve's log never said {missing}:\n{log}"
        time.sleep(0.2)


def test_evidence_through_mcp_starts_a_recheck_without_waiting_for_the_interval(
    served: tuple[dict[str, str], Served], prefect_api: str
) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    env, one = served
    recheck = _recheck_id(prefect_api, one)
    schedules = deployments(prefect_api)[f"contextmesh-recheck/{one.name}"]["schedules"]
    # The hourly recheck and the full one every ten intervals (ADR 0019): neither is due in this test.
    assert sorted(s["schedule"]["interval"] for s in schedules) == [float(HOUR), float(10 * HOUR)]
    minimal = {k: env[k] for k in ("PATH", "HOME", "CONTEXTMESH_HOME", "PREFECT_API_URL") if k in env}
    server = StdioServerParameters(
        command=str(Path(sys.executable).parent / "contextmesh-mcp"),
        args=["--project", str(one.root)],
        env=minimal,
    )
    since = time.time()

    async def submit() -> dict[str, Any]:
        async with Client(server, read_timeout_seconds=120) as client:
            result = await client.call_tool(
                "mesh_submit_evidence",
                {"text": "The orders export was re-run on Monday with every region", "origin": "mail:data/7"},
            )
            assert not result.is_error, result.content
            assert result.structured_content is not None
            return result.structured_content

    submitted = anyio.run(submit)
    assert submitted["created"] and submitted["committed"]
    (run,) = wait_for(
        "the recheck the evidence starts",
        lambda: _ended_after(prefect_api, recheck, since, "cm.trigger:evidence"),
        timeout=120,
        every=0.5,
    )
    assert run["state_type"] == "COMPLETED" and run["state_name"] == "Completed", run["state"]
    assert run["auto_scheduled"] is False, "created by the trigger, not by the hourly schedule"
    assert "every ground stands" in run["state"]["message"]
    log = _log_saying(one, f"recheck started (new evidence {submitted['evidence_id']})", "recheck Completed · ")
    assert f"/runs/flow-run/{run['id']}" in log


def test_evidence_add_names_the_recheck_serve_started(served: tuple[dict[str, str], Served], prefect_api: str) -> None:
    env, one = served
    added = cm(
        env, "evidence", "add", "Regions are unchanged this week", "--source", "mail:data/8", "--project", str(one.root)
    )
    after = added["next"]
    assert after["served"] is True and after["flow_run_id"], after
    assert after["text"] == f"a recheck started now under serve (pid {one.process.pid}): {after['url']}"
    run = wait_for(
        "the named recheck to end",
        lambda: next(
            (
                r
                for r in flow_runs(prefect_api, [_recheck_id(prefect_api, one)])
                if r["id"] == after["flow_run_id"] and r["end_time"]
            ),
            None,
        ),
        timeout=120,
        every=0.5,
    )
    assert "cm.trigger:evidence" in run["tags"] and run["state_type"] == "COMPLETED"


def test_a_changed_world_is_disproved_and_resumed_in_the_serving_process(
    served: tuple[dict[str, str], Served], prefect_api: str
) -> None:
    env, one = served
    plan = str(deployments(prefect_api)[f"contextmesh-plan/{one.name}"]["id"])
    since = time.time()
    world = one.root / "world.json"
    world.write_text(world.read_text().replace('"EUR"', '"USD"'))
    (resume,) = wait_for(
        "the resume the disproof starts",
        lambda: _ended_after(prefect_api, plan, since, "cm.trigger:recheck"),
        timeout=180,
        every=0.5,
    )
    assert resume["parameters"]["mode"] == "resume" and resume["state_name"] == "Blocked", resume["state"]
    (recheck,) = _ended_after(prefect_api, _recheck_id(prefect_api, one), since, "cm.trigger:change")
    assert recheck["state_name"] == "Disproved" and "prices are in euros" in recheck["state"]["message"]
    log = _log_saying(one, "recheck started (world.json changed)", "disproof · ", "resume Blocked · ")
    assert f"/runs/flow-run/{recheck['id']}" in log and f"/runs/flow-run/{resume['id']}" in log
    assert "Opening process" not in log, "every run ran in the serving process, none in a runner subprocess"
    shown = cm(env, "session", "show", "--project", str(one.root))
    assert shown["plan"]["states"] == {"load": "done", "summarise": "stale", "publish": "stale"}
    # Repair and resume, then the why on every run of this user's project (issue 20's acceptance
    # for a project, as tests/orchestration/test_runs_explain.py holds it for the demo).
    at = ("--project", str(one.root))
    worker = ("--worker-key", "report.summarise.usd.v1", "--assumes", "prices are in US dollars")
    cm(env, "repair", "summarise", *worker, *at, "--wait", "240")
    resumed = cm(env, "resume", *at, "--wait", "240")
    final = flow_run(prefect_api, resumed["dispatched"]["flow_run_id"])
    assert final["state_name"] == "Completed" and "prices are in euros" in final["state"]["message"], final["state"]
    assert "resume started: " in recheck["state"]["message"] and resume["id"] in recheck["state"]["message"]
    runs = [recheck, resume, final]
    for run in runs:
        assert flow_run(prefect_api, run["id"])["state"]["message"], f"flow run {run['id']} ended with no message"
    wait_for("a log line from every run", lambda: _every_run_logged(prefect_api, runs), timeout=30, every=0.5)
    tables = post(prefect_api, "/artifacts/filter", {**_by_run([final], "artifacts"), "limit": 10})
    (rows,) = [loads(t["data"]) if isinstance(t["data"], str) else t["data"] for t in tables if t["type"] == "table"]
    executed = {row["task"]: row["reason"] for row in rows if row["outcome"] == "executed"}
    assert set(executed) == {"summarise", "publish"} and all(executed.values()), rows
    assert executed["summarise"].startswith("repaired onto report.summarise.usd.v1"), executed


def test_rechecks_due_while_one_runs_are_skipped_at_once_and_an_asked_one_waits_its_turn(
    prefect_api: str, tmp_path: Path
) -> None:
    """A 1 s schedule keeps a recheck running nearly all the time: a scheduled one that comes due
    meanwhile is ``Skipped`` before anything claims it (never ``Cancelled``, not even for a moment),
    and ``contextmesh recheck`` asked for meanwhile is not refused: it runs when the slot frees."""
    env = project_env(prefect_api, tmp_path / "home")
    root = init_project(env, tmp_path, "busy-report", 1)
    cm(env, "run", "--project", str(root))
    one = serve(env, root)
    try:
        recheck = _recheck_id(prefect_api, one)
        seen: dict[str, set[str]] = {}

        def watch() -> bool:
            for run in flow_runs(prefect_api, [recheck]):
                seen.setdefault(run["id"], set()).add(run["state_name"])
            return sum("Skipped" in names for names in seen.values()) >= 2

        wait_for("two scheduled rechecks skipped", watch, timeout=180, every=0.2)
        asked = cm(env, "recheck", "--project", str(root), "--wait", "120")
        watch()
    finally:
        stop(one)
    assert asked["dispatched"]["state"] == "COMPLETED", asked["dispatched"]
    assert asked["dispatched"]["state_name"] == "Completed", "it ran: not turned away, not skipped"
    assert not [run for run, names in seen.items() if "Cancelled" in names], seen
    skipped = [r for r in flow_runs(prefect_api, [recheck]) if r["state_name"] == "Skipped"]
    assert all(r["auto_scheduled"] and r["state"]["message"].startswith("skipped: it came due while") for r in skipped)


def test_a_round_run_from_the_cli_reports_its_state_name(prefect_api: str, tmp_path: Path) -> None:
    """With nothing serving the project, a recheck and a resume run from the CLI's process report the
    outcome's name (ADR 0016), not only the type every handled outcome shares."""
    env = project_env(prefect_api, tmp_path / "home")
    root = init_project(env, tmp_path, "solo-report", HOUR)
    assert cm(env, "run", "--project", str(root))["flow_run"]["state_name"] == "Completed"
    world = root / "world.json"
    world.write_text(world.read_text().replace('"EUR"', '"USD"'))
    rechecked = cm(env, "recheck", "--project", str(root))["flow_run"]
    assert (rechecked["state"], rechecked["state_name"]) == ("COMPLETED", "Disproved")
    resumed = cm(env, "resume", "--project", str(root))["flow_run"]
    assert (resumed["state"], resumed["state_name"]) == ("COMPLETED", "Blocked")

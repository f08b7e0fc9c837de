"""``contextmesh rerun-from`` on a real Prefect server (SQLite): the preview, then exactly it (ADR 0019 §7).

The bundled demo is served by ``deployments/serve.py`` and a user's project (``contextmesh init``)
by ``contextmesh serve``; on each, ``rerun-from TASK --dry-run`` predicts the closure and changes
nothing, and ``rerun-from TASK`` dispatches a plan-deployment flow run in mode ``rerun`` whose task
runs, read back from Prefect's REST API, are the predicted tasks executed and every other task
``Cached``. The ledger records who asked. An unserved project runs it as one flow run here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from orch_helpers import by_role, flow_run, post, task_runs
from project_helpers import cm, init_project, project_env, serve, stop

from contextmesh.cli import main
from contextmesh.core.canonical import loads
from contextmesh.demo.saved import open_demo_session, save_demo_session
from contextmesh.orchestration import served_record as served

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
_SERVE = [sys.executable, str(ROOT / "deployments" / "serve.py")]
DEMO_TASKS = {"schema", "hashing", "tokens", "routes", "rate_limit"}


def _wait_for(what: str, probe: Any, timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def _shown_in_prefect(api: str, flow_run_id: str, predicted: list[str], every: set[str]) -> None:
    """The flow run's task runs: each predicted task executed (worker), every other one Cached."""
    untouched = every - set(predicted)
    audits = len(by_role(post(api, "/task_runs/filter", _of(flow_run_id)), "audit"))
    runs = task_runs(api, flow_run_id, len(predicted) + len(untouched) + audits)
    assert {name: r["state_name"] for name, r in by_role(runs, "worker").items()} == dict.fromkeys(
        predicted, "Completed"
    )
    cached = {r["name"]: r["state_name"] for r in by_role(runs, "cached").values()}
    assert cached == {f"{name} · cached": "Cached" for name in untouched}


def _of(flow_run_id: str) -> dict[str, Any]:
    return {"flow_runs": {"id": {"any_": [flow_run_id]}}, "limit": 200}


def test_rerun_from_on_the_served_demo_reruns_exactly_the_predicted_closure(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, feed, directory = tmp_path / "home", tmp_path / "feed.json", tmp_path / "session"
    session = save_demo_session(directory, rounds=0, feed=feed)
    env = {**os.environ, "PREFECT_API_URL": prefect_api, "CONTEXTMESH_HOME": str(home)}
    env["PREFECT_RUNNER_POLL_FREQUENCY"] = "2"
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*_SERVE, "--session", str(directory), "--feed", str(feed), "--interval", "3600"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    monkeypatch.setenv("CONTEXTMESH_HOME", str(home))
    try:
        _wait_for("the served record", lambda: served.find(session.session_id, directory, home), timeout=90)
        common = ["--session", str(directory), "--feed", str(feed), "--json"]
        before = (directory / "MANIFEST.json").read_bytes() if (directory / "MANIFEST.json").exists() else None
        assert main(["rerun-from", "hashing", "--dry-run", *common]) == 0, capsys.readouterr().err
        preview = loads(capsys.readouterr().out)["preview"]
        assert preview["closure"] == ["hashing", "routes", "rate_limit"] and preview["predicted"] == preview["closure"]
        if before is not None:
            assert (directory / "MANIFEST.json").read_bytes() == before, "a dry run changes nothing"

        assert main(["rerun-from", "hashing", *common, "--wait", "240"]) == 0, capsys.readouterr().err
        done = loads(capsys.readouterr().out)
        assert done["executor"] == "deployment" and done["exact"] is True
        assert done["dispatched"]["deployment"] == "contextmesh-plan/plan"
        assert done["report"]["executed"] == preview["predicted"]
        run = flow_run(prefect_api, done["dispatched"]["flow_run_id"])
        assert run["parameters"]["mode"] == "rerun" and run["parameters"]["rerun_from"] == "hashing"
        assert run["parameters"]["asked_by"].startswith("cli:")
        _shown_in_prefect(prefect_api, run["id"], preview["predicted"], DEMO_TASKS)
        ledger = open_demo_session(directory, feed=feed).runner
        assert ledger is not None
        asked = [e for e in ledger.ledger.entries if e.event == "requested"]
        assert [e.task for e in asked] == preview["closure"]
        assert asked[0].detail.startswith(f"rerun from hashing, asked by {run['parameters']['asked_by']}")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def test_rerun_from_on_a_project_served_and_unserved(prefect_api: str, tmp_path: Path) -> None:
    env = project_env(prefect_api, tmp_path / "home")
    root = init_project(env, tmp_path, "west-sales", 3600)
    assert cm(env, "run", "--project", str(root))["report"]["executed"] == ["load", "summarise", "publish"]
    every = {"load", "summarise", "publish"}

    here = cm(env, "rerun-from", "publish", "--project", str(root))  # nothing serves it: a flow run here
    assert here["executor"] == "prefect" and here["exact"] is True and here["report"]["executed"] == ["publish"]
    _shown_in_prefect(prefect_api, here["flow_run"]["flow_run_id"], ["publish"], every)

    refused = subprocess.run(
        [sys.executable, "-m", "contextmesh", "rerun-from", "publsh", "--project", str(root), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode != 0 and refused.stderr.count("\n") == 1  # one line, no traceback
    error = loads(refused.stdout)["error"]
    assert error["path"] == "TASK" and "'publsh'" in error["message"] and "look close: publish" in error["message"]

    handle = serve(env, root)
    try:
        preview = cm(env, "rerun-from", "summarise", "--dry-run", "--project", str(root))["preview"]
        assert preview["predicted"] == ["summarise", "publish"]
        done = cm(env, "rerun-from", "summarise", "--project", str(root), "--wait", "240")
        assert done["executor"] == "deployment" and done["exact"] is True
        assert done["dispatched"]["deployment"] == f"contextmesh-plan/{handle.name}"
        assert done["report"]["executed"] == ["summarise", "publish"] and done["report"]["cached"] == ["load"]
        _shown_in_prefect(prefect_api, done["dispatched"]["flow_run_id"], preview["predicted"], every)

        full = cm(env, "recheck", "--full", "--project", str(root), "--wait", "240")  # dispatched with full=true
        assert full["dispatched"]["deployment"] == f"contextmesh-recheck/{handle.name}"
        assert flow_run(prefect_api, full["dispatched"]["flow_run_id"])["parameters"]["full"] is True
        assert full["report"]["audited"] == ["load", "summarise", "publish"] and full["report"]["skipped"] == []

        by_agent = _mcp_rerun(env, root, "publish")  # the MCP write, dispatched to the same deployment
        assert (
            by_agent["exact"] is True and by_agent["executed"] == ["publish"] and by_agent["asked_by"] == "mcp:client"
        )
        run = by_agent["flow_run"]
        assert run["completed"] and flow_run(prefect_api, run["id"])["parameters"]["rerun_from"] == "publish"
        _shown_in_prefect(prefect_api, run["id"], ["publish"], every)
        assert cm(env, "session", "verify", "--project", str(root))["ledger_verified"] is True
    finally:
        stop(handle)


def _mcp_rerun(env: dict[str, str], root: Path, task: str) -> dict[str, Any]:
    """``mesh_rerun_from`` over stdio from ``contextmesh-mcp --project``, with serve's environment only."""
    import anyio
    from mcp import Client, StdioServerParameters

    minimal = {k: env[k] for k in ("PATH", "HOME", "CONTEXTMESH_HOME", "PREFECT_API_URL") if k in env}
    server = StdioServerParameters(
        command=str(Path(sys.executable).parent / "contextmesh-mcp"),
        args=["--project", str(root), "--dispatch-wait", "240"],
        env=minimal,
    )

    async def talk() -> dict[str, Any]:
        async with Client(server, read_timeout_seconds=300) as client:
            result = await client.call_tool("mesh_rerun_from", {"task": task})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            return result.structured_content

    found: dict[str, Any] = anyio.run(talk)
    return found

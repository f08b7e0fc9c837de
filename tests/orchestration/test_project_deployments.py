"""A user's projects deployed without copying a file, on one real Prefect server (SQLite).

Two projects made by ``contextmesh init`` are served at once by ``contextmesh serve`` (one process
each, their own ``flows/``, recheck every 4 s): their deployments are named after project and
session and do not clash. The world of one changes; its scheduled recheck disproves the ground
and starts one resume; ``contextmesh repair`` and ``resume`` dispatch to its deployments, and
Prefect's API shows the resume executed exactly the stale closure with the rest ``Cached``. The
other project is untouched. ``contextmesh deploy`` registers a third on a process work pool, and a
recheck dispatched with ``--deployment`` is run by a real ``prefect worker``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from orch_helpers import by_role, pause_schedules, task_runs
from project_helpers import (
    Served,
    cm,
    deployments,
    flow_runs,
    httpx_get,
    init_project,
    project_env,
    serve,
    stop,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


# First, before the module's two served projects exist: pytest keeps a module fixture to the module's
# end, their rechecks run every 4 s all that time, and this test uses neither. Run beside them it cost
# 91 CPU-s, first 36 (side by side at load 14; the module 209 -> 133 CPU-s; ADR 0040).
def test_deploy_registers_on_a_process_pool_and_a_worker_runs_a_dispatched_recheck(
    prefect_api: str, tmp_path: Path
) -> None:
    env = project_env(prefect_api, tmp_path / "home")
    root = init_project(env, tmp_path, "east-sales", 3600)
    toml = root / "contextmesh.toml"
    toml.write_text(toml.read_text().replace('work_pool = "contextmesh"', 'work_pool = "east-pool"'))
    cm(env, "run", "--project", str(root))
    deployed = cm(env, "deploy", "--project", str(root))
    assert deployed["work_pool"] == "east-pool" and len(deployed["deployment_ids"]) == 3
    name = deployed["deployments"]["recheck"]
    recheck = deployments(prefect_api)[name]
    assert recheck["work_pool_name"] == "east-pool"
    assert min(s["schedule"]["interval"] for s in recheck["schedules"]) == 3600.0
    pool = httpx_get(prefect_api, "/work_pools/east-pool")
    assert pool["type"] == "process"
    worker_log = tmp_path / "worker.log"
    with worker_log.open("wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "prefect", "worker", "start", "--pool", "east-pool", "--type", "process"],
            env={**env, "PREFECT_WORKER_QUERY_SECONDS": "2"},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        done = cm(env, "recheck", "--project", str(root), "--deployment", "--wait", "240", timeout=400)
        dispatched = done["dispatched"]
        assert dispatched["deployment"] == name, dispatched
        # CANCELLED only when the schedule's first run was running at that moment (CANCEL_NEW): then
        # that one, run by the same worker, is the recheck that completed.
        assert dispatched["state"] in {"COMPLETED", "CANCELLED"}, worker_log.read_text()[-3000:]
        if dispatched["state"] == "COMPLETED":
            assert done["report"]["audited"] == ["load", "summarise", "publish"]
        completed = {"flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}}
        ran = wait_for("a recheck the worker ran", lambda: flow_runs(prefect_api, [recheck["id"]], **completed))
        assert all(r["work_pool_name"] == "east-pool" for r in ran)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(10)


@pytest.fixture(scope="module")
def two(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], Served, Served]]:
    where = tmp_path_factory.mktemp("projects")
    env = project_env(prefect_api, where / "home")
    served: list[Served] = []
    try:
        for name in ("north-sales", "south-sales"):
            root = init_project(env, where, name, 4)
            first = cm(env, "run", "--project", str(root))  # round 1, a flow run started here
            assert first["report"]["executed"] == ["load", "summarise", "publish"]
            served.append(serve(env, root))
        yield env, served[0], served[1]
    finally:
        for each in served:
            stop(each)
    for each in served:
        assert not (where / "home" / "served" / f"{each.session_id}.json").exists(), "serve removes its record"


def test_two_projects_on_one_server_have_their_own_deployments(
    two: tuple[dict[str, str], Served, Served], prefect_api: str
) -> None:
    _, north, south = two
    assert north.name == f"north-sales-{north.session_id.replace('-', '')[:8]}"
    assert south.name == f"south-sales-{south.session_id.replace('-', '')[:8]}"
    found = deployments(prefect_api)
    for served in (north, south):
        for flow in ("contextmesh-plan", "contextmesh-recheck", "contextmesh-repair"):
            deployment = found[f"{flow}/{served.name}"]
            assert deployment["parameters"]["session_dir"] == str(served.root / ".contextmesh" / "session")
            assert f"cm.project:{served.root.name}" in deployment["tags"]
        recheck = found[f"contextmesh-recheck/{served.name}"]
        # A watching recheck every interval, a full one every ten (ADR 0019).
        schedules = {s["slug"]: s for s in recheck["schedules"]}
        assert {slug: s["schedule"]["interval"] for slug, s in schedules.items()} == {
            "recheck": 4.0,
            "full-recheck": 40.0,
        }
        assert schedules["full-recheck"]["parameters"] == {"full": True} and not schedules["recheck"]["parameters"]
        assert recheck["parameters"]["resume_deployment"] == f"contextmesh-plan/{served.name}"


def test_a_scheduled_recheck_disproves_one_project_and_repair_and_resume_rerun_only_its_stale_closure(
    two: tuple[dict[str, str], Served, Served], prefect_api: str
) -> None:
    env, north, south = two
    world = north.root / "world.json"
    world.write_text(world.read_text().replace('"EUR"', '"USD"'))
    cm(
        env,
        "evidence",
        "add",
        "Finance quotes every price in USD from June",
        "--source",
        "mail:finance/1",
        "--project",
        str(north.root),
    )
    found = deployments(prefect_api)
    north_plan = found[f"contextmesh-plan/{north.name}"]["id"]

    def resumed_by_recheck() -> list[dict[str, Any]]:
        tagged = {"flow_runs": {"tags": {"all_": ["cm.trigger:recheck"]}, "state": {"type": {"any_": ["COMPLETED"]}}}}
        return flow_runs(prefect_api, [north_plan], **tagged)

    (blocked_resume,) = wait_for("the resume the disproof starts", resumed_by_recheck, timeout=240)
    assert blocked_resume["parameters"]["mode"] == "resume"
    shown = cm(env, "session", "show", "--project", str(north.root))
    assert shown["plan"]["states"] == {"load": "done", "summarise": "stale", "publish": "stale"}

    repaired = cm(
        env,
        "repair",
        "summarise",
        "--worker-key",
        "report.summarise.usd.v1",
        "--assumes",
        "prices are in US dollars",
        "--project",
        str(north.root),
        "--wait",
        "240",
    )
    assert repaired["executor"] == "deployment"
    assert repaired["dispatched"]["deployment"] == f"contextmesh-repair/{north.name}"
    resumed = cm(env, "resume", "--project", str(north.root), "--wait", "240")
    assert resumed["dispatched"]["deployment"] == f"contextmesh-plan/{north.name}"
    assert resumed["report"]["executed"] == ["summarise", "publish"] and resumed["report"]["cached"] == ["load"]
    runs = task_runs(prefect_api, resumed["dispatched"]["flow_run_id"], 5)
    assert set(by_role(runs, "worker")) == {"summarise", "publish"}
    assert {r["name"]: r["state_name"] for r in by_role(runs, "cached").values()} == {"load · cached": "Cached"}
    assert cm(env, "session", "verify", "--project", str(north.root))["ledger_verified"] is True

    untouched = cm(env, "session", "show", "--project", str(south.root))
    assert untouched["plan"]["states"] == {"load": "done", "summarise": "done", "publish": "done"}
    south_plan = deployments(prefect_api)[f"contextmesh-plan/{south.name}"]["id"]
    assert flow_runs(prefect_api, [south_plan]) == [], "the other project's plan deployment never ran"
    # The module's last reader of a scheduled recheck: both projects' 4 s schedules stop here, not at
    # the module's end (ADR 0040); the agent's resume below is asked for by name.
    found = deployments(prefect_api)
    for served in (north, south):
        pause_schedules(prefect_api, found[f"contextmesh-recheck/{served.name}"]["id"])


def test_an_agent_on_a_served_project_has_its_resume_run_by_the_projects_deployment(
    two: tuple[dict[str, str], Served, Served], prefect_api: str
) -> None:
    """``contextmesh-mcp --project`` with only the environment ``serve`` runs with: no launcher."""
    import anyio
    from mcp import Client, StdioServerParameters

    env, north, _ = two
    minimal = {k: env[k] for k in ("PATH", "HOME", "CONTEXTMESH_HOME", "PREFECT_API_URL") if k in env}
    server = StdioServerParameters(
        command=str(Path(sys.executable).parent / "contextmesh-mcp"),
        args=["--project", str(north.root), "--dispatch-wait", "240"],
        env=minimal,
    )

    async def talk() -> dict[str, Any]:
        async with Client(server, read_timeout_seconds=300) as client:
            listed = await client.list_tools()
            assert listed.meta is not None and listed.meta["notAnswering"] == []
            result = await client.call_tool("mesh_resume", {})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            return result.structured_content

    resumed = anyio.run(talk)
    run = resumed["flow_run"]
    assert run["completed"] and run["state"] == "Completed"
    plan_id = deployments(prefect_api)[f"contextmesh-plan/{north.name}"]["id"]
    assert httpx_get(prefect_api, f"/flow_runs/{run['id']}")["deployment_id"] == plan_id

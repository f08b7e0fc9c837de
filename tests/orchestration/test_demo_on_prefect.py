"""``contextmesh demo`` — the README's first command — ends with the execution half on a real Prefect server.

Run as a person runs it: a fresh process, no ``PREFECT_API_URL``, an empty ``$CONTEXTMESH_HOME``.
The command starts the managed local server and keeps it, runs the plan's walk-through as flow runs
and ends with where to open them in the UI. The test reads those runs back through that server's
API, from the addresses the command printed: round 1 executed every task, the recheck's auditor
disproved the Argon2 ground, round 3 executed exactly the stale closure (``hashing``, ``routes``,
``rate_limit``, ``hashing`` on the repaired key) with ``schema`` and ``tokens`` ``Cached``. The
server is still running when the command has ended (the links open), and is stopped after.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from contextmesh.demo.auth import DEFAULT_KEYS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TASKS = {"schema", "hashing", "tokens", "routes", "rate_limit"}
TERMINAL = ["COMPLETED", "FAILED", "CRASHED", "CANCELLED"]
FLOW_RUN = re.compile(r"^  (?P<what>.+?): (?P<url>http://\S+/runs/flow-run/(?P<id>[0-9a-f-]{36}))$", re.M)


def _cli(home: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CONTEXTMESH_"))}
    env.update(CONTEXTMESH_HOME=str(home))
    argv = [sys.executable, "-m", "contextmesh", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[subprocess.CompletedProcess[str], str]]:
    home = tmp_path_factory.mktemp("demo-home")
    try:
        done = _cli(home, "demo", "--rounds", "0")
        status = _cli(home, "server", "status", timeout=60)
        yield done, status.stdout
    finally:
        _cli(home, "server", "stop", timeout=120)
    assert "not running" in _cli(home, "server", "status", timeout=60).stdout


def _post(api: str, path: str, body: dict[str, Any]) -> Any:
    response = httpx.post(f"{api}{path}", json=body, timeout=10.0)
    response.raise_for_status()
    return response.json()


def _task_runs(api: str, flow_run_id: str) -> list[dict[str, Any]]:
    body = {"flow_runs": {"id": {"any_": [flow_run_id]}}, "task_runs": {"state": {"type": {"any_": TERMINAL}}}}
    return list(_post(api, "/task_runs/filter", {**body, "limit": 200}))


def _by_role(runs: list[dict[str, Any]], role: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in runs if f"cm.role:{role}" in r["tags"]}


def test_the_demo_ends_with_the_execution_half_and_where_to_open_it(
    demo_run: tuple[subprocess.CompletedProcess[str], str],
) -> None:
    done, status = demo_run
    assert done.returncode == 0, done.stderr
    out = done.stdout
    knowledge, _, execution = out.partition("THE EXECUTION HALF")
    assert "INVALIDATED (" in knowledge and "HEALTH " in knowledge  # the knowledge half comes first, whole
    assert "run on Prefect" in execution and "OPEN THE RUNS IN THE PREFECT UI" in execution
    assert "kept it running" in execution and "contextmesh server stop" in execution
    assert status.startswith("running: UI http://127.0.0.1:")  # the links still open after the command


def test_the_runs_it_points_at_are_the_plan_broken_repaired_and_rerun(
    demo_run: tuple[subprocess.CompletedProcess[str], str],
) -> None:
    done, _ = demo_run
    opened = done.stdout.split("OPEN THE RUNS IN THE PREFECT UI", 1)[1]
    runs = {m["what"]: m for m in FLOW_RUN.finditer(opened)}
    assert set(runs) == {
        "round 1, every task executed",
        "the recheck: the auditor's disproof",
        "round 3: the stale closure re-ran, the rest Cached",
    }
    first, recheck, third = runs.values()
    api = first["url"].split("/runs/", 1)[0] + "/api"
    assert re.search(rf"^  all runs: {re.escape(api[: -len('/api')])}/runs$", opened, re.M)

    first_runs = _task_runs(api, first["id"])
    assert set(_by_role(first_runs, "worker")) == TASKS
    assert {r["state_name"] for r in _by_role(first_runs, "worker").values()} == {"Completed"}

    audits = _by_role(_task_runs(api, recheck["id"]), "audit")
    assert audits["hashing · audit"]["state_name"] == "Disproved"
    flow = httpx.get(f"{api}/flow_runs/{recheck['id']}", timeout=10.0).json()
    assert flow["state"]["name"] == "Disproved" and "argon2-cffi has no open advisory" in flow["state"]["message"]

    third_runs = _task_runs(api, third["id"])
    workers, cached = _by_role(third_runs, "worker"), _by_role(third_runs, "cached")
    assert set(workers) == {"hashing", "routes", "rate_limit"}
    assert {r["state_name"] for r in workers.values()} == {"Completed"}
    assert f"cm.worker:{DEFAULT_KEYS['bcrypt']}" in workers["hashing"]["tags"]  # repaired by key
    assert set(cached) == {"schema · cached", "tokens · cached"}
    assert {r["state_name"] for r in cached.values()} == {"Cached"}

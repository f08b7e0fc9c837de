"""A run the serving process claimed that stops moving is failed, its slot freed, and the next run proceeds.

Issue 20: a recheck run in ``serve``'s process stayed ``Running`` for minutes and held its
deployment's one slot. On a real Prefect server, a real :class:`Reactor` claims runs of a deployment
limited to one at a time (as the recheck deployment is) and runs them with Prefect's flow engine in
this process. The flow stands in for any hang: with ``hang="before"`` it blocks before its first
step (it never calls :func:`body_started`, as an engine stuck before the body would not), with
``hang="after"`` it blocks after it. Read back through Prefect's REST API:

* the first is failed ``Stuck`` once it is past ``start`` seconds, with a message naming the bound
  and its setting, and serve says so in one line with its URL;
* the deployment's slot is free again (no active slot), and the next due run completes;
* the second is failed once it is past ``finish`` seconds;
* when the stuck threads wake, the one failed before its first step does not run its body and stays
  ``Stuck``; the one failed after it finishes, and its own final state stands.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy

from contextmesh.orchestration.reactor import Reactor
from contextmesh.orchestration.run_watch import START_SETTING, RunWatch, body_started

pytestmark = [pytest.mark.integration, pytest.mark.slow]

START, FINISH = 3.0, 8.0
WAKE = threading.Event()


@flow(name="cm-test-stuck-run", persist_result=False)
def maybe_stuck(hang: str = "no") -> str:
    """``before``: block before the first step; ``after``: block after it; else run at once."""
    if hang == "before":
        WAKE.wait(120)  # an engine stuck before the body; when it wakes, the body begins
    body_started()
    if hang == "after":
        WAKE.wait(120)
        return "woke after its first step"
    return "ran"


def _run(api: str, flow_run_id: uuid.UUID) -> dict[str, Any]:
    reply = httpx.get(f"{api}/flow_runs/{flow_run_id}", timeout=10)
    reply.raise_for_status()
    return dict(reply.json())


def _ended(api: str, flow_run_id: uuid.UUID, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        run = _run(api, flow_run_id)
        if run["state_type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") or time.monotonic() > deadline:
            return run
        time.sleep(0.2)


def _woke(api: str, flow_run_id: uuid.UUID, *, name: str = "Stuck", timeout: float = 30.0) -> dict[str, Any]:
    """The run once its woken thread has had its say (its state history grows past the forced Stuck)."""
    deadline = time.monotonic() + timeout
    while True:
        reply = httpx.get(f"{api}/flow_run_states/", params={"flow_run_id": str(flow_run_id)}, timeout=10)
        names = [state["name"] for state in sorted(reply.json(), key=lambda state: state["timestamp"])]
        if (names.count("Stuck") >= 2 or names[-1] == name != "Stuck") or time.monotonic() > deadline:
            return _run(api, flow_run_id)
        time.sleep(0.2)


def _active_slots(api: str, deployment: uuid.UUID) -> int:
    reply = httpx.get(f"{api}/deployments/{deployment}", timeout=10)
    reply.raise_for_status()
    limit = reply.json()["global_concurrency_limit"]
    assert limit is not None and limit["limit"] == 1, "the deployment runs one at a time, like the recheck"
    return int(limit["active_slots"])


@pytest.fixture
def reactor(prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    one_at_a_time = ConcurrencyLimitConfig(limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW)
    deployment = maybe_stuck.to_deployment(name=f"stuck-{uuid.uuid4().hex[:8]}", concurrency_limit=one_at_a_time)
    deployment_id = deployment.apply()
    assert isinstance(deployment_id, uuid.UUID)
    lines: list[str] = []
    (tmp_path / "session").mkdir()
    made = Reactor(
        session_id="stuck-runs",
        session_dir=tmp_path / "session",
        api_url=prefect_api,
        flows={"recheck": maybe_stuck},
        deployments={"recheck": deployment_id},
        files=[],
        interval=3600,
        say=lines.append,
        tick=0.2,
        warm=True,
        react=False,
        watch=RunWatch(START, FINISH),
    )
    made.start()
    try:
        yield made, deployment_id, lines
    finally:
        WAKE.set()
        made.stop(timeout=30)


def test_a_stuck_in_process_run_is_failed_its_slot_freed_and_the_next_run_proceeds(
    prefect_api: str, reactor: Any
) -> None:
    made, deployment, lines = reactor
    with get_client(sync_client=True) as client:
        before = client.create_flow_run_from_deployment(deployment, parameters={"hang": "before"}).id
        stuck = _ended(prefect_api, before)
        assert stuck["state_type"] == "FAILED" and stuck["state_name"] == "Stuck", stuck["state"]
        message = stuck["state"]["message"]
        assert f"did not reach its first step within {START:g} s ({START_SETTING})" in message
        assert "deployment slot freed" in message and "kill -USR1" in message
        assert any(str(before) in line and "stuck:" in line for line in lines), lines
        assert _active_slots(prefect_api, deployment) == 0, "the stuck run's slot was freed"

        after_it = client.create_flow_run_from_deployment(deployment, parameters={"hang": "no"}).id
        proceeded = _ended(prefect_api, after_it)
        assert proceeded["state_type"] == "COMPLETED", proceeded["state"]

        late = client.create_flow_run_from_deployment(deployment, parameters={"hang": "after"}).id
        unfinished = _ended(prefect_api, late)
        assert unfinished["state_name"] == "Stuck", unfinished["state"]
        assert f"did not finish within {FINISH:g} s" in unfinished["state"]["message"]
        assert _active_slots(prefect_api, deployment) == 0
        assert made.watch.active() == 0, "a run given up no longer counts against serve's limit"

    WAKE.set()  # the stuck threads wake and their engines finish
    woke = _woke(prefect_api, before)
    assert woke["state_name"] == "Stuck" and "did not run the body" in woke["state"]["message"], woke["state"]
    assert any(str(before) in line and "its body did not run" in line for line in lines), lines
    finished = _woke(prefect_api, late, name="Completed")
    assert finished["state_type"] == "COMPLETED", "a run failed after its first step says what it did when it ends"

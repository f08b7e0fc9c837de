"""SIGKILL of the flow-run process mid-round: the session stays put and a new resume attempt finishes.

A plan of three tasks (``tests/deployments/gated_plan.py``: first → slow → last) is deployed to the
``contextmesh`` work pool; its resume is started the way a recheck or ``contextmesh resume`` starts
one (:class:`~contextmesh.orchestration.resume.ResumeTrigger`, idempotency key attempt 0). While
``slow`` runs, the test kills the flow-run process with SIGKILL — the process the worker started
for that flow run, found by ``PREFECT__FLOW_RUN_ID`` in its environment and ``prefect.engine`` in
its command line. Then: the directory is still at its previous generation, the session's writer
lock is free, the session loads whole, Prefect marks the run ``Crashed`` (the worker sees the
process die), the same trigger moves to attempt 1 and that new flow run completes the round.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from deploy_helpers import (
    NOTES,
    ROOT,
    TERMINAL,
    alive,
    engine_process,
    flow_run,
    flow_run_processes,
    get,
    task_runs,
    timed,
    wait_state,
)
from gated_plan import PLAN, build_registry, declare
from prefect import flow

from contextmesh.core.graph import ContextGraph
from contextmesh.execution.plan import Plan
from contextmesh.knowledge.resolve import Resolver
from contextmesh.orchestration.deployed import pending_work
from contextmesh.orchestration.flow_bodies import limit_name
from contextmesh.orchestration.resume import ResumeTrigger
from contextmesh.session.commit import latest_generation
from contextmesh.session.lock import WriterLock
from contextmesh.session.session import Session

pytestmark = pytest.mark.integration

GATED = "contextmesh-plan/gated"


@pytest.fixture(scope="module")
def gated(prefect_api: str, worker: Any) -> str:
    """The gated plan deployed to the process pool from this checkout (pull step: the project root)."""
    source = flow.from_source(source=str(ROOT), entrypoint="tests/deployments/gated_plan.py:plan")
    source.deploy(name="gated", work_pool_name="contextmesh", build=False, push=False, print_next_steps=False)
    return GATED


def _wait_started(gate: Path, timeout: float) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(gate.glob("started-*"))
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"the gated task did not start within {timeout:g} s")


def test_sigkill_of_the_flow_run_process_leaves_the_session_and_a_new_attempt_completes_the_round(
    prefect_api: str, worker: Any, gated: str, tmp_path: Path
) -> None:
    registry = build_registry()
    runner = Plan(PLAN, ContextGraph(), registry=registry)
    declare(runner)
    directory = tmp_path / "session"
    session = Session.create(directory, Session(runner.graph, Resolver(), runner=runner, registry=registry))
    before = latest_generation(directory)
    head, pending = pending_work(session)
    assert pending == ["first", "last", "slow"]
    trigger = ResumeTrigger(gated)

    first = trigger(session_id=session.session_id, session_dir=str(directory), ledger_head=head, stale=pending)
    assert first["attempt"] == 0
    started = _wait_started(worker.gate, 150)
    pid = engine_process(first["flow_run_id"])
    assert started.name.endswith(f"-{pid}"), (started.name, flow_run_processes(first["flow_run_id"]))
    running = flow_run(prefect_api, first["flow_run_id"])
    assert running["state_type"] == "RUNNING"
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)

    # The directory is where it was, its lock is free, and it loads whole with nothing run.
    assert latest_generation(directory) == before
    with WriterLock(directory, wait=0.5):
        pass
    reloaded = Session.load(directory, registry=registry)
    assert reloaded.generation == before and reloaded.runner is not None
    assert set(reloaded.runner.states().values()) == {"pending"}

    # Prefect's view of the killed run.
    with timed("killed run marked"):
        crashed = wait_state(prefect_api, first["flow_run_id"], set(TERMINAL), timeout=60)
    NOTES["SIGKILLed flow run"] = f"{crashed['state_type']} / {crashed['state_name']}: {crashed['state']['message']}"
    assert crashed["state_type"] == "CRASHED"
    limit = get(prefect_api, f"/v2/concurrency_limits/{limit_name(session.session_id)}")
    NOTES["session slot right after the kill"] = f"{limit['active_slots']} of {limit['limit']} active"

    # The same trigger moves to the next attempt; that run finds the slot held by a process of this
    # machine that is gone, releases its lease (orchestration/slots.py) and completes the round.
    (worker.gate / "open").touch()
    with timed("new attempt after SIGKILL"):
        second = trigger(session_id=session.session_id, session_dir=str(directory), ledger_head=head, stale=pending)
        assert second["attempt"] == 1 and second["flow_run_id"] != first["flow_run_id"]
        done = wait_state(prefect_api, second["flow_run_id"], set(TERMINAL), timeout=180)
    assert done["state_type"] == "COMPLETED", done["state"]
    assert done["idempotency_key"].endswith("|1")
    finished = Session.load(directory, registry=registry)
    assert finished.generation == before + 1 and finished.runner is not None
    assert finished.runner.states() == {"first": "done", "slow": "done", "last": "done"}
    assert finished.runner.ledger.verify()
    flow_ids = {str(e.run["flow_run_id"]) for e in finished.runner.ledger.entries if e.run is not None}
    assert flow_ids == {second["flow_run_id"]}
    names = {r["name"] for r in task_runs(prefect_api, second["flow_run_id"], 4)}
    assert names == {"first", "first · audit", "slow", "last"}

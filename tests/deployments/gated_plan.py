"""Entrypoint ``tests/deployments/gated_plan.py:plan`` — a plan flow whose one slow worker waits at a gate.

The SIGKILL test deploys it to the ``contextmesh`` work pool; the worker's flow-run process imports
it from the project root (the deployment's pull step sets the working directory there) and builds
the same registry the test built the session with. ``test.gated.v1`` writes
``$CONTEXTMESH_TEST_GATE/started-<attempt>-<pid>`` and then waits (at most two minutes) until
``$CONTEXTMESH_TEST_GATE/open`` exists: the test knows the task is running, kills the process,
opens the gate and resumes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.client.schemas.objects import State

from contextmesh.execution.context import AuditContext, RunContext, Verdict
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.orchestration.flow_bodies import Mode, plan_flow_options, run_plan_round

GATE_ENV = "CONTEXTMESH_TEST_GATE"
PLAN = "gated-plan"


def _quick(ctx: RunContext) -> dict[str, Any]:
    return {"task": ctx.task, "attempt": ctx.attempt}


def _gated(ctx: RunContext) -> dict[str, Any]:
    gate = Path(os.environ[GATE_ENV])
    (gate / f"started-{ctx.attempt}-{os.getpid()}").touch()
    deadline = time.monotonic() + 120.0
    while not (gate / "open").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{gate / 'open'} did not appear within 120 s")
        time.sleep(0.1)
    return {"task": ctx.task, "attempt": ctx.attempt}


def _ok(ctx: AuditContext) -> Verdict:
    return ctx.ok("fine")


def build_registry() -> TaskRegistry:
    """The keys the gated plan names."""
    registry = TaskRegistry()
    registry.register_worker("test.quick.v1", _quick)
    registry.register_worker("test.gated.v1", _gated)
    registry.register_auditor("test.ok.v1", _ok)
    return registry


def declare(runner: Plan) -> None:
    """first → slow → last; ``slow`` waits at the gate."""
    runner.task("first", worker_key="test.quick.v1", auditor_key="test.ok.v1", assumes="the first input arrives")
    runner.task("slow", worker_key="test.gated.v1", needs=["first"], assumes="the slow service answers")
    runner.task("last", worker_key="test.quick.v1", needs=["slow"], assumes="the last step is cheap")


@flow(**plan_flow_options())
def plan(session_dir: str, mode: Mode = "run") -> State[Any]:
    """One round of the gated plan."""
    return run_plan_round(session_dir, mode, build_registry())

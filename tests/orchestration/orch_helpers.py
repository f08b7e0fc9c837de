"""Shared helpers for the orchestration tests: Prefect's REST API read back with httpx, small plans.

Recording is asynchronous (events → the server's task-run recorder), so every read of task runs
polls ``/api/task_runs/count`` until the expected number is there before filtering.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from contextmesh.core.graph import ContextGraph
from contextmesh.execution.context import AuditContext, RunContext, Verdict
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.session import Session

TERMINAL = ["COMPLETED", "FAILED", "CANCELLED", "CRASHED"]


def post(api: str, path: str, body: dict[str, Any]) -> Any:
    response = httpx.post(f"{api}{path}", json=body, timeout=10.0)
    response.raise_for_status()
    return response.json()


def pause_schedules(api: str, deployment_id: str) -> None:
    """Pause a deployment's schedules once no later test of its module needs a scheduled run.

    A served project's recheck every 1-4 s keeps its serve process and the shared server busy for as
    long as the module fixture lives, which is to the module's end (ADR 0040). Prefect deletes the
    deployment's pre-created ``Scheduled`` runs; runs asked for by name (``recheck``, a trigger)
    still run, and ``serve`` pauses the schedules itself when it stops.
    """
    _deployment_action(api, deployment_id, "pause_deployment", None)


def resume_schedules(api: str, deployment_id: str) -> None:
    """Resume a deployment paused by :func:`pause_schedules` for a test that reads a scheduled run.

    Prefect's scheduler service tops a resumed deployment's runs up only on its next loop (a minute
    by default), so the runs a schedule would have pre-created are asked for now, from this moment.
    """
    _deployment_action(api, deployment_id, "resume_deployment", None)
    _deployment_action(api, deployment_id, "schedule", {})


def _deployment_action(api: str, deployment_id: str, action: str, body: dict[str, Any] | None) -> None:
    """POST one of these idempotent actions, retrying a 503 as Prefect's own client does: the server
    answers a retryable database error (SQLite's "database is locked") with 503, seen under load."""
    for attempt in range(1, 7):
        response = httpx.post(f"{api}/deployments/{deployment_id}/{action}", json=body, timeout=10.0)
        if response.status_code != 503 or attempt == 6:
            response.raise_for_status()
            return
        time.sleep(attempt)


def task_runs(api: str, flow_run_id: str, expected: int, *, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Every terminal task run of a flow run, once the server has recorded ``expected`` of them."""
    body = {"flow_runs": {"id": {"any_": [flow_run_id]}}, "task_runs": {"state": {"type": {"any_": TERMINAL}}}}
    deadline = time.monotonic() + timeout
    count = 0
    while time.monotonic() < deadline:
        count = post(api, "/task_runs/count", body)
        if count >= expected:
            break
        time.sleep(0.1)
    assert count == expected, f"flow run {flow_run_id}: {count} terminal task runs recorded, expected {expected}"
    return list(post(api, "/task_runs/filter", {**body, "sort": "EXPECTED_START_TIME_ASC", "limit": 200}))


def flow_run(api: str, flow_run_id: str) -> dict[str, Any]:
    response = httpx.get(f"{api}/flow_runs/{flow_run_id}", timeout=10.0)
    response.raise_for_status()
    return dict(response.json())


def by_role(runs: list[dict[str, Any]], role: str) -> dict[str, dict[str, Any]]:
    """Task runs tagged ``cm.role:<role>``, by name."""
    return {r["name"]: r for r in runs if f"cm.role:{role}" in r["tags"]}


def artifacts(api: str, key: str) -> list[dict[str, Any]]:
    return list(post(api, "/artifacts/filter", {"artifacts": {"key": {"any_": [key]}}}))


def events(api: str, event_id: str | None = None, *, name: str = "contextmesh.assumption.disproved") -> list[Any]:
    """Events by name (and id), polled briefly: the event persister writes asynchronously."""
    body: dict[str, Any] = {"filter": {"event": {"name": [name]}}, "limit": 50}
    if event_id is not None:
        body["filter"]["id"] = {"id": [event_id]}
    found: list[Any] = []
    deadline = time.monotonic() + 15.0
    while time.monotonic() < deadline:
        found = list(post(api, "/events/filter", body)["events"])
        if found:
            return found
        time.sleep(0.2)
    return found


# -- small plans on session directories ----------------------------------------------------------


def keyed_session(
    directory: Path,
    registry: TaskRegistry,
    declare: Callable[[Plan], None],
    *,
    plan: str = "orchestration-test",
) -> Session:
    """A new session holding a plan declared by ``declare`` (nothing run yet)."""
    runner = Plan(plan, ContextGraph(), registry=registry)
    declare(runner)
    return Session.create(directory, Session(runner.graph, Resolver(), runner=runner, registry=registry))


def ok_auditor(ctx: AuditContext) -> Verdict:
    return ctx.ok("fine")


def sleeper(seconds: float, *, fail_first_of: frozenset[str] = frozenset()) -> Callable[[RunContext], dict[str, Any]]:
    """A worker that sleeps; on its first attempt it raises for the tasks named in ``fail_first_of``."""

    def work(ctx: RunContext) -> dict[str, Any]:
        time.sleep(seconds)
        if ctx.attempt == 1 and ctx.task in fail_first_of:
            raise RuntimeError(f"{ctx.task} fails its first attempt")
        return {"task": ctx.task, "attempt": ctx.attempt}

    return work

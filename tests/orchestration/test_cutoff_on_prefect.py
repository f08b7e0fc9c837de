"""Early cutoff and tracked reads through the Prefect flows, read back from a real server's API.

A revalidated task gets the ``<task> · cached`` run in state ``Cached`` whose message is its
revalidation reason; a fact read through ``ctx.read`` inside a Prefect worker task run comes back
to the plan, and a change to it makes the next round re-run exactly its reader.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from contextmesh import ContextGraph, Plan, TaskRegistry
from contextmesh.belief.evidence import submit
from contextmesh.execution.context import AuditContext, Verdict
from contextmesh.knowledge.resolve import Resolver
from contextmesh.orchestration.flow_bodies import make_plan_flow, make_recheck_flow
from contextmesh.session.session import Session

pytestmark = pytest.mark.integration

TERMINAL = ["COMPLETED", "FAILED", "CANCELLED", "CRASHED"]


def _task_runs(api: str, flow_run_id: str, expected: int) -> list[dict[str, Any]]:
    body = {"flow_runs": {"id": {"any_": [flow_run_id]}}, "task_runs": {"state": {"type": {"any_": TERMINAL}}}}
    deadline, count = time.monotonic() + 30, 0
    while time.monotonic() < deadline:
        count = httpx.post(f"{api}/task_runs/count", json=body, timeout=10).json()
        if count >= expected:
            break
        time.sleep(0.1)
    assert count == expected, f"{count} terminal task runs recorded, expected {expected}"
    return list(httpx.post(f"{api}/task_runs/filter", json={**body, "limit": 200}, timeout=10).json())


def _registry(world: dict[str, Any]) -> TaskRegistry:
    registry = TaskRegistry()
    registry.register_fact("market", lambda name: world[name])
    registry.register_worker("gate.v1", lambda ctx: {"open": True})
    registry.register_worker("price.v1", lambda ctx: {"usd": ctx.read("market", "usd")})
    registry.register_worker("label.v1", lambda ctx: {"text": f"gate {ctx.inputs['gate']['open']}"})

    def advisories(ctx: AuditContext) -> Verdict:
        for view in ctx.evidence:
            if view.metadata.get("kind") == "advisory" and ctx.assumption == "the gate library is safe":
                return ctx.disproved(view.text, cite=view.id)
        return ctx.ok("no advisory")

    registry.register_auditor("advisory.v1", advisories)
    return registry


def _declare(runner: Plan) -> None:
    runner.task("gate", worker_key="gate.v1", auditor_key="advisory.v1", assumes="the gate library is safe")
    runner.task("label", worker_key="label.v1", needs=["gate"], assumes="labels follow the gate")
    runner.task("price", worker_key="price.v1", assumes="the market feed is current")


def test_a_revalidated_task_is_cached_in_prefect_with_its_reason_and_a_read_fact_reruns_its_reader(
    prefect_api: str, tmp_path: Path
) -> None:
    world: dict[str, Any] = {"usd": 100}
    registry = _registry(world)
    directory = tmp_path / "session"
    runner = Plan("cutoff-on-prefect", ContextGraph(), registry=registry)
    _declare(runner)
    Session.create(directory, Session(runner.graph, Resolver(), runner=runner, registry=registry))
    plan_flow, recheck_flow = make_plan_flow(registry, max_workers=2), make_recheck_flow(registry, max_workers=2)
    first = plan_flow(session_dir=str(directory), mode="run")
    assert sorted(first["executed"]) == ["gate", "label", "price"]

    def advisory(s: Session) -> None:
        assert s.runner is not None
        submit(s.graph, "gate library advisory", s.runner.source_id, metadata={"kind": "advisory"})

    Session.load(directory, registry=registry).apply(advisory)
    checked = recheck_flow(session_dir=str(directory))
    assert checked["report"]["stale"] == ["gate", "label"]

    def repair(s: Session) -> None:
        assert s.runner is not None
        s.runner.repair("gate", assumes="the gate library is patched", worker_key="gate.v1")

    Session.load(directory, registry=registry).apply(repair)
    resumed = plan_flow(session_dir=str(directory), mode="resume")
    assert resumed["executed"] == ["gate"] and resumed["report"]["revalidated"].keys() == {"label"}
    runs = {r["name"]: r for r in _task_runs(prefect_api, resumed["flow_run_id"], resumed["task_runs"])}
    cached = runs["label · cached"]["state"]
    assert cached["name"] == "Cached"
    assert cached["message"].startswith("label: revalidated — output unchanged: gate now ")
    assert "after 'the gate library is safe' was disproved" in cached["message"]
    assert runs["price · cached"]["state"]["message"] == "price: untouched, its previous result stands"
    assert "label" not in runs  # no worker run for the revalidated task

    world["usd"] = 140
    moved = plan_flow(session_dir=str(directory), mode="resume")
    assert moved["executed"] == ["price"]
    session = Session.load(directory, registry=registry)
    assert session.runner is not None and session.runner.tasks["price"].output == {"usd": 140}
    assert [e.event for e in session.runner.ledger.entries if e.round == moved["round"]][:2] == [
        "fact_changed",
        "invalidated",
    ]
    assert session.runner.ledger.verify()

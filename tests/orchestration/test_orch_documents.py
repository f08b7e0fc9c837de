"""A revised document on Prefect: the resume flow run re-runs exactly the tasks resting on the claim it removed.

A keyed plan whose tasks rest on documents of the container-terminal corpus, on its own session,
run on the real server of ``conftest.py`` and read back through Prefect's REST API.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from orch_helpers import by_role, sleeper, task_runs

from contextmesh.belief.ingestion import ingest
from contextmesh.core.graph import ContextGraph
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.revisions import DocumentRef
from contextmesh.orchestration.flow_bodies import make_plan_flow
from contextmesh.session.ingest_session import ingest_into
from contextmesh.session.session import Session

pytestmark = pytest.mark.integration

TERMINAL = Path(__file__).resolve().parents[1] / "data" / "documents" / "terminal" / "docs"
CAPACITY = "plans/capacity-2026.md"
WORKER = "test.quick.v1"


def _declare(runner: Plan) -> None:
    runner.task("capacity", worker_key=WORKER, assumes="the plan's rates hold", rests_on=[CAPACITY])
    runner.task(
        "overflow",
        worker_key=WORKER,
        assumes="the overflow berth is free",
        rests_on=[DocumentRef("design/berth-window-service.md", quote="one window per vessel call")],
        about=["Berth 4"],
    )
    runner.task("report", worker_key=WORKER, needs=["capacity"], assumes="the report is read")
    runner.task("wind", worker_key=WORKER, assumes="the runbook is followed", rests_on=["runbooks/crane-wind-stop.md"])


def test_a_revision_makes_exactly_its_closure_stale_and_resume_reruns_only_it(prefect_api: str, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    shutil.copytree(TERMINAL, folder)
    registry = TaskRegistry()
    registry.register_worker(WORKER, sleeper(0.0))
    runner = Plan("documents-test", ContextGraph(), registry=registry)
    resolver = Resolver()
    ingest(runner.graph, resolver, [folder])
    _declare(runner)
    directory = tmp_path / "session"
    Session.create(directory, Session(runner.graph, resolver, runner=runner, registry=registry))
    plan_flow = make_plan_flow(registry, max_workers=2)
    first = plan_flow(session_dir=str(directory), mode="run")
    assert first["executed"] == ["capacity", "overflow", "wind", "report"]

    plan = folder / CAPACITY
    plan.write_text(plan.read_text().replace("sustain 58 moves", "sustain 61 moves"))
    session = Session.load(directory, registry=registry)
    result, stale = ingest_into(session, [folder])
    assert stale == ["capacity", "report"]
    chain = result.fallout.why(session.runner.tasks["capacity"].decision_id or "")  # type: ignore[union-attr]
    assert chain.startswith(f"revision 2 of {CAPACITY} -supersedes-> claim(STS-04 and STS-07 together sustain 58")
    session.commit()

    second = plan_flow(session_dir=str(directory), mode="resume")
    assert second["executed"] == ["capacity", "report"]
    workers = by_role(task_runs(prefect_api, second["flow_run_id"], second["task_runs"]), "worker")
    assert set(workers) == {"capacity", "report"}
    assert all(run["state_type"] == "COMPLETED" for run in workers.values())
    states = Session.load(directory, registry=registry).runner.states()  # type: ignore[union-attr]
    assert states == {"capacity": "done", "overflow": "done", "report": "done", "wind": "done"}

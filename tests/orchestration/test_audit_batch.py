"""A large plan's recheck judges its auditors that declare nothing in one task run (ADR 0033).

A 60-task plan (over the 50-task line under which every run is tagged) on the real server of
``conftest.py``: 57 tasks audited by an auditor that declares nothing, one of which it disproves and
one on which it raises; three by an auditor that declares what it watches. The recheck flow run
must hold exactly one batch run for the 57 plus one run per declaring auditor whose slice changed;
every auditor must still get its own outcome and ledger entries, the batch run a log line per
auditor, and the batch run must end ``Disproved`` naming the task, read back through Prefect's API.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from orch_helpers import keyed_session, post, task_runs

from contextmesh.execution.context import AuditContext, RunContext, Verdict
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.orchestration.audit_batch import BATCH_RUN_NAME
from contextmesh.orchestration.flow_bodies import make_plan_flow, make_recheck_flow
from contextmesh.session.session import Session

pytestmark = pytest.mark.integration

BLIND, WATCHING = "test.blind.v1", "test.watching.v1"
TASKS = 60
FALSE: set[str] = set()  # statements the auditors now find false
VERSIONS: dict[str, int] = {}  # what the watching auditor fingerprints


def _work(ctx: RunContext) -> dict[str, Any]:
    return {"task": ctx.task}


def _blind(ctx: AuditContext) -> Verdict:
    if ctx.task == "t07" and FALSE:
        raise RuntimeError("the feed is down")
    return ctx.disproved(f"'{ctx.assumption}' no longer holds") if ctx.assumption in FALSE else ctx.ok("holds")


def _statement(index: int) -> str:
    return f"source {index:02d} is fresh"


def _registry() -> TaskRegistry:
    registry = TaskRegistry()
    registry.register_worker("test.work.v1", _work)
    registry.register_auditor(BLIND, _blind)
    registry.register_auditor(WATCHING, _blind, watches=lambda ctx: f"v{VERSIONS.get(ctx.assumption, 0)}")
    return registry


def _declare(runner: Plan) -> None:
    for index in range(TASKS):
        auditor = WATCHING if index >= TASKS - 3 else BLIND
        runner.task(f"t{index:02d}", worker_key="test.work.v1", auditor_key=auditor, assumes=_statement(index))


def _logs(api: str, task_run_id: str, expected: int) -> list[str]:
    body = {"logs": {"task_run_id": {"any_": [task_run_id]}}, "limit": 200}
    found: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [row["message"] for row in post(api, "/logs/filter", body)]
        if len(found) >= expected:
            break
        time.sleep(0.2)
    return found


def test_undeclared_auditors_share_one_run_and_keep_their_own_verdicts(prefect_api: str, tmp_path: Path) -> None:
    registry = _registry()
    directory = tmp_path / "session"
    keyed_session(directory, registry, _declare)
    FALSE.clear()
    VERSIONS.clear()
    first = make_plan_flow(registry, max_workers=4)(session_dir=str(directory), mode="run")
    assert len(first["executed"]) == TASKS
    FALSE.update({_statement(3), _statement(TASKS - 1)})  # one blind auditor and one watching one disprove
    VERSIONS[_statement(TASKS - 1)] = 1  # the watching auditor's slice changed; the other two did not
    checked = make_recheck_flow(registry, max_workers=4)(session_dir=str(directory))
    report = checked["report"]
    assert sorted(report["skipped"]) == ["t57", "t58"]
    assert checked["task_runs"] == 2  # the batch of 57, and the one watching auditor whose slice changed
    runs = {r["name"]: r for r in task_runs(prefect_api, checked["flow_run_id"], 2)}
    batch_name = BATCH_RUN_NAME.format(count=TASKS - 3)
    assert set(runs) == {batch_name, "t59 · audit"}
    batch = runs[batch_name]
    assert batch["state_name"] == "Disproved" and "disproved 1: t03" in batch["state"]["message"]
    assert "error 1: t07" in batch["state"]["message"]
    assert runs["t59 · audit"]["state_name"] == "Disproved"
    # Every auditor's own outcome: two disproofs, one error, the rest ok.
    assert len(report["invalidations"]) == 2 and sorted(checked["stale"]) == ["t03", "t59"]
    assert list(report["audit_errors"]) == ["t07"] and "the feed is down" in report["audit_errors"]["t07"]
    assert len(report["audited"]) == TASKS - 3 - 1 + 1  # the batch (less the error) and t59
    session = Session.load(directory, registry=registry)
    assert session.runner is not None
    ledger = [e for e in session.runner.ledger.entries if e.round == checked["round"]]
    disproved = {e.task: e.run for e in ledger if e.event == "disproved"}
    assert disproved["t03"] == {"flow_run_id": checked["flow_run_id"], "task_run_id": batch["id"]}
    assert disproved["t59"] == {"flow_run_id": checked["flow_run_id"], "task_run_id": runs["t59 · audit"]["id"]}
    errors = [e for e in ledger if e.event == "audit_error"]
    assert [e.task for e in errors] == ["t07"] and errors[0].run is not None
    assert errors[0].run["task_run_id"] == batch["id"]
    # One log line per auditor in the batch run, then the summary.
    lines = _logs(prefect_api, batch["id"], TASKS - 3 + 1)
    for index in range(TASKS - 3):
        assert sum(f" of t{index:02d}" in line for line in lines) == 1, f"t{index:02d} has no line of its own"
    assert any(line.startswith("judged 57 auditors declaring nothing") for line in lines)

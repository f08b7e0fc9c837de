"""Plan flow runs on one session: the concurrency limit serialises them; a timed-out worker fails its task.

Both plans are small keyed plans on their own session directories, run on the real server of
``conftest.py`` and read back through Prefect's REST API.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from orch_helpers import by_role, flow_run, keyed_session, ok_auditor, post, sleeper, task_runs

from contextmesh.execution.context import RunContext
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.orchestration.flow_bodies import limit_name, make_plan_flow
from contextmesh.session.session import Session

pytestmark = pytest.mark.integration


def _span(runs: list[dict[str, Any]]) -> tuple[datetime, datetime]:
    starts = [datetime.fromisoformat(r["start_time"]) for r in runs if r["start_time"]]
    ends = [datetime.fromisoformat(r["end_time"]) for r in runs if r["end_time"]]
    return min(starts), max(ends)


def test_two_plan_flow_runs_on_one_session_never_overlap_and_both_commit(prefect_api: str, tmp_path: Path) -> None:
    registry = TaskRegistry()
    registry.register_worker("test.sleep.v1", sleeper(0.4, fail_first_of=frozenset({"b"})))
    registry.register_auditor("test.ok.v1", ok_auditor)

    def declare(runner: Plan) -> None:
        runner.task("a", worker_key="test.sleep.v1", auditor_key="test.ok.v1", assumes="a's inputs arrive daily")
        runner.task("b", worker_key="test.sleep.v1", needs=["a"], assumes="b's schema is stable")
        runner.task("c", worker_key="test.sleep.v1", assumes="c's service is up")

    directory = tmp_path / "session"
    created = keyed_session(directory, registry, declare)
    plan_flow = make_plan_flow(registry, max_workers=4)
    results: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            results.append(plan_flow(session_dir=str(directory), mode="run"))
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(one,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == [] and len(results) == 2
    first, second = sorted(results, key=lambda r: r["round"])
    assert (first["round"], second["round"]) == (1, 2)
    assert first["executed"] == ["a", "c"] and list(first["failed"]) == ["b"]
    assert second["executed"] == ["b"] and second["cached_runs"] == ["a", "c"]
    assert {first["generation"], second["generation"]} == {2, 3}
    session = Session.load(directory, registry=registry)
    assert session.generation == created.generation + 2 and session.runner is not None
    assert session.runner.states() == {"a": "done", "b": "done", "c": "done"}
    assert session.runner.ledger.verify()
    assert {e.round for e in session.runner.ledger.entries} == {1, 2}
    one_runs = task_runs(prefect_api, first["flow_run_id"], first["task_runs"])
    two_runs = task_runs(prefect_api, second["flow_run_id"], second["task_runs"])
    assert set(by_role(one_runs, "worker")) == {"a", "b", "c"} and set(by_role(two_runs, "worker")) == {"b"}
    (start_1, end_1), (start_2, end_2) = _span(one_runs), _span(two_runs)
    assert end_1 <= start_2 or end_2 <= start_1, "the two rounds' task runs overlapped in time"
    names = {flow_run(prefect_api, r["flow_run_id"])["name"] for r in results}
    assert names == {"orchestration-test · round 1", "orchestration-test · round 2"}
    limit = post(prefect_api, "/v2/concurrency_limits/filter", {"limit": 200})
    mine = [item for item in limit if item["name"] == limit_name(session.session_id)]
    assert len(mine) == 1 and mine[0]["limit"] == 1 and mine[0]["active_slots"] == 0


def test_a_worker_over_its_timeout_fails_its_task_and_the_next_round_retries_it(
    prefect_api: str, tmp_path: Path
) -> None:
    def slow_once(ctx: RunContext) -> dict[str, Any]:
        if ctx.attempt == 1:
            time.sleep(5)
        return {"attempt": ctx.attempt}

    registry = TaskRegistry()
    registry.register_worker("test.slow-once.v1", slow_once, timeout=0.5)
    registry.register_worker("test.quick.v1", sleeper(0.0))

    def declare(runner: Plan) -> None:
        runner.task("quick", worker_key="test.quick.v1", assumes="the quick path is enough")
        runner.task("slow", worker_key="test.slow-once.v1", assumes="the slow service answers in time")

    directory = tmp_path / "session"
    keyed_session(directory, registry, declare)
    plan_flow = make_plan_flow(registry, max_workers=4)
    started = time.monotonic()
    first = plan_flow(session_dir=str(directory), mode="run")
    assert time.monotonic() - started < 4.5, "Prefect's timeout interrupted the worker on time"
    assert first["executed"] == ["quick"]
    assert "ran longer than its 0.5 s timeout" in first["failed"]["slow"]
    runs = by_role(task_runs(prefect_api, first["flow_run_id"], 2), "worker")
    assert (runs["slow"]["state_type"], runs["slow"]["state_name"]) == ("FAILED", "TimedOut")
    assert runs["quick"]["state_type"] == "COMPLETED"
    session = Session.load(directory, registry=registry)
    assert session.runner is not None and session.generation == 2
    (failed,) = [e for e in session.runner.ledger.entries if e.event == "failed"]
    assert failed.task == "slow" and failed.run == {
        "flow_run_id": first["flow_run_id"],
        "task_run_id": runs["slow"]["id"],
    }
    second = plan_flow(session_dir=str(directory), mode="run")
    assert second["executed"] == ["slow"] and second["failed"] == {}
    again = by_role(task_runs(prefect_api, second["flow_run_id"], 2), "worker")
    assert again["slow"]["state_type"] == "COMPLETED"
    assert Session.load(directory, registry=registry).runner.states() == {"quick": "done", "slow": "done"}  # type: ignore[union-attr]


def test_blocked_tasks_get_no_task_run_and_are_listed_with_their_reasons(prefect_api: str, tmp_path: Path) -> None:
    from orch_helpers import artifacts

    from contextmesh.execution.context import AuditContext, Verdict
    from contextmesh.orchestration.flow_bodies import make_recheck_flow

    world = {"down": False}

    def watch(ctx: AuditContext) -> Verdict:
        return ctx.disproved("the upstream API was retired") if world["down"] else ctx.ok("upstream answers")

    registry = TaskRegistry()
    registry.register_worker("test.quick.v1", sleeper(0.0))
    registry.register_auditor("test.watch.v1", watch)

    def declare(runner: Plan) -> None:
        runner.task("fetch", worker_key="test.quick.v1", auditor_key="test.watch.v1", assumes="the upstream API exists")
        runner.task("parse", worker_key="test.quick.v1", needs=["fetch"], assumes="the payload is JSON")
        runner.task("store", worker_key="test.quick.v1", assumes="the bucket is writable")

    directory = tmp_path / "session"
    keyed_session(directory, registry, declare)
    plan_flow = make_plan_flow(registry, max_workers=4)
    plan_flow(session_dir=str(directory), mode="run")
    world["down"] = True
    checked = make_recheck_flow(registry)(session_dir=str(directory))
    assert checked["stale"] == ["fetch", "parse"] and len(checked["announced"]) == 1
    blocked = plan_flow(session_dir=str(directory), mode="run")
    assert set(blocked["blocked"]) == {"fetch", "parse"}
    assert "the upstream API exists" in blocked["blocked"]["fetch"]
    assert blocked["blocked"]["parse"] == "it needs 'fetch', which is blocked"
    assert blocked["executed"] == [] and blocked["cached_runs"] == ["store"]
    runs = task_runs(prefect_api, blocked["flow_run_id"], 1)
    assert [r["name"] for r in runs] == ["store · cached"]
    (table,) = [
        a for a in artifacts(prefect_api, f"cm-round-{blocked['round']}") if a["flow_run_id"] == blocked["flow_run_id"]
    ]
    rows = {row["task"]: row for row in json.loads(table["data"])}
    assert rows["fetch"]["outcome"] == "blocked" and rows["fetch"]["task run"] == "none"
    assert rows["parse"]["reason"] == "it needs 'fetch', which is blocked"

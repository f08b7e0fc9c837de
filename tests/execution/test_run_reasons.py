"""Why a round ran what it ran, read off the ledger: reasons, round and recheck messages, the repair's next step.

The demo plan in memory (no Prefect): round 1 runs everything ("first run"); an advisory makes a
recheck disprove hashing's ground; the resume that follows runs nothing and says what waits for
repair; the repair says to resume; the last resume re-runs the stale closure, hashing "repaired onto"
its new key and the others because the disproved assumption took their decisions down.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from contextmesh.core.graph import ContextGraph
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, PLAN_NAME, declare_plan, publish, register_demo
from contextmesh.execution.plan import Plan
from contextmesh.execution.run_reasons import (
    MESSAGE_LIMIT,
    reason_for,
    recheck_message,
    repair_message,
    round_message,
    round_rows,
)
from contextmesh.execution.task_registry import TaskRegistry

GROUND = "argon2-cffi has no open advisory"
STALE = ["hashing", "routes", "rate_limit"]


def _demo(tmp_path: Path) -> tuple[Plan, Path]:
    feed = tmp_path / "feed.json"
    registry = TaskRegistry()
    register_demo(registry, feed=feed)
    plan = Plan(PLAN_NAME, ContextGraph(), registry=registry)
    declare_plan(plan)
    return plan, feed


@pytest.fixture
def loop(tmp_path: Path) -> dict[str, object]:
    plan, feed = _demo(tmp_path)
    first = plan.run()
    quiet = plan.recheck()
    publish(feed, "argon2-cffi", ADVISORY_TEXT)
    disproving = plan.recheck()
    blocked = plan.run(include_failed=False)
    plan.repair("hashing", assumes="bcrypt has no open advisory", worker_key=DEFAULT_KEYS["bcrypt"])
    repaired = repair_message(plan, "hashing")
    last = plan.run(include_failed=False)
    return {
        "plan": plan,
        "first": first,
        "quiet": quiet,
        "disproving": disproving,
        "blocked": blocked,
        "repaired": repaired,
        "last": last,
    }


def test_the_first_round_says_first_run_for_every_task(loop: dict[str, object]) -> None:
    plan, first = loop["plan"], loop["first"]
    assert isinstance(plan, Plan)
    rows = round_rows(plan, first)  # type: ignore[arg-type]
    found = {row["task"]: (row["outcome"], row["reason"]) for row in rows}
    assert found == dict.fromkeys(plan.tasks, ("executed", "first run"))
    message = round_message(plan, first, "run")  # type: ignore[arg-type]
    assert message.startswith("round 1 (run): ran schema, hashing, tokens, routes, rate_limit; nothing cached")


def test_a_quiet_recheck_says_every_ground_stands(loop: dict[str, object]) -> None:
    message = recheck_message(loop["plan"], loop["quiet"])  # type: ignore[arg-type]
    assert message == "recheck round 2: audited schema, hashing, tokens, routes, rate_limit; every ground stands"


def test_a_disproving_recheck_names_the_assumption_its_evidence_and_what_fell(loop: dict[str, object]) -> None:
    message = recheck_message(loop["plan"], loop["disproving"])  # type: ignore[arg-type]
    assert f"disproved '{GROUND}' (evidence evidence:" in message
    assert f"auditor {DEFAULT_KEYS['advisory_audit']} on hashing" in message
    assert ADVISORY_TEXT in message
    assert message.endswith("3 task(s) stale: hashing, routes, rate_limit")


def test_a_blocked_round_leads_with_what_waits_for_repair_and_why(loop: dict[str, object]) -> None:
    message = round_message(loop["plan"], loop["blocked"], "resume")  # type: ignore[arg-type]
    assert message == (
        f"round 4 (resume): 3 task(s) wait for repair: hashing (its ground '{GROUND}' is rejected), "
        "routes (it needs 'hashing', which is blocked), rate_limit (it needs 'routes', which is blocked); "
        "ran nothing; schema, tokens cached"
    )


def test_the_repair_names_the_replaced_ground_and_the_next_step(loop: dict[str, object]) -> None:
    assert loop["repaired"] == (
        f"repaired hashing onto {DEFAULT_KEYS['bcrypt']}: now assumes 'bcrypt has no open advisory' "
        f"(replaces '{GROUND}'); next: resume — it runs hashing, routes, rate_limit"
    )


def test_the_last_resume_gives_each_executed_task_its_own_reason(loop: dict[str, object]) -> None:
    plan, last = loop["plan"], loop["last"]
    assert isinstance(plan, Plan)
    rows = {row["task"]: row for row in round_rows(plan, last)}  # type: ignore[arg-type]
    assert [t for t, row in rows.items() if row["outcome"] == "executed"] == STALE
    assert rows["hashing"]["reason"].startswith(f"repaired onto {DEFAULT_KEYS['bcrypt']}: now assumes")
    for task in ("routes", "rate_limit"):
        reason = rows[task]["reason"]
        assert reason.startswith(f"'{GROUND}' was disproved (evidence evidence:"), reason
        assert reason.endswith(f"{task} (secure-authentication)"), reason  # its chain ends at its own decision
    assert rows["schema"]["reason"] == rows["tokens"]["reason"] == "untouched, its previous result stands"
    message = round_message(plan, last, "resume")  # type: ignore[arg-type]
    assert message.startswith(f"round 5 (resume): re-ran hashing, routes, rate_limit after '{GROUND}' was disproved")
    assert f"(hashing repaired onto {DEFAULT_KEYS['bcrypt']})" in message
    assert message.endswith("; schema, tokens cached")


def test_a_failed_task_is_retried_with_the_failure_as_its_reason(tmp_path: Path) -> None:
    registry = TaskRegistry()
    calls = {"n": 0}

    def flaky(ctx: object) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("the service was down")
        return "ok"

    registry.register_worker("test.flaky.v1", flaky)
    plan = Plan("flaky", ContextGraph(), registry=registry)
    plan.task("call", worker_key="test.flaky.v1", assumes="the service answers")
    failed = plan.run()
    assert round_message(plan, failed, "run").startswith("round 1 (run): ran nothing; failed: call (")
    again = plan.run()
    assert again.executed == ["call"]
    reason = reason_for(plan, "call", again.round)
    assert reason.kind == "failed" and "the service was down" in reason.text


def test_a_long_message_is_clipped_to_one_screen(tmp_path: Path) -> None:
    registry = TaskRegistry()
    registry.register_worker("test.one.v1", lambda ctx: 1)
    plan = Plan("wide", ContextGraph(), registry=registry)
    for index in range(400):
        plan.task(f"task-{index:03d}-with-a-long-name", worker_key="test.one.v1", assumes=f"input {index} arrives")
    message = round_message(plan, plan.run(), "run")
    assert len(message) <= MESSAGE_LIMIT
    assert "and 392 more" in message

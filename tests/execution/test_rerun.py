"""Rerun from a task (ADR 0019 §7): the preview is the blast radius, and the round runs exactly it."""

from __future__ import annotations

import pytest

from contextmesh.core.graph import ContextGraph
from contextmesh.execution.context import AuditContext, RunContext, Verdict
from contextmesh.execution.plan import Plan
from contextmesh.execution.rerun import RerunError
from contextmesh.execution.run_reasons import round_rows
from contextmesh.execution.snapshot import dump_plan
from contextmesh.execution.task import TaskState
from contextmesh.execution.task_registry import TaskRegistry

#   a ── b ── d
#    └── c    e (independent)   f needs d and e
SHAPE = {"a": (), "b": ("a",), "c": ("a",), "d": ("b",), "e": (), "f": ("d", "e")}


def _plan() -> tuple[Plan, list[str]]:
    ran: list[str] = []
    registry = TaskRegistry()

    @registry.worker("w.v1")
    def work(ctx: RunContext) -> dict[str, object]:
        ran.append(ctx.task)
        return {"task": ctx.task, "inputs": sorted(ctx.inputs)}

    @registry.auditor("ok.v1")
    def audit(ctx: AuditContext) -> Verdict:
        return ctx.ok()

    plan = Plan("rerun", ContextGraph(), registry=registry)
    for name, needs in SHAPE.items():
        plan.task(name, worker_key="w.v1", auditor_key="ok.v1", assumes=f"{name} holds", needs=needs)
    plan.run()
    ran.clear()
    return plan, ran


def test_the_preview_is_the_task_and_everything_downstream_and_changes_nothing() -> None:
    plan, ran = _plan()
    before = (dump_plan(plan), plan.ledger.head)
    preview = plan.rerun_preview("b")
    assert preview.closure == ["b", "d", "f"] and preview.also == [] and preview.blocked == {}
    assert preview.predicted == ["b", "d", "f"]
    assert (dump_plan(plan), plan.ledger.head) == before and ran == []


def test_a_rerun_runs_exactly_the_predicted_closure_and_records_who_asked() -> None:
    plan, ran = _plan()
    predicted = plan.rerun_preview("a").predicted
    old = {name: plan.tasks[name].decision_id for name in SHAPE}
    report = plan.rerun_from("a", asked_by="cli:alice")
    assert predicted == ["a", "b", "c", "d", "f"]
    assert report.executed == predicted and sorted(ran) == sorted(predicted)
    assert report.cached == ["e"]
    asked = [e for e in plan.ledger.entries if e.event == "requested"]
    assert [e.task for e in asked] == predicted and {e.round for e in asked} == {report.round - 1}
    assert asked[0].detail == "rerun from a, asked by cli:alice (closure: a, b, c, d, f)"
    assert {e.detail for e in asked[1:]} == {"rerun from a, asked by cli:alice"}
    why = round_rows(plan, report)
    assert {row["task"]: row["reason"] for row in why if row["task"] in predicted} == {
        name: entry.detail for name, entry in zip(predicted, asked, strict=True)
    }
    for name in predicted:  # a new decision supersedes the old one; nothing was invalidated
        assert plan.tasks[name].decision_id != old[name] and plan.tasks[name].state is TaskState.DONE
        new = plan.tasks[name].decision_id or ""
        assert [e.dst for e in plan.graph.out_edges(new, ["supersedes"])] == [old[name]]
    assert plan.tasks["e"].decision_id == old["e"]
    assert not [e for e in plan.ledger.entries if e.event == "invalidated"] and plan.ledger.verify()


def test_other_runnable_work_is_predicted_too() -> None:
    plan, _ = _plan()
    plan.tasks["e"].state = TaskState.STALE
    preview = plan.rerun_preview("d")
    assert preview.closure == ["d", "f"] and preview.also == ["e"] and preview.predicted == ["d", "f", "e"]
    report = plan.rerun_from("d", asked_by="mcp:agent")
    # The closure asked for re-runs whatever its inputs say; the other stale task read nothing new,
    # so early cutoff keeps its result (ADR 0018) — the preview names it as work that may run.
    assert sorted(report.executed) == sorted(preview.closure)
    assert list(report.revalidated) == ["e"]


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ("zz", "TASK: 'zz'; a rerun starts from a task of plan 'rerun' (6 tasks)"),
        ("bb", "TASK: 'bb'; a rerun starts from a task of plan 'rerun'; tasks that look close: b"),
    ],
)
def test_an_unknown_task_is_refused_in_one_line_and_nothing_changes(task: str, message: str) -> None:
    plan, ran = _plan()
    before = (dump_plan(plan), plan.ledger.head, plan.round)
    with pytest.raises(RerunError) as refused:
        plan.rerun_from(task, asked_by="cli:alice")
    assert str(refused.value) == message and refused.value.path == "TASK"
    assert (dump_plan(plan), plan.ledger.head, plan.round) == before and ran == []


def test_an_unfinished_task_is_refused() -> None:
    plan, _ = _plan()
    plan.tasks["c"].state = TaskState.FAILED
    with pytest.raises(RerunError, match="'c' is failed; a rerun starts from a done task"):
        plan.rerun_preview("c")


def test_who_asked_must_be_said() -> None:
    plan, ran = _plan()
    with pytest.raises(RerunError, match="asked_by: ''; who asked is non-empty text"):
        plan.rerun_from("a", asked_by="")
    assert ran == []


def test_a_task_asked_for_reruns_although_early_cutoff_would_keep_it() -> None:
    # Nothing upstream of 'd' changed, so without the request early cutoff would revalidate the
    # whole closure and run nothing: a suspect output is exactly what unchanged inputs cannot clear.
    plan, _ = _plan()
    preview = plan.rerun_preview("d")
    report = plan.rerun_from("d", asked_by="cli:someone")
    assert sorted(report.executed) == sorted(preview.closure) and not report.revalidated

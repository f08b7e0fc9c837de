"""A round: run every ready layer through the executor, then commit it in declaration order.

A layer is every task still to do whose needs have settled this round. The executor runs the whole
layer and returns its outcomes in call order; only after the layer has joined does the plan commit
them, task by task in declaration order, so graph bytes, decision ids and ledger order do not
depend on which task finished first. A task whose ground an earlier commit in the same layer
disproved is not committed (it goes stale).

Before it picks anything, a round re-reads the world facts its decisions read through ``ctx.read``
(:func:`~contextmesh.execution.facts.check_facts`): the readers of a changed fact go stale and run in
this round. When a layer comes up, a stale task whose inputs, ground and facts came back unchanged
is revalidated instead of run (early cutoff, :mod:`~contextmesh.execution.cutoff`): it joins
``cached``, with its reason in ``revalidated``, and is not handed to the executor.
"""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import TYPE_CHECKING

from contextmesh.execution.calls import TaskCall, TaskOutcome
from contextmesh.execution.context import EvidenceView
from contextmesh.execution.cutoff import revalidate, revalidation
from contextmesh.execution.facts import check_facts, reading_claims
from contextmesh.execution.reports import RoundReport
from contextmesh.execution.task import Task, TaskState, blocked, ground_stands
from contextmesh.execution.verdicts import RunRef, check_contract, decide, disprove, evidence_views, fail
from contextmesh.execution.watch import keep_marks, read_slices

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = ["run_round"]


def run_round(plan: Plan, *, include_failed: bool) -> RoundReport:
    """One round of ``plan``: run what is pending or stale (and failed) whose ground stands."""
    plan.round += 1
    report = RoundReport(plan.round)
    check_facts(plan)
    wanted = {TaskState.PENDING, TaskState.STALE} | ({TaskState.FAILED} if include_failed else set())
    held = blocked(plan.tasks, plan.graph)
    todo = [t for t in plan.tasks.values() if t.state in wanted and t.name not in held]
    untouched = [t.name for t in plan.tasks.values() if t.state is TaskState.DONE]
    settled = set(untouched)
    evidence = evidence_views(plan.graph)
    watched = read_slices(plan, todo, evidence, strict=False)  # before any audit reads them (ADR 0019)
    while todo:
        layer = [t for t in todo if all(need in settled for need in t.needs)]
        if not layer:
            for task in todo:
                need = next(n for n in task.needs if n not in settled)
                held.setdefault(task.name, f"it needs '{need}', which did not complete this round")
            break
        _run_layer(plan, layer, evidence, report)
        settled.update(t.name for t in layer if t.state is TaskState.DONE)
        ran = {t.name for t in layer}
        held.update({k: v for k, v in blocked(plan.tasks, plan.graph).items() if k not in held})
        todo = [t for t in todo if t.name not in ran and t.name not in held]
    keep_marks(plan, watched, report.executed)
    standing = set(untouched) | set(report.revalidated)
    report.cached = [name for name in plan.tasks if name in standing]
    for name in untouched:
        plan.ledger.record(
            "cached",
            round=plan.round,
            task=name,
            decision_id=plan.tasks[name].decision_id,
            detail="untouched, previous result stands",
        )
    for name, reason in held.items():
        if plan.tasks[name].state is not TaskState.DONE:
            report.blocked[name] = reason
            plan.ledger.record("blocked", round=plan.round, task=name, detail=reason)
    return report


def _run_layer(plan: Plan, layer: list[Task], evidence: tuple[EvidenceView, ...], report: RoundReport) -> None:
    kept = {task.name: why for task in layer if (why := revalidation(plan, task)) is not None}
    running = [task for task in layer if task.name not in kept]
    if running:
        report.layers.append([t.name for t in running])
    for task in running:
        task.attempt += 1
    calls = [_call(plan, task, evidence) for task in running]
    outcomes = plan.executor.run_layer(calls, plan.registry) if calls else []
    check_contract(plan.graph, outcomes)
    by_name = {task.name: outcome for task, outcome in zip(running, outcomes, strict=True)}
    for task in layer:  # declaration order, whether it ran or kept its result
        if task.name not in kept:
            _commit(plan, task, by_name[task.name], report)
        elif not _fell_in_layer(plan, task, None, report):
            revalidate(plan, task, kept[task.name], report)


def _call(plan: Plan, task: Task, evidence: tuple[EvidenceView, ...]) -> TaskCall:
    # Copies: a worker must not be able to change another task's recorded output.
    inputs = {need: copy.deepcopy(plan.tasks[need].output) for need in task.needs}
    return TaskCall(
        identity=task.identity(plan.name),
        inputs=MappingProxyType(inputs),
        evidence=evidence,
        worker=task.run,
        auditor=task.audit,
    )


def _fell_in_layer(plan: Plan, task: Task, run_ref: RunRef, report: RoundReport) -> bool:
    """True (the task goes stale) when a sibling's audit earlier in this layer disproved its ground."""
    if ground_stands(plan.graph, task):
        return False
    task.state = TaskState.STALE
    task.error = f"its ground '{task.assumes}' was disproved in this layer before it could commit"
    report.stale.append(task.name)
    plan.ledger.record("blocked", round=plan.round, task=task.name, key=task.worker_key, detail=task.error, run=run_ref)
    return True


def _commit(plan: Plan, task: Task, outcome: TaskOutcome, report: RoundReport) -> None:
    run_ref = outcome.run
    report.runs[task.name] = run_ref
    if _fell_in_layer(plan, task, run_ref, report):
        return
    if outcome.error is not None:
        fail(plan, task, f"{type(outcome.error).__name__}: {outcome.error}", report.failed, run_ref)
        return
    task.output = outcome.output
    audit_ref = outcome.audit_run or run_ref
    verdict = outcome.verdict
    if outcome.audit_error is not None:
        fail(plan, task, f"auditor raised: {outcome.audit_error}", report.failed, audit_ref)
    elif verdict is not None and verdict.kind == "fail":
        fail(plan, task, f"audit failed the output: {verdict.reason}", report.failed, audit_ref)
    elif verdict is not None and verdict.kind == "disproved":
        disprove(plan, task, verdict, audit_ref, report)
    elif decide(plan, task, verdict, run_ref, outcome.audit_run, report.failed, reading_claims(plan, outcome.reads)):
        report.executed.append(task.name)

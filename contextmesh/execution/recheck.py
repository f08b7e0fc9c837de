"""A recheck: the standing auditors judge their tasks' recorded outputs again; nothing executes.

Only the auditors whose watched slice or evidence changed run (ADR 0019,
:mod:`contextmesh.execution.watch`): every declaring auditor's slice is read in one step before any
audit runs, and the rest are skipped in one ledger entry. ``full=True`` runs every standing auditor.

A task stands when it is done, has an auditor, its ground stands and its decision is live. An
``ok`` verdict changes nothing but the ground's ``checked_round`` (and all of them together write
one summary entry); ``fail`` fails the task; ``disproved`` rejects the ground and lets its closure
fall (:func:`contextmesh.execution.verdicts.disprove`, the same branch a round takes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextmesh.execution.calls import AuditCall, TaskOutcome
from contextmesh.execution.reports import RecheckReport
from contextmesh.execution.task import Task, TaskState, ground_stands
from contextmesh.execution.verdicts import check_contract, disprove, evidence_views, fail, mark_checked
from contextmesh.execution.watch import keep_marks, read_slices, record_selection, select

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = ["recheck"]


def recheck(plan: Plan, *, full: bool = False) -> RecheckReport:
    """Run the standing auditors of ``plan`` whose watched slice changed (every one when ``full``).

    A fingerprint function that raises or returns anything but text refuses the recheck before it
    changes anything (:class:`~contextmesh.execution.watch.WatchError`).
    """
    standing = [t for t in plan.tasks.values() if _standing(plan, t)]
    evidence = evidence_views(plan.graph)
    readings = read_slices(plan, standing, evidence, strict=True)  # before any audit, and before any change
    chosen = select(plan, standing, readings, full=full)
    plan.round += 1
    report = RecheckReport(plan.round)
    report.skipped = list(chosen.skipped)
    calls = [
        AuditCall(identity=t.identity(plan.name), output=t.output, evidence=evidence, auditor=t.audit)
        for t in chosen.run
    ]
    outcomes = plan.executor.run_audits(calls, plan.registry)
    check_contract(plan.graph, outcomes)
    quiet: list[str] = []
    for task, outcome in zip(chosen.run, outcomes, strict=True):
        plan.watched.pop(task.name, None)  # an audit that does not say ok leaves no mark
        _judge(plan, task, outcome, report, quiet)
    keep_marks(plan, readings, quiet)
    record_selection(plan, chosen)
    if quiet:
        plan.ledger.record(
            "audited", round=plan.round, detail=f"{len(quiet)} auditor(s) found nothing new: {', '.join(quiet)}"
        )
    return report


def _standing(plan: Plan, task: Task) -> bool:
    return (
        task.state is TaskState.DONE
        and bool(task.auditor_key or task.audit)
        and ground_stands(plan.graph, task)
        and task.decision_id is not None
        and plan.graph.is_live(task.decision_id)
    )


def _judge(plan: Plan, task: Task, outcome: TaskOutcome, report: RecheckReport, quiet: list[str]) -> None:
    ref = outcome.audit_run
    if outcome.audit_error is not None:
        report.audit_errors[task.name] = str(outcome.audit_error)
        plan.ledger.record(
            "audit_error",
            round=plan.round,
            task=task.name,
            decision_id=task.decision_id,
            key=task.auditor_key,
            detail=str(outcome.audit_error),
            run=ref,
        )
        return
    verdict = outcome.verdict
    assert verdict is not None
    report.audited.append(task.name)
    if not ground_stands(plan.graph, task):
        return  # an earlier audit in this recheck already took this ground down
    if verdict.kind == "ok":
        quiet.append(task.name)
        mark_checked(plan, task)
    elif verdict.kind == "fail":
        fail(plan, task, f"audit failed the output: {verdict.reason}", report.failed, ref)
    else:
        disprove(plan, task, verdict, ref, report)

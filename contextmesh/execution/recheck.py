"""A recheck: every standing auditor judges its task's recorded output again; nothing executes.

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

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = ["recheck"]


def recheck(plan: Plan) -> RecheckReport:
    """Run every standing auditor of ``plan`` against current facts; execute nothing."""
    plan.round += 1
    report = RecheckReport(plan.round)
    standing = [t for t in plan.tasks.values() if _standing(plan, t)]
    evidence = evidence_views(plan.graph)
    calls = [
        AuditCall(identity=t.identity(plan.name), output=t.output, evidence=evidence, auditor=t.audit) for t in standing
    ]
    outcomes = plan.executor.run_audits(calls, plan.registry)
    check_contract(plan.graph, outcomes)
    quiet: list[str] = []
    for task, outcome in zip(standing, outcomes, strict=True):
        _judge(plan, task, outcome, report, quiet)
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

"""What an outcome writes: a decision, a failure, or a disproof and the fall of its closure.

A round (:mod:`contextmesh.execution.rounds`) and a recheck (:mod:`contextmesh.execution.recheck`)
both end in these writes, so each is written once here, the disproof branch included. Every write
is one ledger entry (or one per invalidated node), in the order the plan commits its tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from contextmesh.belief.invalidation import InvalidationReport, render_chain
from contextmesh.core.canonical import digest
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.core.model import Provenance
from contextmesh.execution.boundary import AuditContractError
from contextmesh.execution.calls import TaskOutcome
from contextmesh.execution.context import EvidenceView, Verdict
from contextmesh.execution.grounding import about_claim
from contextmesh.execution.references import task_grounds
from contextmesh.execution.reports import RecheckReport, RoundReport
from contextmesh.execution.task import Task, TaskState

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = [
    "AUTHOR",
    "RunRef",
    "check_contract",
    "decide",
    "disprove",
    "evidence_views",
    "fail",
    "mark_checked",
    "produced_artefacts",
]

# The author the plan records on what it writes (``created_by``, ``extractor``). Graph files
# already hold this word, so it stays although the class is called Plan now.
AUTHOR = "runner"

RunRef = dict[str, str | None] | None


def evidence_views(graph: ContextGraph) -> tuple[EvidenceView, ...]:
    """Read-only copies of the submitted observations, as an auditor sees them."""
    return tuple(
        EvidenceView(
            n.id,
            n.label,
            n.provenance.source_id if n.provenance else "",
            _text(n.attrs.get("external_id")),
            MappingProxyType(_mapping(n.attrs.get("metadata"))),
        )
        for n in graph.by_type("evidence")
        if n.attrs.get("kind") == "observation"
    )


def check_contract(graph: ContextGraph, outcomes: list[TaskOutcome]) -> None:
    """Refuse the whole batch if a verdict breaks the auditor contract (a programming error).

    Checked before anything of the batch is committed, so a bad auditor leaves no partial layer.
    """
    for outcome in outcomes:
        if isinstance(outcome.audit_error, AuditContractError):
            raise outcome.audit_error
        verdict = outcome.verdict
        if verdict is not None and verdict.kind == "disproved" and verdict.cite is not None:
            cited = graph.nodes.get(verdict.cite)
            submitted = cited is not None and cited.type == "evidence" and cited.attrs.get("kind") == "observation"
            if cited is None or not submitted or not cited.live:
                raise AuditContractError(
                    f"the auditor of '{outcome.task}' cites '{verdict.cite}', which is not live submitted evidence"
                )


def mark_checked(plan: Plan, task: Task) -> None:
    """Note on the task's ground the round an auditor last found it standing."""
    plan.graph.node(task.assumption_id).attrs["checked_round"] = plan.round
    plan.graph.touch(task.assumption_id)  # a field set in place: the session's journal must hear of it


def fail(plan: Plan, task: Task, reason: str, failed: dict[str, str], run_ref: RunRef) -> None:
    """The task failed (its worker raised, or its audit failed the output); nothing else moves."""
    task.state = TaskState.FAILED
    task.error = reason
    failed[task.name] = reason
    plan.ledger.record("failed", round=plan.round, task=task.name, key=task.worker_key, detail=reason, run=run_ref)


def decide(
    plan: Plan,
    task: Task,
    verdict: Verdict | None,
    run_ref: RunRef,
    audit_ref: RunRef,
    failed: dict[str, str],
    facts: Sequence[str] = (),
) -> bool:
    """The output stands: a new decision node supersedes the task's previous one (True), unless the
    documents it rests on no longer name what it rests on (the task fails with the reason, False).
    ``facts`` are the claims of the facts its worker read through ``ctx.read`` (ADR 0018)."""
    graph = plan.graph
    grounds = task_grounds(graph, task.rests_on, task.about)
    if isinstance(grounds, str):  # the documents changed while the task ran
        fail(plan, task, f"cannot commit: {grounds}", failed, run_ref)
        return False
    entity_ids = produced_artefacts(graph, task)
    record = plan.decisions.decide(
        f"{task.name} ({plan.name})",
        rationale=task.rationale or f"task '{task.name}' of plan '{plan.name}' ran {task.worker_key or 'a callable'}",
        provenance=Provenance(source_id=plan.source_id, extractor=AUTHOR, recorded_at_build=graph.build),
        id=slug(f"{plan.name}|{task.name}|v{task.attempt}", "decision"),
        assumptions=[task.assumption_id],
        needs=[plan.tasks[n].decision_id for n in task.needs if plan.tasks[n].decision_id],  # type: ignore[misc]
        produces=entity_ids,
        rests_on=[*grounds.grounds.claims, *facts],
        cites=grounds.grounds.sources,
        supersedes=task.decision_id,
        attrs={
            "task": task.name,
            "plan": plan.name,
            "worker_key": task.worker_key,
            "attempt": task.attempt,
            "output_digest": digest(task.output),
        },
    )
    if grounds.entities:
        about_claim(plan, task, grounds.entities, record.id)
    task.decision_id = record.id
    task.state = TaskState.DONE
    task.error = None
    plan.ledger.record(
        "executed",
        round=plan.round,
        task=task.name,
        decision_id=record.id,
        key=task.worker_key,
        detail=f"output {digest(task.output)[:16]}",
        run=run_ref,
    )
    if verdict is not None:
        text = f"audit of {task.name}: {verdict.reason}"
        # The attempt is part of the id: each run's audit is its own evidence.
        graph.add_edge(record.id, "justified_by", _evidence(plan, task, "audit", text, f"{text}|{task.attempt}"))
        plan.ledger.record(
            "audited",
            round=plan.round,
            task=task.name,
            decision_id=record.id,
            key=task.auditor_key,
            detail=verdict.reason,
            run=audit_ref,
        )
        mark_checked(plan, task)
    return True


def produced_artefacts(graph: ContextGraph, task: Task) -> list[str]:
    """The entity ids of what the task produces: new ones added, fallen ones revived."""
    entity_ids = []
    for product in task.produces:
        entity_id = slug(product, "entity")
        node = graph.nodes.get(entity_id)
        if node is None:
            graph.add_node("entity", product, id=entity_id, attrs={"canonical": product, "aliases": []})
        elif node.invalidated:
            graph.revive(entity_id)
        entity_ids.append(entity_id)
    return entity_ids


def _evidence(plan: Plan, task: Task, kind: str, text: str, id_text: str) -> str:
    """The id of the plan's own evidence node ``text`` (an audit's or a disproof's), added once."""
    evidence_id = slug(id_text, "evidence")
    if evidence_id not in plan.graph:
        plan.graph.add_node(
            "evidence",
            text,
            id=evidence_id,
            attrs={"kind": kind, "task": task.name},
            provenance=Provenance(source_id=plan.source_id, extractor=AUTHOR),
        )
    return evidence_id


def disprove(plan: Plan, task: Task, verdict: Verdict, run_ref: RunRef, report: RoundReport | RecheckReport) -> None:
    """The ground is false: record the evidence, reject the assumption, and let its closure fall.

    The task goes stale with every done task whose decision fell; ``report`` gets the
    invalidation and the stale names (the task first, then the fallen in declaration order).
    """
    invalidation = _reject(plan, task, verdict, run_ref)
    report.invalidations.append(invalidation)
    task.state = TaskState.STALE
    report.stale.append(task.name)
    for other in plan.tasks.values():
        if other.decision_id in invalidation.invalidated and other.state is TaskState.DONE:
            other.state = TaskState.STALE
            if other.name not in report.stale:
                report.stale.append(other.name)


def _reject(plan: Plan, task: Task, verdict: Verdict, run_ref: RunRef) -> InvalidationReport:
    evidence_id = verdict.cite
    if evidence_id is None:
        text = f"disproof from {task.name}: {verdict.reason}"
        evidence_id = _evidence(plan, task, "disproof", text, text)
    report = plan.assumptions.reject(task.assumption_id, evidence_id=evidence_id, created_by=AUTHOR)
    receipt = {
        "ground": {"assumption_id": report.assumption_id, "statement": report.statement},
        "evidence_id": evidence_id,
        "auditor": task.auditor_key,
        "task": task.name,
        "reason": verdict.reason,
        **{k: v for k, v in report.to_dict().items() if k not in {"assumption_id", "statement", "evidence_id"}},
    }
    plan.ledger.record(
        "disproved",
        round=plan.round,
        task=task.name,
        decision_id=task.decision_id,
        key=task.auditor_key,
        detail=verdict.reason,
        receipt=receipt,
        run=run_ref,
    )
    for node_id, chain in report.invalidated.items():
        plan.ledger.record(
            "invalidated",
            round=plan.round,
            task=next((t.name for t in plan.tasks.values() if t.decision_id == node_id), None),
            decision_id=node_id,
            detail=render_chain(chain),
        )
    return report


def _mapping(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None

"""A large plan's recheck judges its auditors that declare nothing in one task run (ADR 0033).

An auditor that declares nothing it watches (``watches=`` / ``reads=``, ADR 0019) runs at every
recheck, and almost always says ``ok``. In a plan of more than 50 tasks — where task runs carry no
identity tags and untouched tasks get no ``Cached`` run (:mod:`contextmesh.orchestration.prefect_executor`,
invariant 5) — one task run per such auditor costs a Prefect task run each time (InvalidationBench:
96 of them made the undeclared-auditor rerun 3.3x plain Prefect's wall time) and shows nothing a
summary would not. So :class:`~contextmesh.orchestration.prefect_executor.PrefectExecutor` judges
them together in one task run named ``recheck · <n> audits`` (task ``cm-audit-batch``):

* every auditor still gets its own verdict, reason and ledger entries (the recheck commits each
  outcome as before; each outcome's ``audit_run`` is the batch run);
* the run logs one line per auditor (what it judged, the verdict and its reason) through Prefect's
  run logger, and ends ``Disproved`` when any auditor disproved (else ``Fail`` when any failed, else
  ``Completed``), its message naming those tasks, so a disproving recheck still reads differently
  from success in the runs list;
* an auditor that raises fails only its own outcome (``audit_error``), not the others';
* auditors with a ``timeout`` or ``retries`` keep a task run each: those are per task-run options.

Auditors that declare what they watch run as task runs of their own, as do all of a plan of at most
50 tasks (the demo's, whose ``<task> · audit`` runs the walkthrough reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prefect import Task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.states import Completed

from contextmesh.core.errors import ContextMeshError, ExecutionError
from contextmesh.execution.boundary import call_auditor
from contextmesh.execution.calls import AuditCall, TaskIdentity
from contextmesh.execution.context import EvidenceView
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.orchestration.evidence_params import evidence_data, evidence_views
from contextmesh.orchestration.run_logs import run_logger

__all__ = [
    "BATCH_FROM",
    "BATCH_RUN_NAME",
    "BatchItem",
    "batch_error",
    "batch_parameters",
    "batch_task",
    "batchable",
    "judge_batch",
]

BATCH_FROM = 2  # a recheck batches its auditors that declare nothing when there are at least this many
BATCH_RUN_NAME = "recheck · {count} audits"
_STATE_NAMES = (("disproved", "Disproved"), ("fail", "Fail"))


@dataclass(frozen=True)
class BatchItem:
    """One auditor's outcome inside a batch run: its verdict (plain data) or the error it ended with."""

    verdict: dict[str, Any] | None
    error: str | None


def batchable(registry: TaskRegistry, call: AuditCall) -> bool:
    """True when ``call``'s auditor is registered, declares nothing it watches, and has no per-run options."""
    key = call.identity.auditor_key
    if call.auditor is not None or key is None or not registry.has_auditor(key):
        return False
    registration = registry.lookup_auditor(key)
    return not registration.declares and registration.timeout is None and not registration.retries


def _judge_one(
    registry: TaskRegistry, identity: dict[str, Any], output: Any, evidence: tuple[EvidenceView, ...]
) -> BatchItem:
    who = TaskIdentity.from_dict(identity)
    try:
        verdict = call_auditor(registry.lookup_auditor(who.auditor_key or ""), who, output, evidence)
    except ContextMeshError as exc:
        run_logger().warning("auditor %s of %s ended in an error: %s", who.auditor_key, who.task, exc)
        return BatchItem(None, str(exc))
    run_logger().info(
        "auditor %s judged '%s' of %s: %s — %s", who.auditor_key, who.assumption, who.task, verdict.kind, verdict.reason
    )
    return BatchItem(verdict.to_dict(), None)


def judge_batch(
    registry: TaskRegistry,
    label: str,
    identities: list[dict[str, Any]],
    outputs: list[Any],
    evidence: list[dict[str, Any]],
) -> State[Any]:
    """The batch run's body: every auditor in order; the run's state says whether any disproved or failed."""
    del label  # the run's name only
    views = evidence_views(evidence)
    items = [_judge_one(registry, who, out, views) for who, out in zip(identities, outputs, strict=True)]
    counts: dict[str, list[str]] = {}
    for who, item in zip(identities, items, strict=True):
        kind = "error" if item.verdict is None else str(item.verdict["kind"])
        counts.setdefault(kind, []).append(str(who["task"]))
    name = next((state for kind, state in _STATE_NAMES if kind in counts), "Completed")
    summary = "; ".join(
        f"{kind} {len(tasks)}" + ("" if kind == "ok" else f": {', '.join(tasks)}")
        for kind, tasks in sorted(counts.items())
    )
    message = f"{len(items)} auditors declaring nothing they watch: {summary}"
    run_logger().info("judged %s", message)
    return Completed(name=name, message=message[:500], data=items)


def batch_task(registry: TaskRegistry) -> Task[..., Any]:
    """The Prefect task of one registry's batch runs."""

    def judge(
        label: str, identities: list[dict[str, Any]], outputs: list[Any], evidence: list[dict[str, Any]]
    ) -> State[Any]:
        return judge_batch(registry, label, identities, outputs, evidence)

    return Task(judge, name="cm-audit-batch", task_run_name="{label}", cache_policy=NO_CACHE, persist_result=False)


def batch_parameters(calls: Sequence[AuditCall]) -> dict[str, Any]:
    """The batch run's parameters: its name, and every call's identity and recorded output, in call order."""
    return {
        "label": BATCH_RUN_NAME.format(count=len(calls)),
        "identities": [call.identity.to_dict() for call in calls],
        "outputs": [call.output for call in calls],
        "evidence": evidence_data(calls[0].evidence) if calls else [],
    }


def batch_error(item: BatchItem) -> ExecutionError | None:
    """The error an auditor of the batch ended with, as the outcome's ``audit_error``."""
    return None if item.error is None else ExecutionError(item.error)

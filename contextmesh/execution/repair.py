"""Repair: ground a stale or failed task on a replacement assumption, moving its durable key with it.

Every refusal comes before any write. The replacement supersedes the task's old ground when it can.
Supersession is one-to-one (the graph file keeps it two-sided: one ``superseded_by`` per record), so
when several tasks shared the old ground, the first repair takes the one successor; a later task
repaired onto the same statement shares that successor, and one repaired onto a different
statement gets new ground of its own (an existing active assumption with that statement, else a
new one) with no supersession link — the ledger's ``repaired`` entry and the task's superseded
decision still name what it replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from contextmesh.core.errors import ExecutionError
from contextmesh.core.model import AssumptionRecord
from contextmesh.execution.task import Task, TaskState, check_keys, ground_stands
from contextmesh.execution.verdicts import AUTHOR

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = ["repair"]


def repair(
    plan: Plan,
    task_name: str,
    *,
    assumes: str,
    worker_key: str | None,
    run: Callable[..., Any] | None,
    auditor_key: str | None,
    produces: Iterable[str] | None,
    rationale: str | None,
) -> Task:
    """Repair ``task_name`` of ``plan`` (see the module's docstring); returns the task."""
    task = _repairable(plan, task_name, worker_key, run)
    check_keys(plan.registry, task_name, worker_key, auditor_key)
    products = tuple(produces) if produces is not None else task.produces
    old = plan.graph.assumptions[task.assumption_id]
    new = _new_ground(plan, task_name, old, assumes)
    task.assumption_id, task.assumes = new.id, assumes
    if worker_key is not None:
        task.worker_key = worker_key
        task.run = None  # the key now says which code runs; the old callable must not win
    if run is not None:
        task.run = run
    if auditor_key is not None:
        task.auditor_key = auditor_key
        task.audit = None
    task.produces = products
    if rationale is not None:
        task.rationale = rationale
    if task.state is TaskState.DONE:
        task.state = TaskState.STALE
    plan.ledger.record(
        "repaired",
        round=plan.round,
        task=task_name,
        decision_id=task.decision_id,
        key=task.worker_key,
        detail=f"now assumes '{assumes}' (replaces '{old.statement}')",
    )
    return task


def _repairable(plan: Plan, task_name: str, worker_key: str | None, run: Callable[..., Any] | None) -> Task:
    task = plan.tasks.get(task_name)
    if task is None:
        raise ExecutionError(f"no task '{task_name}' in plan '{plan.name}'")
    if task.state not in {TaskState.STALE, TaskState.FAILED} and ground_stands(plan.graph, task):
        raise ExecutionError(
            f"task '{task_name}' is {task.state.value} on standing ground; repair replaces only stale or failed work"
        )
    if worker_key is not None and run is not None:
        raise ExecutionError(
            f"task '{task_name}': give at most one of worker_key= and run= — they are two answers to 'which code'"
        )
    if task.worker_key is not None and run is not None:
        raise ExecutionError(
            f"task '{task_name}' is keyed ('{task.worker_key}'); repairing it with a bare run= would leave its "
            "checkpoint naming the old key — repair with worker_key= instead"
        )
    return task


def _new_ground(plan: Plan, task_name: str, old: AssumptionRecord, assumes: str) -> AssumptionRecord:
    successor = plan.graph.assumptions.get(old.superseded_by) if old.superseded_by else None
    if successor is not None and successor.statement == assumes and successor.status == "active":
        return successor  # another task on the same fallen ground was already repaired onto this one
    if successor is not None:
        # Another task took the old ground's one successor; a second one would make the graph
        # file's supersession one-sided, and Session.load would refuse it.
        new = plan.assumptions.assume(assumes, created_by=AUTHOR)
        if new.status != "active":
            raise ExecutionError(
                f"task '{task_name}' cannot be repaired onto '{assumes}': that assumption is {new.status}"
            )
        return new
    if old.status == "active":
        return plan.assumptions.supersede(old.id, assumes, created_by=AUTHOR)
    return plan.assumptions.replace_rejected(old.id, assumes, created_by=AUTHOR)

"""A plan's task table: the task record, its stored states, and what blocks a task this round.

A :class:`Task` is declared once and carried across rounds; when done it is a decision node. Its
stored state is one of :class:`TaskState`; *blocked* is not one of them, because whether a task
can run depends on the graph (its ground may have fallen since) and is recomputed every round by
:func:`blocked`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from contextmesh.core.errors import ExecutionError
from contextmesh.core.graph import ContextGraph
from contextmesh.execution.calls import TaskIdentity
from contextmesh.execution.references import task_grounds
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.knowledge.revisions import DocumentRef, current_revisions

__all__ = ["Task", "TaskState", "blocked", "check_keys", "ground_stands"]


class TaskState(StrEnum):
    """Stored task states. ``blocked`` is not one: it is recomputed every round."""

    PENDING = "pending"
    DONE = "done"
    STALE = "stale"
    FAILED = "failed"


@dataclass(kw_only=True)
class Task:
    """One unit of work, declared once and carried across rounds (a decision node when done)."""

    name: str
    assumes: str
    assumption_id: str
    worker_key: str | None = None
    auditor_key: str | None = None
    needs: tuple[str, ...] = ()
    produces: tuple[str, ...] = ()
    rationale: str = ""
    rests_on: tuple[DocumentRef, ...] = ()
    about: tuple[str, ...] = ()
    # Re-run whenever anything upstream re-runs: never revalidated by early cutoff (ADR 0018).
    volatile: bool = False
    state: TaskState = TaskState.PENDING
    attempt: int = 0
    decision_id: str | None = None
    output: Any = None
    error: str | None = None
    run: Callable[..., Any] | None = field(default=None, repr=False)
    audit: Callable[..., Any] | None = field(default=None, repr=False)

    @property
    def keyed(self) -> bool:
        """True when both halves of its code are registry keys (it can be checkpointed)."""
        return self.run is None and self.audit is None

    def identity(self, plan: str) -> TaskIdentity:
        """Who this task's next call is, in ``plan``: the record that travels to executors."""
        return TaskIdentity(
            plan=plan,
            task=self.name,
            attempt=self.attempt,
            worker_key=self.worker_key,
            auditor_key=self.auditor_key,
            assumption=self.assumes,
            assumption_id=self.assumption_id,
        )


def ground_stands(graph: ContextGraph, task: Task) -> bool:
    """True while the task's assumption is active and live in ``graph``."""
    record = graph.assumptions[task.assumption_id]
    return record.status == "active" and graph.is_live(task.assumption_id)


def blocked(tasks: Mapping[str, Task], graph: ContextGraph) -> dict[str, str]:
    """The tasks that cannot run, with the reason: fallen ground, references that name nothing now,
    or a need that is blocked."""
    reasons: dict[str, str] = {}
    index = None
    for task in tasks.values():
        if task.state is TaskState.DONE:
            continue
        if not ground_stands(graph, task):
            status = graph.assumptions[task.assumption_id].status
            reasons[task.name] = f"its ground '{task.assumes}' is {status}; repair it onto new ground before it can run"
            continue
        if task.rests_on or task.about:
            index = current_revisions(graph) if index is None else index  # once a round, not once a task
            grounds = task_grounds(graph, task.rests_on, task.about, index)
            if isinstance(grounds, str):
                reasons[task.name] = grounds
                continue
        for need in task.needs:
            if need in reasons:
                reasons[task.name] = f"it needs '{need}', which is blocked"
                break
    return reasons


def check_keys(registry: TaskRegistry | None, task_name: str, worker_key: str | None, auditor_key: str | None) -> None:
    """Refuse, naming the key, unless every key given resolves in ``registry``."""
    if worker_key is None and auditor_key is None:
        return
    if registry is None:
        raise ExecutionError(f"task '{task_name}' names a key, but this plan has no registry")
    if worker_key is not None:
        registry.lookup_worker(worker_key)
    if auditor_key is not None:
        registry.lookup_auditor(auditor_key)

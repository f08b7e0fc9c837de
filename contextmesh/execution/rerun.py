"""Rerun from a task: "this task's output is suspect" — re-run it and everything downstream of it.

:func:`preview_rerun` computes the blast radius without changing anything: the task and every done
task that needs it, transitively (its **closure**, in declaration order), plus any stale or pending
work already runnable (the round that re-runs the closure runs that too), minus whatever would be
blocked. :func:`rerun_from` marks the closure stale — each task on its own account, so it re-runs
whatever an upstream output turns out to be — records ``requested`` ledger entries saying who
asked, one a task of the closure, and runs one round over stale and pending work (ADR 0019 §7).

Invariants (``tests/execution/test_rerun.py``):

1. A preview changes nothing; ``rerun_from`` executes exactly the preview's ``predicted`` set.
2. Only a done task can be rerun from: an unknown or unfinished task is refused, naming it, and
   nothing changes.
3. Nothing is invalidated: each re-run task's new decision supersedes its previous one, as any run does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from difflib import get_close_matches
from typing import TYPE_CHECKING, Any

from contextmesh.core.errors import ExecutionError
from contextmesh.execution.reports import RoundReport
from contextmesh.execution.task import TaskState, blocked

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = ["RerunError", "RerunPreview", "preview_rerun", "rerun_from"]


class RerunError(ExecutionError):
    """A rerun was asked from a task that is not in the plan, or not done."""

    def __init__(self, path: str, found: str, rule: str) -> None:
        self.path = path
        self.found = found
        self.rule = rule
        super().__init__(f"{path}: {found}; {rule}")


@dataclass(frozen=True)
class RerunPreview:
    """What a rerun from ``task`` would run: its closure, other runnable work, and what is blocked."""

    task: str
    closure: list[str]
    also: list[str]
    blocked: dict[str, str]

    @property
    def predicted(self) -> list[str]:
        """The tasks the round would execute, in declaration order."""
        return [name for name in (*self.closure, *self.also) if name not in self.blocked]

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "task": self.task,
            "closure": self.closure,
            "also": self.also,
            "blocked": self.blocked,
            "predicted": self.predicted,
        }


def _checked(plan: Plan, task: str) -> None:
    found = plan.tasks.get(task)
    if found is None:
        near = get_close_matches(task, list(plan.tasks), n=3, cutoff=0.6) if isinstance(task, str) else []
        hint = f"; tasks that look close: {', '.join(near)}" if near else f" ({len(plan.tasks)} tasks)"
        raise RerunError("TASK", repr(task), f"a rerun starts from a task of plan '{plan.name}'{hint}")
    if found.state is not TaskState.DONE:
        raise RerunError(
            "TASK",
            f"'{task}' is {found.state.value}",
            "a rerun starts from a done task (stale and pending work runs at the next resume anyway)",
        )


def preview_rerun(plan: Plan, task: str) -> RerunPreview:
    """The closure a rerun from ``task`` would re-run, and what else would run or block. Changes nothing."""
    _checked(plan, task)
    falling = {task}
    for other in plan.tasks.values():  # declaration order is topological: needs come first
        if other.state is TaskState.DONE and any(need in falling for need in other.needs):
            falling.add(other.name)
    closure = [name for name in plan.tasks if name in falling]
    waiting = [t.name for t in plan.tasks.values() if t.state in {TaskState.PENDING, TaskState.STALE}]
    marked = {
        name: dataclasses.replace(t, state=TaskState.STALE) if name in falling else t for name, t in plan.tasks.items()
    }
    held = blocked(marked, plan.graph)
    return RerunPreview(
        task, closure, [n for n in waiting if n not in falling], {n: held[n] for n in marked if n in held}
    )


def rerun_from(plan: Plan, task: str, *, asked_by: str) -> RoundReport:
    """Mark ``task``'s closure stale, record who asked, and run one round over stale and pending work."""
    if not isinstance(asked_by, str) or not asked_by.strip() or len(asked_by) > 200:
        raise RerunError("asked_by", repr(asked_by)[:80], "who asked is non-empty text of at most 200 characters")
    preview = preview_rerun(plan, task)
    for name in preview.closure:
        # One entry a task, carrying the round it happened after (as a repair does), so each
        # re-run task's row says why it ran (run_reasons) and the first names the whole closure.
        plan.tasks[name].state = TaskState.STALE
        said = f"rerun from {task}, asked by {asked_by}"
        plan.ledger.record(
            "requested",
            round=plan.round,
            task=name,
            decision_id=plan.tasks[name].decision_id,
            detail=f"{said} (closure: {', '.join(preview.closure)})" if name == task else said,
        )
    return plan.run(include_failed=False)

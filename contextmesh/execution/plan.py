"""The plan engine: tasks are decisions, grounds are assumptions, rounds run ready layers.

A :class:`Plan` owns one plan on one graph. ``task(...)`` declares a task (keyed through the
plan's :class:`TaskRegistry`, or a plain callable that cannot be checkpointed) with the
statement it assumes, the tasks it needs and the artefacts it produces. Each round:

* ``run()`` first re-reads the world facts its decisions read through ``ctx.read`` and lets the
  readers of a changed one fall (:mod:`~contextmesh.execution.facts`); then it executes every task
  that is pending, stale or failed and whose ground stands, layer by layer — except a stale task
  whose inputs, ground and facts came back unchanged, which is *revalidated* instead (early cutoff,
  :mod:`~contextmesh.execution.cutoff`); a done task nobody invalidated is *cached* (its previous
  result stands); a task on a
  rejected ground, or needing one that cannot run, is *blocked* with its reason (recomputed every
  round, never stored). An executed task that passes its audit becomes a new decision node that
  supersedes its previous one; its artefacts come back under their old ids; an artefact it no
  longer produces stays invalidated.
* ``recheck()`` runs every standing auditor against the world and executes nothing. A disproof
  records evidence, rejects the assumption and invalidates exactly its closure; the tasks whose
  decisions fell become stale.
* ``repair(task, assumes=…, worker_key=…)`` grounds a stale or failed task on a replacement
  assumption that supersedes the rejected one, and moves the durable key with it.

Each concept has its module: the task table (:mod:`~contextmesh.execution.task`), a round
(:mod:`~contextmesh.execution.rounds`), a recheck (:mod:`~contextmesh.execution.recheck`), what a
verdict writes, the disproof branch included (:mod:`~contextmesh.execution.verdicts`), repair
(:mod:`~contextmesh.execution.repair`) and the reports (:mod:`~contextmesh.execution.reports`).
:class:`Plan` holds the state they share and is the one door to them.

Invariants (``tests/execution/test_plan.py``):

1. Nothing executes on ground the graph knows to be false.
2. Results commit in declaration order after a layer joins, whatever order they finished in.
3. A task whose ground an earlier task's audit in the same layer disproved is not committed.
4. A rejected assumption is never edited back to life; a decision is never revived.
5. Every state change is one ledger entry (a recheck with nothing new writes one summary).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.core.errors import ExecutionError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import key_problem, slug
from contextmesh.execution.calls import Executor
from contextmesh.execution.in_process import InProcessExecutor
from contextmesh.execution.recheck import recheck
from contextmesh.execution.references import check_refs
from contextmesh.execution.repair import repair
from contextmesh.execution.reports import RecheckReport, RoundReport
from contextmesh.execution.rerun import RerunPreview, preview_rerun, rerun_from
from contextmesh.execution.rounds import run_round
from contextmesh.execution.task import Task, TaskState, blocked, check_keys
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.execution.verdicts import AUTHOR
from contextmesh.execution.watch import WatchMark
from contextmesh.formats.run_ledger import RunLedger
from contextmesh.knowledge.revisions import DocumentRef

# The reports, the task and its states are defined in their own modules and re-exported here: this
# module is where a plan's user imports them from.
__all__ = ["Plan", "RecheckReport", "RoundReport", "Task", "TaskState"]


class Plan:
    """One plan, one graph, one registry, one ledger."""

    def __init__(
        self,
        name: str,
        graph: ContextGraph,
        *,
        registry: TaskRegistry | None = None,
        ledger: RunLedger | None = None,
        executor: Executor | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ExecutionError(f"a plan name is non-empty text, not {name!r}")
        self.name = name
        self.graph = graph
        self.registry = registry
        self.ledger = ledger if ledger is not None else RunLedger()
        self.executor: Executor = executor if executor is not None else InProcessExecutor()
        self.tasks: dict[str, Task] = {}
        self.round = 0
        # What each auditor that watches a slice last found standing (ADR 0019, execution/watch.py).
        self.watched: dict[str, WatchMark] = {}
        self.assumptions = Assumptions(graph)
        self.decisions = DecisionLog(graph)
        title = f"execution plan: {name}"
        self.source_id = slug(title, "source")
        if self.source_id not in graph:
            graph.add_node("source", title, id=self.source_id, attrs={"origin": f"plan:{name}", "retrieved_at": None})

    # -- the task table -------------------------------------------------------------------------

    def task(
        self,
        name: str,
        *,
        assumes: str,
        worker_key: str | None = None,
        run: Callable[..., Any] | None = None,
        auditor_key: str | None = None,
        audit: Callable[..., Any] | None = None,
        needs: Iterable[str] = (),
        produces: Iterable[str] = (),
        rationale: str = "",
        rests_on: Iterable[DocumentRef | str] = (),
        about: Iterable[str] = (),
        volatile: bool = False,
    ) -> Task:
        """Declare a task. Its needs must be declared first, so declaration order is a topological order.

        ``rests_on`` names the documents (by name) or sentences (``DocumentRef(doc, quote=...)``) the
        task's result rests on, ``about`` the entities it is about; both are resolved against the
        graph's current revisions when the task runs (:mod:`~contextmesh.execution.references`).
        A ``volatile`` task re-runs whenever anything upstream re-runs: early cutoff never keeps its
        previous result (:mod:`~contextmesh.execution.cutoff`).
        """
        if not isinstance(volatile, bool):
            raise ExecutionError(f"task '{name}': volatile is true or false, not {volatile!r}")
        if not isinstance(name, str) or key_problem(name) is not None:
            raise ExecutionError(f"a task name is text with no whitespace or control characters, not {name!r}")
        if name in self.tasks:
            raise ExecutionError(f"task '{name}' is already declared in plan '{self.name}'")
        _check_code(name, worker_key, run, auditor_key, audit)
        check_keys(self.registry, name, worker_key, auditor_key)
        wanted = tuple(needs)
        for need in wanted:
            if need not in self.tasks:
                raise ExecutionError(f"task '{name}' needs '{need}', which is not declared before it")
        products = tuple(produces)
        for product in products:
            if not isinstance(product, str) or not product.strip():
                raise ExecutionError(f"task '{name}' produces {product!r}; an artefact name is non-empty text")
        if not isinstance(assumes, str) or not assumes.strip():
            raise ExecutionError(f"task '{name}' must say what it assumes (non-empty text)")
        refs, topics = check_refs(name, rests_on, about)
        record = self.assumptions.assume(assumes, created_by=AUTHOR)
        task = Task(
            name=name,
            assumes=assumes,
            assumption_id=record.id,
            worker_key=worker_key,
            auditor_key=auditor_key,
            needs=wanted,
            produces=products,
            rationale=rationale,
            rests_on=refs,
            about=topics,
            volatile=volatile,
            run=run,
            audit=audit,
        )
        self.tasks[name] = task
        return task

    def blocked(self) -> dict[str, str]:
        """Tasks that cannot run this round, with the reason (computed, never stored)."""
        return blocked(self.tasks, self.graph)

    def states(self) -> dict[str, str]:
        """Each task's stored state (``blocked`` is reported by :meth:`blocked`)."""
        return {name: task.state.value for name, task in self.tasks.items()}

    def require_checkpointable(self) -> None:
        """Refuse, naming the task, if any task runs a plain callable a checkpoint cannot record."""
        for task in self.tasks.values():
            if not task.keyed:
                which = "run=" if task.run is not None else "audit="
                raise ExecutionError(
                    f"task '{task.name}' was declared with {which} a plain callable; a checkpoint records keys, "
                    "never code, so this plan cannot be checkpointed — register the callable under a key"
                )

    def rebind(self, registry: TaskRegistry) -> None:
        """Adopt a new registry only if it resolves every task's keys; otherwise change nothing."""
        for task in self.tasks.values():
            check_keys(registry, task.name, task.worker_key, task.auditor_key)
        self.registry = registry

    # -- rounds, rechecks and repairs -------------------------------------------------------------

    def run(self, *, include_failed: bool = True) -> RoundReport:
        """One round: run what is pending or stale (and failed) whose ground stands, layer by layer."""
        return run_round(self, include_failed=include_failed)

    def recheck(self, *, full: bool = False) -> RecheckReport:
        """Run the standing auditors whose watched slice changed (every one when ``full``); execute nothing."""
        return recheck(self, full=full)

    def rerun_from(self, task_name: str, *, asked_by: str) -> RoundReport:
        """Re-run ``task_name`` and every done task downstream of it (its output is suspect): one round.

        See :mod:`contextmesh.execution.rerun`; :meth:`rerun_preview` says what would run.
        """
        return rerun_from(self, task_name, asked_by=asked_by)

    def rerun_preview(self, task_name: str) -> RerunPreview:
        """What :meth:`rerun_from` would run, changing nothing."""
        return preview_rerun(self, task_name)

    def repair(
        self,
        task_name: str,
        *,
        assumes: str,
        worker_key: str | None = None,
        run: Callable[..., Any] | None = None,
        auditor_key: str | None = None,
        produces: Iterable[str] | None = None,
        rationale: str | None = None,
    ) -> Task:
        """Ground a stale or failed task on a replacement assumption, moving its durable key with it.

        See :mod:`contextmesh.execution.repair` for how shared fallen ground is replaced.
        """
        return repair(
            self,
            task_name,
            assumes=assumes,
            worker_key=worker_key,
            run=run,
            auditor_key=auditor_key,
            produces=produces,
            rationale=rationale,
        )


def _check_code(
    name: str,
    worker_key: str | None,
    run: Callable[..., Any] | None,
    auditor_key: str | None,
    audit: Callable[..., Any] | None,
) -> None:
    if (worker_key is None) == (run is None):
        raise ExecutionError(
            f"task '{name}': give exactly one of worker_key= and run= — they are two answers to 'which code "
            "is this', and a checkpoint would record the wrong one"
        )
    if auditor_key is not None and audit is not None:
        raise ExecutionError(f"task '{name}': give at most one of auditor_key= and audit=")

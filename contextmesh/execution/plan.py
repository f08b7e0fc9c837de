"""The plan engine: tasks are decisions, grounds are assumptions, rounds run ready layers.

A :class:`Plan` owns one plan on one graph. ``task(...)`` declares a task (keyed through the
runner's :class:`TaskRegistry`, or a plain callable that cannot be checkpointed) with the
statement it assumes, the tasks it needs and the artefacts it produces. Each round:

* ``run()`` executes every task that is pending, stale or failed and whose ground stands, layer by
  layer; a done task nobody invalidated is *cached* (its previous result stands); a task on a
  rejected ground, or needing one that cannot run, is *blocked* with its reason (recomputed every
  round, never stored). An executed task that passes its audit becomes a new decision node that
  supersedes its previous one; its artefacts come back under their old ids; an artefact it no
  longer produces stays invalidated.
* ``recheck()`` runs every standing auditor against the world and executes nothing. A disproof
  records evidence, rejects the assumption and invalidates exactly its closure; the tasks whose
  decisions fell become stale.
* ``repair(task, assumes=…, worker_key=…)`` grounds a stale or failed task on a replacement
  assumption that supersedes the rejected one, and moves the durable key with it.

Invariants (``tests/test_plan.py``):

1. Nothing executes on ground the graph knows to be false.
2. Results commit in declaration order after a layer joins, whatever order they finished in.
3. A task whose ground an earlier task's audit in the same layer disproved is not committed.
4. A rejected assumption is never edited back to life; a decision is never revived.
5. Every state change is one ledger entry (a recheck with nothing new writes one summary).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.belief.invalidation import InvalidationReport, render_chain
from contextmesh.core.canonical import digest
from contextmesh.core.errors import ExecutionError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import key_problem, slug
from contextmesh.core.model import Provenance
from contextmesh.execution.boundary import AuditContractError
from contextmesh.execution.context import EvidenceView, Verdict
from contextmesh.execution.in_process import AuditCall, Executor, InProcessExecutor, TaskCall, TaskOutcome
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.formats.run_ledger import RunLedger

__all__ = ["Plan", "RecheckReport", "RoundReport", "Task", "TaskState"]


class TaskState(StrEnum):
    """Stored task states. ``blocked`` is not one: it is recomputed every round."""

    PENDING = "pending"
    DONE = "done"
    STALE = "stale"
    FAILED = "failed"


@dataclass
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


@dataclass
class RoundReport:
    """What one ``run()`` did."""

    round: int
    layers: list[list[str]] = field(default_factory=list)
    executed: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)
    invalidations: list[InvalidationReport] = field(default_factory=list)
    runs: dict[str, dict[str, str | None] | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "round": self.round,
            "layers": self.layers,
            "executed": self.executed,
            "cached": self.cached,
            "blocked": self.blocked,
            "failed": self.failed,
            "stale": self.stale,
            "invalidations": [r.to_dict() for r in self.invalidations],
        }


@dataclass
class RecheckReport:
    """What one ``recheck()`` found."""

    round: int
    audited: list[str] = field(default_factory=list)
    audit_errors: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    invalidations: list[InvalidationReport] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "round": self.round,
            "audited": self.audited,
            "audit_errors": self.audit_errors,
            "failed": self.failed,
            "stale": self.stale,
            "invalidations": [r.to_dict() for r in self.invalidations],
        }


class Plan:
    """One plan, one graph, one registry, one ledger."""

    def __init__(
        self,
        plan: str,
        graph: ContextGraph,
        *,
        registry: TaskRegistry | None = None,
        ledger: RunLedger | None = None,
        executor: Executor | None = None,
    ) -> None:
        if not isinstance(plan, str) or not plan.strip():
            raise ExecutionError(f"a plan name is non-empty text, not {plan!r}")
        self.plan = plan
        self.graph = graph
        self.registry = registry
        self.ledger = ledger if ledger is not None else RunLedger()
        self.executor: Executor = executor if executor is not None else InProcessExecutor()
        self.tasks: dict[str, Task] = {}
        self.round = 0
        self.assumptions = Assumptions(graph)
        self.decisions = DecisionLog(graph)
        title = f"execution plan: {plan}"
        self.source_id = slug(title, "source")
        if self.source_id not in graph:
            graph.add_node("source", title, id=self.source_id, attrs={"origin": f"plan:{plan}", "retrieved_at": None})

    # -- declaring ------------------------------------------------------------------------

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
    ) -> Task:
        """Declare a task. Its needs must be declared first, so declaration order is a topological order."""
        if not isinstance(name, str) or key_problem(name) is not None:
            raise ExecutionError(f"a task name is text with no whitespace or control characters, not {name!r}")
        if name in self.tasks:
            raise ExecutionError(f"task '{name}' is already declared in plan '{self.plan}'")
        self._check_code(name, worker_key, run, auditor_key, audit)
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
        record = self.assumptions.assume(assumes, created_by="runner")
        task = Task(
            name, assumes, record.id, worker_key, auditor_key, wanted, products, rationale, run=run, audit=audit
        )
        self.tasks[name] = task
        return task

    def _check_code(
        self,
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
        if worker_key is not None:
            self._require_registry(name).lookup_worker(worker_key)
        if auditor_key is not None:
            self._require_registry(name).lookup_auditor(auditor_key)

    def _require_registry(self, name: str) -> TaskRegistry:
        if self.registry is None:
            raise ExecutionError(f"task '{name}' names a key, but this runner has no registry")
        return self.registry

    # -- state ------------------------------------------------------------------------------

    def _ground_stands(self, task: Task) -> bool:
        record = self.graph.assumptions[task.assumption_id]
        return record.status == "active" and self.graph.is_live(task.assumption_id)

    def blocked(self) -> dict[str, str]:
        """Tasks that cannot run this round, with the reason (computed, never stored)."""
        reasons: dict[str, str] = {}
        for task in self.tasks.values():
            if task.state is TaskState.DONE:
                continue
            if not self._ground_stands(task):
                status = self.graph.assumptions[task.assumption_id].status
                reasons[task.name] = (
                    f"its ground '{task.assumes}' is {status}; repair it onto new ground before it can run"
                )
                continue
            for need in task.needs:
                if need in reasons:
                    reasons[task.name] = f"it needs '{need}', which is blocked"
                    break
        return reasons

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
            if task.worker_key is not None:
                registry.lookup_worker(task.worker_key)
            if task.auditor_key is not None:
                registry.lookup_auditor(task.auditor_key)
        self.registry = registry

    # -- running ------------------------------------------------------------------------

    def _evidence(self) -> tuple[EvidenceView, ...]:
        return tuple(
            EvidenceView(
                n.id,
                n.label,
                n.provenance.source_id if n.provenance else "",
                _text(n.attrs.get("external_id")),
                MappingProxyType(_mapping(n.attrs.get("metadata"))),
            )
            for n in self.graph.by_type("evidence")
            if n.attrs.get("kind") == "observation"
        )

    def run(self, *, include_failed: bool = True) -> RoundReport:
        """One round: run what is pending or stale (and failed) whose ground stands, layer by layer."""
        self.round += 1
        report = RoundReport(self.round)
        wanted = {TaskState.PENDING, TaskState.STALE} | ({TaskState.FAILED} if include_failed else set())
        blocked = self.blocked()
        todo = [t for t in self.tasks.values() if t.state in wanted and t.name not in blocked]
        for task in self.tasks.values():
            if task.state is TaskState.DONE:
                report.cached.append(task.name)
        settled: set[str] = {t.name for t in self.tasks.values() if t.state is TaskState.DONE}
        evidence = self._evidence()
        while todo:
            layer = [t for t in todo if all(need in settled for need in t.needs)]
            if not layer:
                for task in todo:
                    need = next(n for n in task.needs if n not in settled)
                    blocked.setdefault(task.name, f"it needs '{need}', which did not complete this round")
                break
            report.layers.append([t.name for t in layer])
            for task in layer:
                task.attempt += 1
            calls = [self._call(task, evidence) for task in layer]
            outcomes = self.executor.run_layer(calls, self.registry)
            self._check_contract(outcomes)
            for task, outcome in zip(layer, outcomes, strict=True):
                self._commit(task, outcome, report)
                if task.state is TaskState.DONE:
                    settled.add(task.name)
            ran = {t.name for t in layer}
            todo = [t for t in todo if t.name not in ran]
            blocked.update({k: v for k, v in self.blocked().items() if k not in blocked})
            todo = [t for t in todo if t.name not in blocked]
        for name in report.cached:
            self.ledger.record(
                "cached",
                round=self.round,
                task=name,
                decision_id=self.tasks[name].decision_id,
                detail="untouched, previous result stands",
            )
        for name, reason in blocked.items():
            if self.tasks[name].state is not TaskState.DONE:
                report.blocked[name] = reason
                self.ledger.record("blocked", round=self.round, task=name, detail=reason)
        return report

    def _call(self, task: Task, evidence: tuple[EvidenceView, ...]) -> TaskCall:
        # Copies: a worker must not be able to change another task's recorded output.
        inputs = {need: copy.deepcopy(self.tasks[need].output) for need in task.needs}
        return TaskCall(
            self.plan,
            task.name,
            task.attempt,
            task.worker_key,
            task.auditor_key,
            task.assumes,
            task.assumption_id,
            MappingProxyType(inputs),
            evidence,
            task.run,
            task.audit,
        )

    def _check_contract(self, outcomes: list[TaskOutcome]) -> None:
        # A verdict that breaks the contract is a programming error: refuse the whole layer
        # before anything of it is committed.
        for outcome in outcomes:
            if isinstance(outcome.audit_error, AuditContractError):
                raise outcome.audit_error
            verdict = outcome.verdict
            if verdict is not None and verdict.kind == "disproved" and verdict.cite is not None:
                cited = self.graph.nodes.get(verdict.cite)
                submitted = cited is not None and cited.type == "evidence" and cited.attrs.get("kind") == "observation"
                if cited is None or not submitted or not cited.live:
                    raise AuditContractError(
                        f"the auditor of '{outcome.task}' cites '{verdict.cite}', which is not live submitted evidence"
                    )

    def _commit(self, task: Task, outcome: TaskOutcome, report: RoundReport) -> None:
        run_ref = outcome.run
        report.runs[task.name] = run_ref
        if not self._ground_stands(task):
            # A sibling's audit earlier in this layer disproved this task's ground.
            task.state = TaskState.STALE
            task.error = f"its ground '{task.assumes}' was disproved in this layer before it could commit"
            report.stale.append(task.name)
            self.ledger.record(
                "blocked", round=self.round, task=task.name, key=task.worker_key, detail=task.error, run=run_ref
            )
            return
        if outcome.error is not None:
            self._fail(task, f"{type(outcome.error).__name__}: {outcome.error}", report.failed, run_ref)
            return
        task.output = outcome.output
        if outcome.audit_error is not None:
            self._fail(task, f"auditor raised: {outcome.audit_error}", report.failed, outcome.audit_run or run_ref)
            return
        verdict = outcome.verdict
        if verdict is not None and verdict.kind == "fail":
            self._fail(task, f"audit failed the output: {verdict.reason}", report.failed, outcome.audit_run or run_ref)
            return
        if verdict is not None and verdict.kind == "disproved":
            invalidation = self._disprove(task, verdict, outcome.audit_run or run_ref)
            report.invalidations.append(invalidation)
            task.state = TaskState.STALE
            report.stale.append(task.name)
            self._mark_fallen(invalidation, report.stale)
            return
        self._record_decision(task, verdict, run_ref, outcome.audit_run)
        report.executed.append(task.name)

    def _fail(self, task: Task, reason: str, failed: dict[str, str], run_ref: dict[str, str | None] | None) -> None:
        task.state = TaskState.FAILED
        task.error = reason
        failed[task.name] = reason
        self.ledger.record("failed", round=self.round, task=task.name, key=task.worker_key, detail=reason, run=run_ref)

    def _record_decision(
        self,
        task: Task,
        verdict: Verdict | None,
        run_ref: dict[str, str | None] | None,
        audit_ref: dict[str, str | None] | None,
    ) -> None:
        entity_ids = []
        for product in task.produces:
            entity_id = slug(product, "entity")
            node = self.graph.nodes.get(entity_id)
            if node is None:
                self.graph.add_node("entity", product, id=entity_id, attrs={"canonical": product, "aliases": []})
            elif node.invalidated:
                self.graph.revive(entity_id)
            entity_ids.append(entity_id)
        previous = task.decision_id
        record = self.decisions.decide(
            f"{task.name} ({self.plan})",
            rationale=task.rationale
            or f"task '{task.name}' of plan '{self.plan}' ran {task.worker_key or 'a callable'}",
            provenance=Provenance(source_id=self.source_id, extractor="runner", recorded_at_build=self.graph.build),
            id=slug(f"{self.plan}|{task.name}|v{task.attempt}", "decision"),
            assumptions=[task.assumption_id],
            needs=[self.tasks[n].decision_id for n in task.needs if self.tasks[n].decision_id],  # type: ignore[misc]
            produces=entity_ids,
            supersedes=previous,
            attrs={
                "task": task.name,
                "plan": self.plan,
                "worker_key": task.worker_key,
                "attempt": task.attempt,
                "output_digest": digest(task.output),
            },
        )
        task.decision_id = record.id
        task.state = TaskState.DONE
        task.error = None
        self.ledger.record(
            "executed",
            round=self.round,
            task=task.name,
            decision_id=record.id,
            key=task.worker_key,
            detail=f"output {digest(task.output)[:16]}",
            run=run_ref,
        )
        if verdict is not None:
            evidence = self._audit_evidence(task, verdict)
            self.graph.add_edge(record.id, "justified_by", evidence)
            self.ledger.record(
                "audited",
                round=self.round,
                task=task.name,
                decision_id=record.id,
                key=task.auditor_key,
                detail=verdict.reason,
                run=audit_ref,
            )
            self.graph.node(task.assumption_id).attrs["checked_round"] = self.round

    def _audit_evidence(self, task: Task, verdict: Verdict) -> str:
        text = f"audit of {task.name}: {verdict.reason}"
        evidence_id = slug(f"{text}|{task.attempt}", "evidence")
        if evidence_id not in self.graph:
            self.graph.add_node(
                "evidence",
                text,
                id=evidence_id,
                attrs={"kind": "audit", "task": task.name},
                provenance=Provenance(source_id=self.source_id, extractor="runner"),
            )
        return evidence_id

    def _disprove(self, task: Task, verdict: Verdict, run_ref: dict[str, str | None] | None) -> InvalidationReport:
        if verdict.cite is not None:
            evidence_id = verdict.cite
        else:
            text = f"disproof from {task.name}: {verdict.reason}"
            evidence_id = slug(text, "evidence")
            if evidence_id not in self.graph:
                self.graph.add_node(
                    "evidence",
                    text,
                    id=evidence_id,
                    attrs={"kind": "disproof", "task": task.name},
                    provenance=Provenance(source_id=self.source_id, extractor="runner"),
                )
        report = self.assumptions.reject(task.assumption_id, evidence_id=evidence_id, created_by="runner")
        receipt = {
            "ground": {"assumption_id": report.assumption_id, "statement": report.statement},
            "evidence_id": evidence_id,
            "auditor": task.auditor_key,
            "task": task.name,
            "reason": verdict.reason,
            **{k: v for k, v in report.to_dict().items() if k not in {"assumption_id", "statement", "evidence_id"}},
        }
        self.ledger.record(
            "disproved",
            round=self.round,
            task=task.name,
            decision_id=task.decision_id,
            key=task.auditor_key,
            detail=verdict.reason,
            receipt=receipt,
            run=run_ref,
        )
        for node_id, chain in report.invalidated.items():
            self.ledger.record(
                "invalidated",
                round=self.round,
                task=self._task_of(node_id),
                decision_id=node_id,
                detail=render_chain(chain),
            )
        return report

    def _task_of(self, node_id: str) -> str | None:
        return next((t.name for t in self.tasks.values() if t.decision_id == node_id), None)

    def _mark_fallen(self, report: InvalidationReport, stale: list[str]) -> None:
        for task in self.tasks.values():
            if task.decision_id in report.invalidated and task.state is TaskState.DONE:
                task.state = TaskState.STALE
                if task.name not in stale:
                    stale.append(task.name)

    # -- rechecking and repairing -------------------------------------------------------------

    def recheck(self) -> RecheckReport:
        """Run every standing auditor against current facts; execute nothing."""
        self.round += 1
        report = RecheckReport(self.round)
        standing = [
            t
            for t in self.tasks.values()
            if t.state is TaskState.DONE
            and (t.auditor_key or t.audit)
            and self._ground_stands(t)
            and t.decision_id is not None
            and self.graph.is_live(t.decision_id)
        ]
        evidence = self._evidence()
        calls = [
            AuditCall(
                self.plan,
                t.name,
                t.attempt,
                t.worker_key,
                t.auditor_key,
                t.assumes,
                t.assumption_id,
                t.output,
                evidence,
                t.audit,
            )
            for t in standing
        ]
        outcomes = self.executor.run_audits(calls, self.registry)
        self._check_contract(outcomes)
        quiet: list[str] = []
        for task, outcome in zip(standing, outcomes, strict=True):
            ref = outcome.audit_run
            if outcome.audit_error is not None:
                report.audit_errors[task.name] = str(outcome.audit_error)
                self.ledger.record(
                    "audit_error",
                    round=self.round,
                    task=task.name,
                    decision_id=task.decision_id,
                    key=task.auditor_key,
                    detail=str(outcome.audit_error),
                    run=ref,
                )
                continue
            verdict = outcome.verdict
            assert verdict is not None
            report.audited.append(task.name)
            if not self._ground_stands(task):
                continue  # an earlier audit in this recheck already took this ground down
            if verdict.kind == "ok":
                quiet.append(task.name)
                self.graph.node(task.assumption_id).attrs["checked_round"] = self.round
            elif verdict.kind == "fail":
                self._fail(task, f"audit failed the output: {verdict.reason}", report.failed, ref)
            else:
                invalidation = self._disprove(task, verdict, ref)
                report.invalidations.append(invalidation)
                task.state = TaskState.STALE
                report.stale.append(task.name)
                self._mark_fallen(invalidation, report.stale)
        if quiet:
            self.ledger.record(
                "audited", round=self.round, detail=f"{len(quiet)} auditor(s) found nothing new: {', '.join(quiet)}"
            )
        return report

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

        The replacement supersedes the task's old ground. Supersession is one-to-one (the graph file
        keeps it two-sided: one ``superseded_by`` per record), so when several tasks shared the old
        ground, the first repair takes the one successor; a later task repaired onto the same
        statement shares that successor, and one repaired onto a different statement gets new ground
        of its own (an existing active assumption with that statement, else a new one) with no
        supersession link — the ledger's ``repaired`` entry and the task's superseded decision still
        name what it replaced.
        """
        task = self.tasks.get(task_name)
        if task is None:
            raise ExecutionError(f"no task '{task_name}' in plan '{self.plan}'")
        if task.state not in {TaskState.STALE, TaskState.FAILED} and self._ground_stands(task):
            raise ExecutionError(
                f"task '{task_name}' is {task.state.value} on standing ground; "
                "repair replaces only stale or failed work"
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
        new_worker = worker_key if worker_key is not None else task.worker_key
        if worker_key is not None:
            self._require_registry(task_name).lookup_worker(worker_key)
        if auditor_key is not None:
            self._require_registry(task_name).lookup_auditor(auditor_key)
        products = tuple(produces) if produces is not None else task.produces
        old = self.graph.assumptions[task.assumption_id]
        successor = self.graph.assumptions.get(old.superseded_by) if old.superseded_by else None
        if successor is not None and successor.statement == assumes and successor.status == "active":
            new = successor  # another task on the same fallen ground was already repaired onto this one
        elif successor is not None:
            # Another task took the old ground's one successor; a second one would make the graph
            # file's supersession one-sided, and Session.load would refuse it.
            new = self.assumptions.assume(assumes, created_by="runner")
            if new.status != "active":
                raise ExecutionError(
                    f"task '{task_name}' cannot be repaired onto '{assumes}': that assumption is {new.status}"
                )
        elif old.status == "active":
            new = self.assumptions.supersede(old.id, assumes, created_by="runner")
        else:
            new = self.assumptions._new_ground(old, assumes, "runner")
            self.assumptions._link_successor(self.graph.assumptions[old.id], new)
        task.assumption_id, task.assumes = new.id, assumes
        task.worker_key = new_worker
        if worker_key is not None:
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
        self.ledger.record(
            "repaired",
            round=self.round,
            task=task_name,
            decision_id=task.decision_id,
            key=task.worker_key,
            detail=f"now assumes '{assumes}' (replaces '{old.statement}')",
        )
        return task


def _mapping(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None

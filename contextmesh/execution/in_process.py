"""The Executor contract, and the in-process executor.

The Plan computes a ready layer and hands the executor plain data per task — :class:`TaskCall`:
the plan and task names, the attempt, the worker and auditor keys, the inputs copied from the
tasks it needs, the statement of its assumption and a read-only view of submitted evidence —
never the live graph. For each call the executor runs the worker, then (if it succeeded) the
auditor, and returns a :class:`TaskOutcome`: an output or an error, a verdict or an audit error,
and opaque run references (an orchestrator's run ids). Outcomes come back in call order; the
Plan commits them in declaration order after the whole layer has joined, so graph bytes,
decision ids and ledger order do not depend on which task finished first.

:class:`InProcessExecutor` runs a layer on a thread pool of configurable width. It honours each
key's timeout (the task fails; its thread is abandoned, its result discarded) and retry count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from contextmesh.core.errors import ExecutionError
from contextmesh.execution.boundary import call_auditor, call_worker
from contextmesh.execution.context import AuditContext, EvidenceView, RunContext, Verdict
from contextmesh.execution.task_registry import Registration, TaskRegistry

__all__ = ["AuditCall", "Executor", "InProcessExecutor", "TaskCall", "TaskOutcome", "TaskTimeoutError"]


class TaskTimeoutError(ExecutionError):
    """A worker or auditor ran longer than its key's timeout."""


@dataclass(frozen=True)
class TaskCall:
    """Everything an executor may know about one task run: plain data, keys, never the graph.

    ``worker`` / ``auditor`` carry plain callables for tasks declared with ``run=`` / ``audit=``
    (they cannot be checkpointed and only an in-process executor can run them).
    """

    plan: str
    task: str
    attempt: int
    worker_key: str | None
    auditor_key: str | None
    assumption: str
    assumption_id: str
    inputs: MappingProxyType[str, Any]
    evidence: tuple[EvidenceView, ...] = ()
    worker: Callable[[RunContext], Any] | None = field(default=None, compare=False)
    auditor: Callable[[AuditContext], Verdict] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AuditCall:
    """A recheck's audit of a done task: its output and ground, no worker run."""

    plan: str
    task: str
    attempt: int
    worker_key: str | None
    auditor_key: str | None
    assumption: str
    assumption_id: str
    output: Any
    evidence: tuple[EvidenceView, ...] = ()
    auditor: Callable[[AuditContext], Verdict] | None = field(default=None, compare=False)


@dataclass
class TaskOutcome:
    """What came back for one call."""

    task: str
    output: Any = None
    error: ExecutionError | None = None
    verdict: Verdict | None = None
    audit_error: ExecutionError | None = None
    run: dict[str, str | None] | None = None
    audit_run: dict[str, str | None] | None = None


class Executor(Protocol):
    """Runs layers of task calls and audits; returns outcomes in call order."""

    def run_layer(self, calls: Sequence[TaskCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        """Run every call's worker, then its auditor."""
        ...

    def run_audits(self, calls: Sequence[AuditCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        """Run every call's auditor against its recorded output."""
        ...


def _resolve(registry: TaskRegistry | None, space: str, key: str | None, fn: Callable[..., Any] | None) -> Registration:
    if fn is not None:
        return Registration(key or f"<callable {getattr(fn, '__name__', 'fn')}>", fn)
    if registry is None or key is None:
        raise ExecutionError(f"no registry to resolve the {space} key {key!r}")
    return registry.lookup_worker(key) if space == "worker" else registry.lookup_auditor(key)


def _with_limits(registration: Registration, call: Callable[[], Any], task: str, role: str) -> Any:
    attempts = registration.retries + 1
    for attempt in range(1, attempts + 1):
        try:
            if registration.timeout is None:
                return call()
            pool = futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"cm-{role}")
            try:
                return pool.submit(call).result(timeout=registration.timeout)
            except futures.TimeoutError:
                raise TaskTimeoutError(
                    f"{role} '{registration.key}' of task '{task}' ran longer than its "
                    f"{registration.timeout:g} s timeout"
                ) from None
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
        except ExecutionError:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def run_call(call: TaskCall, registry: TaskRegistry | None) -> TaskOutcome:
    """Run one task call's worker and auditor here, in this thread."""
    outcome = TaskOutcome(call.task)
    try:
        worker = _resolve(registry, "worker", call.worker_key, call.worker)
        ctx = RunContext(call.plan, call.task, call.attempt, worker.key, call.assumption, call.inputs)
        outcome.output = _with_limits(worker, lambda: call_worker(worker, ctx), call.task, "worker")
    except ExecutionError as exc:
        outcome.error = exc
        return outcome
    if call.auditor_key is None and call.auditor is None:
        return outcome
    audit = AuditCall(
        call.plan,
        call.task,
        call.attempt,
        call.worker_key,
        call.auditor_key,
        call.assumption,
        call.assumption_id,
        outcome.output,
        call.evidence,
        call.auditor,
    )
    judged = run_audit(audit, registry)
    outcome.verdict, outcome.audit_error = judged.verdict, judged.audit_error
    return outcome


def run_audit(call: AuditCall, registry: TaskRegistry | None) -> TaskOutcome:
    """Run one auditor against a recorded output, here, in this thread."""
    outcome = TaskOutcome(call.task, output=call.output)
    try:
        auditor = _resolve(registry, "auditor", call.auditor_key, call.auditor)
        ctx = AuditContext(
            call.plan,
            call.task,
            call.attempt,
            call.worker_key or "",
            auditor.key,
            call.assumption,
            call.output,
            call.evidence,
        )
        outcome.verdict = _with_limits(auditor, lambda: call_auditor(auditor, ctx), call.task, "auditor")
    except ExecutionError as exc:
        outcome.audit_error = exc
    return outcome


class InProcessExecutor:
    """Runs each layer on a thread pool of ``width`` threads; no orchestrator, ``run`` refs are null."""

    def __init__(self, width: int = 4) -> None:
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise ExecutionError(f"an executor's width is a whole number from 1, not {width!r}")
        self.width = width

    def run_layer(self, calls: Sequence[TaskCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        """Run the calls concurrently; return outcomes in call order."""
        return self._map(lambda call: run_call(call, registry), calls)

    def run_audits(self, calls: Sequence[AuditCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        """Run the audits concurrently; return outcomes in call order."""
        return self._map(lambda call: run_audit(call, registry), calls)

    def _map(self, fn: Callable[[Any], TaskOutcome], calls: Sequence[Any]) -> list[TaskOutcome]:
        if self.width == 1 or len(calls) <= 1:
            return [fn(call) for call in calls]
        with futures.ThreadPoolExecutor(max_workers=min(self.width, len(calls)), thread_name_prefix="cm-layer") as pool:
            return list(pool.map(fn, calls))

"""The in-process executor: a layer on a thread pool, no orchestrator.

:class:`InProcessExecutor` runs a layer of :class:`~contextmesh.execution.calls.TaskCall` on a
thread pool of configurable width. It honours each key's timeout (the task fails; its thread is
abandoned, its result discarded) and retry count. It is the one executor that can run tasks
declared with plain callables (``run=`` / ``audit=``). The contract it implements lives in
:mod:`contextmesh.execution.calls`; its names are re-exported here, where they were first defined.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent import futures
from typing import Any

from contextmesh.core.errors import ExecutionError
from contextmesh.execution.boundary import call_auditor, call_worker
from contextmesh.execution.calls import AuditCall, Executor, TaskCall, TaskOutcome, TaskTimeoutError
from contextmesh.execution.context import FactRead
from contextmesh.execution.task_registry import Registration, TaskRegistry

__all__ = ["AuditCall", "Executor", "InProcessExecutor", "TaskCall", "TaskOutcome", "TaskTimeoutError"]


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
    identity = call.identity
    outcome = TaskOutcome(identity.task)
    reads: list[FactRead] = []
    try:
        worker = _resolve(registry, "worker", identity.worker_key, call.worker)
        outcome.output = _with_limits(
            worker, lambda: call_worker(worker, identity, call.inputs, registry, reads), identity.task, "worker"
        )
    except ExecutionError as exc:
        outcome.error = exc
        return outcome
    outcome.reads = tuple(reads)
    if not call.audited:
        return outcome
    judged = run_audit(call.audit(outcome.output), registry)
    outcome.verdict, outcome.audit_error = judged.verdict, judged.audit_error
    return outcome


def run_audit(call: AuditCall, registry: TaskRegistry | None) -> TaskOutcome:
    """Run one auditor against a recorded output, here, in this thread."""
    identity = call.identity
    outcome = TaskOutcome(identity.task, output=call.output)
    try:
        auditor = _resolve(registry, "auditor", identity.auditor_key, call.auditor)
        outcome.verdict = _with_limits(
            auditor, lambda: call_auditor(auditor, identity, call.output, call.evidence), identity.task, "auditor"
        )
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

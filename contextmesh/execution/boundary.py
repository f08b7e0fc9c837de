"""The one place user code is called: every worker and auditor call goes through here.

Both executors call user code through here, so the contexts a worker and an auditor see are built
from a task's :class:`~contextmesh.execution.calls.TaskIdentity` in one place. An exception
escaping user code becomes a :class:`TaskCodeError` that names the task, the key and
the role, and keeps the original as ``__cause__``; a worker's output must be plain JSON data
(checked by :func:`contextmesh.core.canonical.ensure_canonical`), because it is copied into the next
task's inputs and the execution snapshot; an auditor must return a :class:`Verdict`.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from contextmesh.core.canonical import ensure_canonical
from contextmesh.core.errors import ContextMeshError, ExecutionError
from contextmesh.execution.calls import TaskIdentity
from contextmesh.execution.context import AuditContext, EvidenceView, FactRead, FactReader, RunContext, Verdict
from contextmesh.execution.task_registry import Registration, TaskRegistry

__all__ = ["AuditContractError", "TaskCodeError", "call_auditor", "call_worker", "fact_reader"]


class TaskCodeError(ExecutionError):
    """User code behind a key raised; ``__cause__`` is the original exception."""

    def __init__(self, role: str, task: str, key: str, cause: BaseException) -> None:
        self.role, self.task, self.key = role, task, key
        super().__init__(f"{role} '{key}' of task '{task}' raised {type(cause).__name__}: {cause}")


class AuditContractError(ExecutionError):
    """An auditor returned something that is not a verdict, or a malformed one."""


def fact_reader(registry: TaskRegistry | None) -> FactReader | None:
    """How a worker's context reads facts: through the fact sources of ``registry`` (none without one)."""
    if registry is None:
        return None
    return lambda source, name: registry.lookup_fact(source).fn(name)


def call_worker(
    registration: Registration,
    identity: TaskIdentity,
    inputs: MappingProxyType[str, Any],
    registry: TaskRegistry | None = None,
    reads: list[FactRead] | None = None,
) -> Any:
    """Run a worker on its task's inputs; its output must be plain JSON data.

    The facts it reads through ``ctx.read`` come from ``registry``'s fact sources; when ``reads`` is
    given it ends holding exactly this call's tracked reads (emptied first: a retry starts afresh).
    """
    ctx = RunContext(
        plan=identity.plan,
        task=identity.task,
        attempt=identity.attempt,
        worker_key=registration.key,
        assumption=identity.assumption,
        inputs=inputs,
        reader=fact_reader(registry),
        reads=[] if reads is None else reads,
    )
    ctx.reads.clear()
    try:
        output = registration.fn(ctx)
    except Exception as exc:
        raise TaskCodeError("worker", ctx.task, registration.key, exc) from exc
    try:
        ensure_canonical(output, f"output of {ctx.task}")
    except ContextMeshError as exc:
        raise TaskCodeError("worker", ctx.task, registration.key, exc) from exc
    return output


def call_auditor(
    registration: Registration, identity: TaskIdentity, output: Any, evidence: tuple[EvidenceView, ...]
) -> Verdict:
    """Run an auditor on a task's output; it must return a :class:`Verdict`."""
    ctx = AuditContext(
        plan=identity.plan,
        task=identity.task,
        attempt=identity.attempt,
        worker_key=identity.worker_key or "",
        auditor_key=registration.key,
        assumption=identity.assumption,
        output=output,
        evidence=evidence,
    )
    try:
        verdict = registration.fn(ctx)
    except Exception as exc:
        raise TaskCodeError("auditor", ctx.task, registration.key, exc) from exc
    if not isinstance(verdict, Verdict):
        raise AuditContractError(
            f"auditor '{registration.key}' of task '{ctx.task}' returned {type(verdict).__name__}; an auditor "
            "returns ctx.ok(...), ctx.fail(...) or ctx.disproved(...)"
        )
    if verdict.kind not in {"ok", "fail", "disproved"} or not isinstance(verdict.reason, str):
        raise AuditContractError(f"auditor '{registration.key}' of task '{ctx.task}' returned a malformed verdict")
    return verdict

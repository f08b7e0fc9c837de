"""The Executor contract: what a plan hands an executor for each task, and what comes back.

The Plan computes a ready layer and hands the executor plain data per task — a :class:`TaskCall`:
the task's :class:`TaskIdentity` (plan and task names, the attempt, the worker and auditor keys,
the statement of its assumption and its id), the inputs copied from the tasks it needs and a
read-only view of submitted evidence — never the live graph. For each call the executor runs the
worker, then (if it succeeded) the auditor on :meth:`TaskCall.audit`, and returns a
:class:`TaskOutcome`: an output or an error, a verdict or an audit error, the facts the worker read
through its context, and opaque run references (an orchestrator's run ids). Outcomes come back in
call order; the Plan commits them in declaration order after the whole layer has joined, so graph
bytes, decision ids and ledger order do not depend on which task finished first.

The identity is the one record of a task's fields that travels: calls embed it, an orchestrator
sends it as plain data (:meth:`TaskIdentity.to_dict`) and user code sees it through the contexts
:mod:`contextmesh.execution.boundary` builds from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from contextmesh.core.errors import ExecutionError
from contextmesh.execution.context import AuditContext, EvidenceView, FactRead, RunContext, Verdict
from contextmesh.execution.task_registry import TaskRegistry

__all__ = ["AuditCall", "Executor", "TaskCall", "TaskIdentity", "TaskOutcome", "TaskTimeoutError"]


class TaskTimeoutError(ExecutionError):
    """A worker or auditor ran longer than its key's timeout."""


@dataclass(frozen=True, kw_only=True)
class TaskIdentity:
    """Which run of which task: its plan, name, attempt, code keys and ground. Plain data only."""

    plan: str
    task: str
    attempt: int
    worker_key: str | None
    auditor_key: str | None
    assumption: str
    assumption_id: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for an orchestrator's task parameters."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskIdentity:
        """The identity :meth:`to_dict` wrote."""
        return cls(**data)


@dataclass(frozen=True, kw_only=True)
class AuditCall:
    """An audit of a task's output: a recheck's of a done task, or a fresh one after its worker ran."""

    identity: TaskIdentity
    output: Any
    evidence: tuple[EvidenceView, ...] = ()
    auditor: Callable[[AuditContext], Verdict] | None = field(default=None, compare=False)


@dataclass(frozen=True, kw_only=True)
class TaskCall:
    """Everything an executor may know about one task run: plain data, keys, never the graph.

    ``worker`` / ``auditor`` carry plain callables for tasks declared with ``run=`` / ``audit=``
    (they cannot be checkpointed and only an in-process executor can run them).
    """

    identity: TaskIdentity
    inputs: MappingProxyType[str, Any]
    evidence: tuple[EvidenceView, ...] = ()
    worker: Callable[[RunContext], Any] | None = field(default=None, compare=False)
    auditor: Callable[[AuditContext], Verdict] | None = field(default=None, compare=False)

    @property
    def audited(self) -> bool:
        """True when the task has an auditor (a key or a plain callable)."""
        return self.identity.auditor_key is not None or self.auditor is not None

    def audit(self, output: Any) -> AuditCall:
        """The audit of this run's ``output``, for once its worker has succeeded."""
        return AuditCall(identity=self.identity, output=output, evidence=self.evidence, auditor=self.auditor)


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
    reads: tuple[FactRead, ...] = ()


class Executor(Protocol):
    """Runs layers of task calls and audits; returns outcomes in call order."""

    def run_layer(self, calls: Sequence[TaskCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        """Run every call's worker, then its auditor."""
        ...

    def run_audits(self, calls: Sequence[AuditCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        """Run every call's auditor against its recorded output."""
        ...

"""What user code sees: a worker's RunContext and an auditor's AuditContext, both plain data.

Workers and auditors never touch the live graph. A worker gets its task's name, attempt, worker
key, the outputs of the tasks it needs and the statement of the assumption it stands on. An
auditor gets the same plus the task's output and a read-only list of submitted evidence, and must
return one of three verdicts:

* ``ctx.ok(note)`` — the output stands;
* ``ctx.fail(reason)`` — the output is wrong: this task fails, nothing else moves;
* ``ctx.disproved(reason, cite=…)`` — the *ground* is false: evidence is recorded (or an existing
  piece cited), the assumption is rejected, and its whole closure falls.

The difference matters because the blast radii differ; an engine should not have to guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

__all__ = ["AuditContext", "EvidenceView", "RunContext", "Verdict", "VerdictKind"]

VerdictKind = Literal["ok", "fail", "disproved"]


@dataclass(frozen=True)
class Verdict:
    """An auditor's judgement. ``cite`` names submitted evidence a disproof rests on."""

    kind: VerdictKind
    reason: str
    cite: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {"kind": self.kind, "reason": self.reason, "cite": self.cite}


@dataclass(frozen=True)
class EvidenceView:
    """A submitted observation as an auditor sees it (a copy, not the node)."""

    id: str
    text: str
    source_id: str
    external_id: str | None
    metadata: MappingProxyType[str, Any]


@dataclass(frozen=True)
class RunContext:
    """A worker's view of its task."""

    plan: str
    task: str
    attempt: int
    worker_key: str
    assumption: str
    inputs: MappingProxyType[str, Any]


@dataclass(frozen=True)
class AuditContext:
    """An auditor's view: the task, its output, its ground, and the evidence submitted so far."""

    plan: str
    task: str
    attempt: int
    worker_key: str
    auditor_key: str
    assumption: str
    output: Any
    evidence: tuple[EvidenceView, ...] = field(default=())

    def ok(self, note: str = "") -> Verdict:
        """The output stands."""
        return Verdict("ok", note or "ok")

    def fail(self, reason: str) -> Verdict:
        """The output is wrong: this task fails."""
        return Verdict("fail", reason)

    def disproved(self, reason: str, *, cite: str | None = None) -> Verdict:
        """The ground is false: reject the assumption (citing submitted evidence when given)."""
        return Verdict("disproved", reason, cite)

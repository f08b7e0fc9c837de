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

A worker may read world facts through its context: ``ctx.read(source, name)`` asks the fact source
registered under ``source`` for the fact ``name`` and records the read (a :class:`FactRead`: the
source, the name and the digest of the value), so the engine knows what the decision rests on and
makes exactly its readers stale when the fact changes (ADR 0018). A read that does not go through
the context — a global, a file, a network call — is invisible to the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from contextmesh.core.canonical import digest
from contextmesh.core.errors import ExecutionError

__all__ = ["AuditContext", "EvidenceView", "FactRead", "RunContext", "Verdict", "VerdictKind"]

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
class FactRead:
    """One tracked read: which fact of which source, and the digest of the value it gave."""

    source: str
    name: str
    digest: str

    def to_dict(self) -> dict[str, str]:
        """Plain data (how a read travels back from an orchestrator's task run)."""
        return {"source": self.source, "name": self.name, "digest": self.digest}

    @classmethod
    def from_dict(cls, data: Any) -> FactRead:
        """The read :meth:`to_dict` wrote; anything else is refused."""
        if not isinstance(data, dict) or set(data) != {"source", "name", "digest"}:
            raise ExecutionError(f"a tracked read is {{source, name, digest}}, not {data!r}")
        if not all(isinstance(data[k], str) for k in ("source", "name", "digest")):
            raise ExecutionError(f"a tracked read's source, name and digest are text, not {data!r}")
        return cls(data["source"], data["name"], data["digest"])


FactReader = Callable[[str, str], Any]
"""How a context reaches the fact sources: ``reader(source, name)`` returns the fact's value."""


@dataclass(frozen=True)
class RunContext:
    """A worker's view of its task; ``read(source, name)`` reads a world fact and records the read."""

    plan: str
    task: str
    attempt: int
    worker_key: str
    assumption: str
    inputs: MappingProxyType[str, Any]
    reader: FactReader | None = field(default=None, repr=False, compare=False)
    reads: list[FactRead] = field(default_factory=list, repr=False, compare=False)

    def read(self, source: str, name: str) -> Any:
        """The fact ``name`` of the fact source ``source``, recorded as a dependency of this task's decision."""
        if self.reader is None:
            raise ExecutionError(
                f"task '{self.task}' read fact '{name}' of '{source}', but this context reaches no fact sources "
                "(the engine builds one from the plan's registry)"
            )
        if not isinstance(source, str) or not isinstance(name, str) or not name:
            raise ExecutionError(f"ctx.read takes a source key and a fact name (text), not {source!r}, {name!r}")
        value = self.reader(source, name)
        self.reads.append(FactRead(source, name, digest(value)))
        return value


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

"""The five controlled writes, each committed through a lossless clone of the served session.

* ``mesh_submit_evidence`` stores a raw observation attributed to a source: no verdict, no target.
* ``mesh_recheck`` asks the deployment's registered auditors to interpret current state; through
  MCP a disproof must cite submitted evidence (the observation it interprets).
* ``mesh_repair`` moves a stale or failed task onto new ground and another *registered* key.
* ``mesh_resume`` runs one round over pending and stale work whose ground stands, nothing else;
* ``mesh_rerun_from`` re-runs a done task and all downstream of it (:mod:`contextmesh.mcp.rerun_tool`).

The commit-through-clone rule (:func:`commit_through_clone`):

1. refuse unless the served session is durable and writable (an ephemeral ``--demo`` graph or a
   ``--checkpoint never`` session refuses every write);
2. build a lossless clone — graph, resolver and plan restored from their own bytes against the
   same registry, the run ledger from its bytes with ``expect_head`` = the current head — carrying
   the served session's journal (``Session.carry_journal``), so its commit writes one segment of
   what changed (ADR 0020), not a snapshot;
3. run the mutation on the clone; a mutation that changed nothing commits nothing;
4. commit the clone (compare-and-swap); on a conflict reload the newer generation and replay the
   mutation on a fresh clone of it, a bounded number of times;
5. only then does the clone become the served session. Any failure before that leaves the served
   session byte-identical: the clone is dropped.

No published input schema names an edge, a verdict, a target, a status, code or a registry
(:data:`FORBIDDEN_INPUT_NAMES`, tested against the schemas the server publishes): belief changes
only through the engine interpreting what was submitted, and code only through keys the
deployment registered.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import Field

from contextmesh.belief.evidence import Submission, submit
from contextmesh.core.errors import ContextMeshError
from contextmesh.execution.plan import Plan, RoundReport, TaskState
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.knowledge.revisions import current_revisions
from contextmesh.mcp.evidence_arguments import (
    DocumentName,
    DocumentText,
    EvidenceText,
    ExternalId,
    Metadata,
    Origin,
    SourceId,
    Title,
)
from contextmesh.mcp.models import (
    AnyJson,
    EvidenceOut,
    RecheckResult,
    RepairResult,
    ResumeResult,
    SubmitResult,
    result_of,
)
from contextmesh.mcp.quoting import quote
from contextmesh.mcp.read_tools import ToolSpec
from contextmesh.mcp.rerun_tool import mesh_rerun_from
from contextmesh.mcp.served_session import ServedSession
from contextmesh.mcp.write_clone import ControlledWriteError, clone_session, commit_through_clone, require_writable
from contextmesh.mcp.write_dispatch import Dispatcher
from contextmesh.project.sourced_evidence import add_evidence
from contextmesh.session.ingest_session import ingest_text_into
from contextmesh.session.plan_check import plan_of
from contextmesh.session.session import Session

__all__ = [
    "FORBIDDEN_INPUT_NAMES",
    "WRITE_TOOLS",
    "ControlledWriteError",
    "clone_session",
    "commit_through_clone",
    "mesh_recheck",
    "mesh_repair",
    "mesh_resume",
    "mesh_submit_evidence",
    "recheck_in_process",
    "resume_in_process",
    "with_registered_keys",
]

FORBIDDEN_INPUT_NAMES = frozenset(
    {
        "edge",
        "edge_type",
        "target",
        "target_id",
        "assumption_id",
        "verdict",
        "reject",
        "invalidate",
        "status",
        "run",
        "audit",
        "callable",
        "module",
        "module_path",
        "import",
        "registry",
    }
)
_RETRIES = 3
T = TypeVar("T")
W = TypeVar("W", RecheckResult, ResumeResult)


def _runner_of(session: Session) -> Plan:
    return plan_of(session, "recheck, repair and resume work on a session saved with one", where="this session")


def _head(session: Session) -> str | None:
    return None if session.runner is None else session.runner.ledger.head


def _dispatched_or_here(
    served: ServedSession, dispatch: Callable[[Dispatcher, Session], W], here: Callable[[ServedSession], W]
) -> W:
    """A write the launcher may dispatch: to its dispatcher when it has one, else in this process.

    Whether there is a dispatcher was decided once, when the launcher started
    (:func:`contextmesh.mcp.deployment_dispatcher.dispatcher_for`); a dispatcher never falls back
    to running here. A dispatched run commits to the directory itself, so the served session is
    refreshed before the result names its generation.
    """
    require_writable(served)
    if served.dispatcher is None:
        return here(served)
    _runner_of(served.session)
    result = dispatch(served.dispatcher, served.session)
    served.refresh()
    return result.model_copy(update={"generation": served.session.generation})


# -- argument types ----------------------------------------------------------------------------------

TaskName = Annotated[str, Field(min_length=1, max_length=200, description="a task of the session's plan")]
Key = Annotated[str, Field(min_length=1, max_length=200, description="a worker key registered in this deployment")]
OptionalKey = Annotated[
    str | None, Field(min_length=1, max_length=200, description="a registered auditor key (default: keep)")
]
Statement = Annotated[
    str, Field(min_length=1, max_length=2000, description="what the repaired task assumes: its new ground")
]
Products = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=300)]] | None,
    Field(max_length=50, description="artefacts the task produces (default: keep)"),
]
Rationale = Annotated[str | None, Field(max_length=4000, description="why (default: keep)")]


def with_registered_keys(schema: dict[str, Any], registry: TaskRegistry | None) -> dict[str, Any]:
    """``mesh_repair``'s input schema with the served registry's keys as enums on ``worker_key`` and
    ``auditor_key``, so a client can pick a key without guessing. A key outside them is still
    refused by the registry itself; without a registry (no plan) the schema stays as it is."""
    if registry is None:
        return schema
    keys = registry.describe()
    published = copy.deepcopy(schema)
    properties = published["properties"]
    for name, listed in (("worker_key", keys["workers"]), ("auditor_key", keys["auditors"])):
        if not listed:
            continue
        field = properties[name]
        branch = next((b for b in field.get("anyOf", ()) if b.get("type") == "string"), field)
        branch["enum"] = list(listed)
        field["description"] = (
            f"{field['description']}; the enum lists all {len(listed)} (contextmesh://session: served.registry)"
        )
    return published


# -- the writes ------------------------------------------------------------------------------------


def _stored(
    session: Session,
    text: str,
    source_id: str | None,
    origin: str | None,
    title: str | None,
    external_id: str | None,
    metadata: dict[str, AnyJson] | None,
) -> tuple[Submission, bool]:
    """The observation stored from ``source_id`` or from the source at ``origin`` (found or made)."""
    if (source_id is None) == (origin is None):
        raise ControlledWriteError(
            "name the source exactly once: source_id (an existing 'source:…' node) or origin (where the "
            "observation lives; a new source is recorded when none has it)"
        )
    if title is not None and origin is None:
        raise ControlledWriteError("title names a new source, so it goes with origin, not source_id")
    try:
        if origin is not None:
            sourced = add_evidence(
                session.graph, text, origin=origin, title=title, external_id=external_id, metadata=metadata
            )
            return sourced.submission, sourced.source_created
        assert source_id is not None
        return submit(session.graph, text, source_id, external_id=external_id, metadata=metadata), False
    except ContextMeshError as exc:
        raise ControlledWriteError(str(exc)) from None


def mesh_submit_evidence(
    served: ServedSession,
    text: EvidenceText,
    source_id: SourceId = None,
    origin: Origin = None,
    title: Title = None,
    external_id: ExternalId = None,
    metadata: Metadata = None,
    document: DocumentText = None,
    document_name: DocumentName = None,
) -> SubmitResult:
    """Store a raw observation from a source named once: source_id, origin (found, or new with title)
    or document with document_name (ingested; a changed one is a revision superseding its removed
    claims, and tasks resting on them go stale). It names no verdict and no target: the registered
    auditors decide (mesh_recheck). The same payload again returns the same evidence, commits nothing."""
    if sum(named is not None for named in (source_id, origin, document)) != 1:
        raise ControlledWriteError(
            "name where the observation came from exactly once: source_id (an existing 'source:…' node), "
            "origin (where it lives; a new source is recorded when none has it), or document with document_name"
        )
    if (document is None) != (document_name is None):
        raise ControlledWriteError("document and document_name go together: the text and the name it is kept under")

    def mutate(session: Session) -> tuple[SubmitResult, bool]:
        ingested: dict[str, Any] = {}
        if document is not None:
            try:
                source, ingested = _evidence_source(session, source_id, document, document_name)
                stored = submit(session.graph, text, source, external_id=external_id, metadata=metadata)
            except ContextMeshError as exc:
                raise ControlledWriteError(str(exc)) from None
            source_created = False
        else:
            stored, source_created = _stored(session, text, source_id, origin, title, external_id, metadata)
        node = stored.node
        attrs = node.attrs
        meta = attrs.get("metadata")
        external = attrs.get("external_id")
        out = SubmitResult(
            evidence_id=node.id,
            created=stored.created,
            committed=False,
            generation=session.generation,
            source_created=source_created,
            node=EvidenceOut(
                id=node.id,
                type="evidence",
                label=node.label,
                source_id=node.provenance.source_id if node.provenance else str(source_id),
                external_id=external if isinstance(external, str) else None,
                metadata=meta if isinstance(meta, dict) else {},
            ),
            **ingested,
        )
        return out, stored.created or source_created or bool(ingested.get("document_wrote"))

    result, committed = commit_through_clone(served, mutate)
    return result.model_copy(update={"committed": committed, "generation": served.session.generation})


def _evidence_source(
    session: Session, source_id: str | None, document: str | None, name: str | None
) -> tuple[str, dict[str, Any]]:
    """The source the evidence is attributed to, and what ingesting its document did (nothing without one)."""
    if document is None or name is None:
        assert source_id is not None
        return source_id, {}
    result, stale = ingest_text_into(session, name, document)
    revision = current_revisions(session.graph)[name].id
    return revision, {
        "document_revision": revision,
        "document_wrote": result.wrote,
        "superseded": [s.claim_id for s in result.fallout.superseded],
        "stale": stale,
    }


def recheck_in_process(served: ServedSession) -> RecheckResult:
    """The in-process recheck, committed through a clone."""
    _runner_of(served.session)

    def mutate(session: Session) -> tuple[RecheckResult, bool]:
        report = _runner_of(session).recheck()
        for invalidation in report.invalidations:
            cited = session.graph.nodes.get(invalidation.evidence_id or "")
            if cited is None or cited.attrs.get("kind") != "observation":
                raise ControlledWriteError(
                    f"an auditor disproved '{invalidation.statement}' without citing submitted evidence; through "
                    "MCP a disproof must cite the observation it interprets (submit it with mesh_submit_evidence); "
                    "nothing was committed"
                )
        out = result_of(
            RecheckResult, report, ledger_head=_head(session), generation=session.generation, committed=True
        )
        return out, True

    result, _ = commit_through_clone(served, mutate)
    return result.model_copy(update={"generation": served.session.generation})


def mesh_recheck(served: ServedSession) -> RecheckResult:
    """Ask the deployment's registered auditors to look at the world and at submitted evidence
    again. An auditor may disprove a task's ground only by citing submitted evidence; a disproof
    rejects that assumption and invalidates exactly what stood on it (those tasks become stale).
    Executes no task."""
    return _dispatched_or_here(served, lambda dispatcher, session: dispatcher.recheck(session), recheck_in_process)


def mesh_repair(
    served: ServedSession,
    task: TaskName,
    worker_key: Key,
    assumes: Statement,
    auditor_key: OptionalKey = None,
    produces: Products = None,
    rationale: Rationale = None,
) -> RepairResult:
    """Repair a stale or failed task: ground it on a new statement (which supersedes the fallen
    one) and switch it to another worker key the deployment registered. Runs nothing; mesh_resume
    runs it."""
    require_writable(served)
    runner = _runner_of(served.session)
    current = runner.tasks.get(task)
    if current is None:
        raise ControlledWriteError(f"no task {quote(task)} in plan '{runner.name}'; it has {', '.join(runner.tasks)}")
    if current.state not in {TaskState.STALE, TaskState.FAILED}:
        raise ControlledWriteError(
            f"task {quote(task)} is {current.state.value}, not stale or failed; controlled repair does not replace "
            "healthy or unstarted work"
        )
    registry = served.session.registry
    assert registry is not None  # a session with a plan was loaded with its registry
    try:
        registry.lookup_worker(worker_key)
        if auditor_key is not None:
            registry.lookup_auditor(auditor_key)
    except ContextMeshError as exc:
        raise ControlledWriteError(str(exc)) from None
    replaces = current.assumption_id

    def mutate(session: Session) -> tuple[RepairResult, bool]:
        plan = _runner_of(session)
        try:
            repaired = plan.repair(
                task,
                assumes=assumes,
                worker_key=worker_key,
                auditor_key=auditor_key,
                produces=produces,
                rationale=rationale,
            )
        except ContextMeshError as exc:
            raise ControlledWriteError(str(exc)) from None
        out = RepairResult(
            task=repaired.name,
            state=repaired.state.value,
            worker_key=repaired.worker_key or worker_key,
            auditor_key=repaired.auditor_key,
            assumes=repaired.assumes,
            assumption_id=repaired.assumption_id,
            replaces=replaces,
            ledger_head=_head(session),
            generation=session.generation,
        )
        return out, True

    result, _ = commit_through_clone(served, mutate)
    return result.model_copy(update={"generation": served.session.generation})


def _resume_result(session: Session, report: RoundReport, changed: bool) -> ResumeResult:
    return result_of(ResumeResult, report, changed=changed, ledger_head=_head(session), generation=session.generation)


def resume_in_process(served: ServedSession) -> ResumeResult:
    """The in-process resume, committed through a clone; nothing runnable commits nothing."""
    runner = _runner_of(served.session)
    blocked = runner.blocked()
    runnable = [
        t.name
        for t in runner.tasks.values()
        if t.state in {TaskState.PENDING, TaskState.STALE} and t.name not in blocked
    ]
    if not runnable:
        idle = RoundReport(
            runner.round,
            cached=[t.name for t in runner.tasks.values() if t.state is TaskState.DONE],
            blocked=blocked,
            failed={t.name: t.error or "failed" for t in runner.tasks.values() if t.state is TaskState.FAILED},
        )
        return _resume_result(served.session, idle, False)

    def mutate(session: Session) -> tuple[ResumeResult, bool]:
        report = _runner_of(session).run(include_failed=False)
        return _resume_result(session, report, True), True

    result, _ = commit_through_clone(served, mutate)
    return result.model_copy(update={"generation": served.session.generation})


def mesh_resume(served: ServedSession) -> ResumeResult:
    """Run one round of the plan over its pending and stale tasks whose ground stands — the work an
    invalidation felled, once repaired — and nothing else: done work stays cached, failed work
    waits for a repair. With nothing to run, it commits nothing."""
    return _dispatched_or_here(served, lambda dispatcher, session: dispatcher.resume(session), resume_in_process)


WRITE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("mesh_submit_evidence", mesh_submit_evidence, False, "Submit an observation"),
    ToolSpec("mesh_recheck", mesh_recheck, False, "Recheck with the registered auditors"),
    ToolSpec("mesh_repair", mesh_repair, False, "Repair a task onto a registered key"),
    ToolSpec("mesh_resume", mesh_resume, False, "Resume pending and stale work"),
    ToolSpec("mesh_rerun_from", mesh_rerun_from, False, "Re-run a task and all downstream of it"),
)

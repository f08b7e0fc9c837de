"""``mesh_rerun_from``: the fifth controlled write — re-run a task whose output is suspect (ADR 0019 §7).

A client names one task of the served plan, and nothing else: the code that runs is the registered
keys' of the tasks in its closure, and no input names a key, an edge, a verdict or a target. With
``dry_run`` it returns the preview (the closure, other runnable work, what is blocked) and changes
nothing. Otherwise it runs exactly that, the way ``mesh_resume`` runs: on the session's plan
deployment (mode ``rerun``) when the launcher dispatches, else in this process committed through a
lossless clone (:func:`~contextmesh.mcp.write_tools.commit_through_clone`). The ledger records who
asked: ``mcp:client`` (:data:`ASKED_BY`).
"""

from __future__ import annotations

from types import ModuleType
from typing import Annotated, Any

from pydantic import Field

from contextmesh.core.errors import ContextMeshError
from contextmesh.execution.plan import Plan
from contextmesh.execution.reports import RoundReport
from contextmesh.execution.rerun import RerunPreview
from contextmesh.mcp.models import FlowRunOut, InvalidationOut, _Out
from contextmesh.mcp.served_session import ServedSession
from contextmesh.session.session import Session

__all__ = ["ASKED_BY", "RerunResult", "mesh_rerun_from"]

# Who asked, as the ledger records it. The tools are handed the served session, not the MCP
# connection, so a client's own name is not known here: every MCP rerun is recorded as this.
ASKED_BY = "mcp:client"

TaskName = Annotated[str, Field(min_length=1, max_length=200, description="a task of the session's plan")]
DryRun = Annotated[bool, Field(description="only say what would run (the closure); change nothing")]


class RerunResult(_Out):
    """A rerun from a task: the prediction, and — unless a dry run — the round that ran it."""

    task: str
    closure: list[str]
    also: list[str]
    predicted: list[str]
    dry_run: bool
    asked_by: str
    round: int
    executed: list[str]
    cached: list[str]
    blocked: dict[str, str]
    failed: dict[str, str]
    invalidations: list[InvalidationOut]
    exact: bool | None = Field(description="whether what executed is exactly the prediction (null: not run yet)")
    changed: bool
    ledger_head: str | None
    generation: int
    flow_run: FlowRunOut | None = None


def _result(
    preview: RerunPreview, report: RoundReport | None, asked_by: str, session: Session, **context: Any
) -> RerunResult:
    ran = report if report is not None else RoundReport(0)
    runner = session.runner
    fields: dict[str, Any] = {
        "ledger_head": None if runner is None else runner.ledger.head,
        "generation": session.generation,
        "changed": report is not None,
        **context,
    }
    return RerunResult(
        task=preview.task,
        closure=preview.closure,
        also=preview.also,
        predicted=preview.predicted,
        dry_run=report is None and "flow_run" not in context,
        asked_by=asked_by,
        round=ran.round,
        executed=ran.executed,
        cached=ran.cached,
        blocked=ran.blocked,
        failed=ran.failed,
        invalidations=InvalidationOut.receipts(ran.invalidations),
        exact=None if report is None else sorted(ran.executed) == sorted(preview.predicted),
        **fields,
    )


def _writes() -> ModuleType:
    """The controlled writes' module, whose clone-and-commit this write shares. Imported on use:
    that module lists this write among its tools, so importing it at the top would be a cycle."""
    from contextmesh.mcp import write_tools  # noqa: PLC0415

    return write_tools


def _refused(text: str) -> Exception:
    error: Exception = _writes().ControlledWriteError(text)
    return error


def _preview(runner: Plan, task: str) -> RerunPreview:
    try:
        return runner.rerun_preview(task)
    except ContextMeshError as exc:
        raise _refused(str(exc)) from None


def mesh_rerun_from(served: ServedSession, task: TaskName, dry_run: DryRun = False) -> RerunResult:
    """Re-run a task whose output is suspect, and every done task downstream of it (its closure),
    with the deployment's registered keys. dry_run only says what would run. The ledger records that
    this client asked. Dispatched to a deployment, it returns the flow run (follow its page)."""
    writes = _writes()
    writes.require_writable(served)
    asked_by = ASKED_BY
    preview = _preview(writes._runner_of(served.session), task)
    if dry_run:
        return _result(preview, None, asked_by, served.session)
    dispatcher = served.dispatcher
    record = getattr(dispatcher, "record", None)
    if dispatcher is not None:
        if record is None:
            raise _refused(f"mesh_rerun_from cannot be dispatched to {dispatcher.name}; nothing ran")
        return _dispatched(served, preview, asked_by, record, float(getattr(dispatcher, "wait", 0.0)))

    def mutate(session: Session) -> tuple[RerunResult, bool]:
        try:
            report = writes._runner_of(session).rerun_from(task, asked_by=asked_by)
        except ContextMeshError as exc:
            raise _refused(str(exc)) from None
        return _result(preview, report, asked_by, session), True

    result: RerunResult = writes.commit_through_clone(served, mutate)[0]
    return result.model_copy(update={"generation": served.session.generation})


def _dispatched(served: ServedSession, preview: RerunPreview, asked_by: str, record: Any, wait: float) -> RerunResult:
    """The rerun as a flow run of the plan deployment ``record`` names; its report once it ended."""
    from contextmesh.orchestration import deployed  # noqa: PLC0415 - Prefect only when dispatching
    from contextmesh.orchestration.runs_here import dispatched_report  # noqa: PLC0415

    if not served.dispatcher or not served.dispatcher.answering():
        raise _refused("mesh_rerun_from: the deployment is not answering; nothing was started")
    try:
        done = deployed.dispatch_rerun(record, task=preview.task, asked_by=asked_by, wait=wait)
    except Exception as exc:  # the API or the deployment: say which, never run here instead
        raise _refused(f"the rerun could not be dispatched to {record.plan}: {exc}") from None
    flow_run = FlowRunOut(id=done.flow_run_id, url=done.url, state=done.state_name, completed=done.finished)
    if not done.finished:
        return _result(preview, None, asked_by, served.session, flow_run=flow_run)
    if done.state != "COMPLETED":
        raise _refused(f"the rerun flow run ended {done.state_name}: {done.message} ({done.url})")
    report = dispatched_report(record, done.flow_run_id)
    served.refresh()
    if not isinstance(report, RoundReport):
        raise _refused(f"the rerun flow run {done.url} published no round report")
    return _result(preview, report, asked_by, served.session, flow_run=flow_run)

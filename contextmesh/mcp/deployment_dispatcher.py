"""``mesh_recheck`` and ``mesh_resume`` as flow runs of a served session's deployments.

:class:`PrefectDispatcher` is the :class:`~contextmesh.mcp.write_dispatch.Dispatcher` the MCP launcher
(``deployments/serve_mcp.py``) passes when ``deployments/serve.py`` serves the session (its served
record, :mod:`contextmesh.orchestration.served_record`). A call starts the recheck deployment, or the plan
deployment in resume mode (:mod:`contextmesh.orchestration.deployed`), and waits a bounded time:

* the run finished ``Completed``: the report is read back from what the run **committed** — the
  flow run's own result is not persisted. The run names itself ``<plan> · round <n>`` (``· recheck``)
  after its commit, and the round's ledger entries say the rest: executed, cached, blocked, failed,
  the disproofs with their receipts, what fell. A recheck's quiet audits are the grounds stamped
  ``checked_round = n``. Task states come from the session as the run left it;
* the run is still going when the wait ends: the report of the session as it stands (nothing new
  committed) with the flow run's id, UI address and state, ``completed`` false;
* the run ended ``Failed``, ``Crashed`` or ``Cancelled``: an error naming the state, its message
  and the run's address — it committed nothing, and nothing is retried here.

:meth:`PrefectDispatcher.answering` is a cached probe (:class:`~contextmesh.mcp.write_dispatch.ProbeCache`,
a few seconds' TTL): the served record still names a live ``serve.py`` for this directory, the API
answers ``/health``, and the recheck and plan deployments exist. A call made while it says no is
refused at once; a dispatcher never falls back to running in-process.

The Prefect calls themselves are :class:`~contextmesh.orchestration.deployment_calls.DeploymentCalls`;
this module builds the MCP result models from what they return.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from contextmesh.core.errors import ContextMeshError, ExecutionError
from contextmesh.execution.plan import TaskState
from contextmesh.formats.run_ledger import LedgerEntry
from contextmesh.mcp.models import FlowRunOut, InvalidationOut, RecheckResult, ResumeResult
from contextmesh.mcp.write_dispatch import DEFAULT_PROBE_TTL, ProbeCache
from contextmesh.orchestration import deployed
from contextmesh.orchestration.deployment_calls import DEFAULT_WAIT, PROBE_TIMEOUT, DeploymentCalls, round_of
from contextmesh.orchestration.served_record import ServedRecord
from contextmesh.session.session import Session

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = ["DEFAULT_WAIT", "PROBE_TIMEOUT", "PrefectDispatcher", "round_of"]

_RECEIPT_FIELDS = (
    "blast_radius",
    "invalidated",
    "invalidated_edges",
    "preserved_count",
    "preserved",
    "preserved_digest",
    "replacement_id",
)
T = TypeVar("T")


class PrefectDispatcher:
    """Recheck and resume dispatched to the deployments ``serve.py`` serves for one session."""

    def __init__(
        self,
        record: ServedRecord,
        *,
        wait: float = DEFAULT_WAIT,
        feed: str | None = None,
        home: Path | None = None,
        probe_ttl: float = DEFAULT_PROBE_TTL,
        probe_timeout: float = PROBE_TIMEOUT,
    ) -> None:
        if not wait > 0:
            raise ExecutionError(f"a dispatch waits a positive number of seconds, not {wait!r}")
        self.record = record
        self.wait = wait
        self.feed = feed  # None: the deployment's own advisory feed (serve.py --feed)
        self.home = home
        self.probe_timeout = probe_timeout
        self.calls = DeploymentCalls(record, home=home, probe_timeout=probe_timeout)
        self._probe = ProbeCache(self.probe, ttl=probe_ttl)

    # -- the Dispatcher protocol ------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The deployments and the UI they run in, for the banner and ``contextmesh://session``."""
        return f"Prefect deployments {self.record.recheck} and {self.record.plan} at {self.record.ui_url}"

    @property
    def probes(self) -> int:
        """How many times the API was actually probed (the rest were answered from cache)."""
        return self._probe.probes

    def answering(self) -> bool:
        """The cached answer of :meth:`probe`."""
        return self._probe.answering()

    def probe(self) -> bool:
        """One uncached probe: ``serve.py`` alive for this directory, ``/health``, both deployments."""
        return self.calls.probe()

    def recheck(self, session: Session) -> RecheckResult:
        """Start the recheck flow run, wait, and report what it committed (or that it still runs)."""
        runner = self._usable(session, "mesh_recheck")
        done = self._dispatch(
            "recheck",
            self.record.recheck,
            lambda: self.calls.start_recheck(feed=self.feed, wait=self.wait),
        )
        flow_run = _flow_run(done)
        if not done.finished:
            return RecheckResult(
                round=runner.round,
                audited=[],
                audit_errors={},
                failed={},
                stale=[],
                invalidations=[],
                ledger_head=runner.ledger.head,
                generation=session.generation,
                committed=False,
                flow_run=flow_run,
            )
        after, round_, entries = self._committed(session, done)
        return _recheck_report(after, round_, entries, flow_run)

    def resume(self, session: Session) -> ResumeResult:
        """Start (or find) the resume of the session's ledger head, wait, and report its round."""
        runner = self._usable(session, "mesh_resume")
        done = self._dispatch(
            "resume",
            self.record.plan,
            lambda: self.calls.start_resume(session, feed=self.feed, wait=self.wait),
        )
        flow_run = _flow_run(done)
        if not done.finished:
            return ResumeResult(
                round=runner.round,
                layers=[],
                executed=[],
                cached=[],
                blocked={},
                failed={},
                stale=[],
                invalidations=[],
                changed=False,
                ledger_head=runner.ledger.head,
                generation=session.generation,
                flow_run=flow_run,
            )
        after, round_, entries = self._committed(session, done)
        return _resume_report(after, round_, entries, flow_run, changed=after.generation > session.generation)

    # -- the steps ------------------------------------------------------------------------------------

    def _usable(self, session: Session, tool: str) -> Plan:
        if session.runner is None:
            raise ExecutionError(f"{session.directory} holds no execution plan; {tool} has nothing to run")
        if session.directory is None or Path(session.directory).resolve() != Path(self.record.session_dir).resolve():
            raise ExecutionError(
                f"{tool}: the deployments serve {self.record.session_dir}, not {session.directory}; nothing was started"
            )
        if not self.answering():
            raise ExecutionError(
                f"{tool} dispatches to {self.name}, which is not answering (serve.py stopped, the API down, or "
                "the deployments missing); nothing was started and nothing runs in this process instead — "
                "start `python deployments/serve.py --session DIR` and try again"
            )
        return session.runner

    def _dispatch(self, what: str, deployment: str, start: Callable[[], T]) -> T:
        try:
            return start()
        except ContextMeshError:
            raise
        except Exception as exc:  # the API, the network or the deployment: say which call, never retry elsewhere
            raise ExecutionError(
                f"the {what} could not be dispatched to {deployment} at {self.record.api_url}: "
                f"{type(exc).__name__}: {exc}"
            ) from None

    def _committed(self, session: Session, done: deployed.Dispatched) -> tuple[Session, int, list[LedgerEntry]]:
        """The session as the finished run left it, the round it committed, and that round's entries."""
        if done.state != "COMPLETED":
            raise ExecutionError(
                f"the flow run ended {done.state_name}: {done.message or 'no message'}; it committed nothing "
                f"({done.url})"
            )
        assert session.directory is not None  # _usable checked it
        after = Session.load(Path(session.directory), registry=session.registry, flat=session.flat, policy="never")
        assert after.runner is not None
        name = self._dispatch("report", done.deployment, lambda: self.calls.flow_run_name(done.flow_run_id))
        round_ = round_of(name)
        if round_ is None:  # named otherwise (not by our flows): the newest round on record
            round_ = after.runner.ledger.entries[-1].round if len(after.runner.ledger) else after.runner.round
        return after, round_, [e for e in after.runner.ledger.entries if e.round == round_]


# -- reports from what a round committed ---------------------------------------------------------------


def _flow_run(done: deployed.Dispatched) -> FlowRunOut:
    return FlowRunOut(id=done.flow_run_id, url=done.url, state=done.state_name, completed=done.finished)


def _invalidation(receipt: dict[str, Any]) -> InvalidationOut:
    ground = receipt["ground"]
    return InvalidationOut.model_validate(
        {
            "assumption_id": ground["assumption_id"],
            "statement": ground["statement"],
            "evidence_id": receipt["evidence_id"],
            **{name: receipt[name] for name in _RECEIPT_FIELDS},
        }
    )


def _in_order(runner: Plan, names: set[str]) -> list[str]:
    return [name for name in runner.tasks if name in names]


def _fallen(runner: Plan, entries: list[LedgerEntry]) -> list[str]:
    """What a round's disproofs made stale: each disproved task, then what fell with it, in plan order."""
    disproved = [e.task for e in entries if e.event == "disproved" and e.task is not None]
    fell = {e.task for e in entries if e.event == "invalidated" and e.task is not None}
    fell |= {e.task for e in entries if e.event == "blocked" and e.run is not None and e.task is not None}
    stale = list(dict.fromkeys(disproved))
    stale += [name for name in _in_order(runner, fell) if name not in stale]
    return [name for name in stale if runner.tasks[name].state is TaskState.STALE]


def _head_of(runner: Plan, entries: list[LedgerEntry]) -> str | None:
    return entries[-1].digest if entries else runner.ledger.head


def _recheck_report(after: Session, round_: int, entries: list[LedgerEntry], flow_run: FlowRunOut) -> RecheckResult:
    runner = after.runner
    assert runner is not None
    graph = after.graph
    quiet = {
        name
        for name, task in runner.tasks.items()
        if task.assumption_id in graph.nodes and graph.node(task.assumption_id).attrs.get("checked_round") == round_
    }
    judged = {e.task for e in entries if e.event in {"disproved", "failed"} and e.task is not None}
    return RecheckResult(
        round=round_,
        audited=_in_order(runner, quiet | judged),
        audit_errors={e.task: e.detail for e in entries if e.event == "audit_error" and e.task is not None},
        failed={e.task: e.detail for e in entries if e.event == "failed" and e.task is not None},
        stale=_fallen(runner, entries),
        invalidations=[_invalidation(e.receipt) for e in entries if e.event == "disproved" and e.receipt],
        ledger_head=_head_of(runner, entries),
        generation=after.generation,
        committed=True,  # a recheck flow run that completed committed its round
        flow_run=flow_run,
    )


def _layers(runner: Plan, ran: list[str]) -> list[list[str]]:
    """The layers a round ran in: a task runs one layer after the latest of its needs that ran too."""
    depth: dict[str, int] = {}
    for name in runner.tasks:  # declaration order: needs are declared first
        if name in ran:
            depth[name] = 1 + max((depth[n] for n in runner.tasks[name].needs if n in depth), default=-1)
    return [[n for n in runner.tasks if depth.get(n) == level] for level in range(max(depth.values(), default=-1) + 1)]


def _resume_report(
    after: Session, round_: int, entries: list[LedgerEntry], flow_run: FlowRunOut, *, changed: bool
) -> ResumeResult:
    runner = after.runner
    assert runner is not None
    executed = [e.task for e in entries if e.event == "executed" and e.task is not None]
    failed = {e.task: e.detail for e in entries if e.event == "failed" and e.task is not None}
    stale = _fallen(runner, entries)
    ran = set(executed) | set(failed) | {e.task for e in entries if e.event == "disproved" and e.task is not None}
    ran |= {e.task for e in entries if e.event == "blocked" and e.run is not None and e.task is not None}
    return ResumeResult(
        round=round_,
        layers=_layers(runner, _in_order(runner, ran)),
        executed=executed,
        cached=[e.task for e in entries if e.event == "cached" and e.task is not None],
        blocked={e.task: e.detail for e in entries if e.event == "blocked" and e.run is None and e.task is not None},
        failed=failed,
        stale=stale,
        invalidations=[_invalidation(e.receipt) for e in entries if e.event == "disproved" and e.receipt],
        changed=changed,
        ledger_head=_head_of(runner, entries),
        generation=after.generation,
        flow_run=flow_run,
    )

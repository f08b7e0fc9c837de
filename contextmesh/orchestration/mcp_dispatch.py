"""``mesh_recheck`` and ``mesh_resume`` as flow runs of a served session's deployments.

:class:`PrefectDispatcher` is the :class:`~contextmesh.mcp.dispatch.Dispatcher` the MCP launcher
(``deployments/serve_mcp.py``) passes when ``deployments/serve.py`` serves the session (its served
record, :mod:`contextmesh.orchestration.served`). A call starts the recheck deployment, or the plan
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

:meth:`PrefectDispatcher.answering` is a cached probe (:class:`~contextmesh.mcp.dispatch.ProbeCache`,
a few seconds' TTL): the served record still names a live ``serve.py`` for this directory, the API
answers ``/health``, and the recheck and plan deployments exist. A call made while it says no is
refused at once; a dispatcher never falls back to running in-process.

This module and :mod:`contextmesh.orchestration.deployed` import Prefect only inside the calls
that talk to the API, so a launcher that never dispatches never pays for it. It sits at the
surface layer (it builds the MCP result models); ``tests/test_layering.py`` says so.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from contextmesh.errors import ContextMeshError, ExecutionError
from contextmesh.execution.plan import TaskState
from contextmesh.formats.ledger import LedgerEntry
from contextmesh.mcp.dispatch import DEFAULT_PROBE_TTL, ProbeCache
from contextmesh.mcp.models import FlowRunOut, InvalidationOut, RecheckResult, ResumeResult
from contextmesh.orchestration import deployed
from contextmesh.orchestration.served import ServedRecord, find
from contextmesh.orchestration.settings import client_settings
from contextmesh.session.session import Session

if TYPE_CHECKING:
    from contextmesh.execution.plan import Runner

__all__ = ["DEFAULT_WAIT", "PROBE_TIMEOUT", "PrefectDispatcher", "round_of"]

DEFAULT_WAIT = 60.0
PROBE_TIMEOUT = 2.0
_ROUND = re.compile(r" · round (\d+)(?: · recheck)?$")
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


def round_of(flow_run_name: str) -> int | None:
    """The round a plan or recheck flow run names itself after its commit (``<plan> · round <n>``)."""
    found = _ROUND.search(flow_run_name)
    return int(found.group(1)) if found else None


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
        record = self.record
        if find(record.session_id, Path(record.session_dir), self.home) is None:
            return False
        import prefect.settings as ps  # noqa: PLC0415 - Prefect only when probing
        from prefect.client.orchestration import get_client  # noqa: PLC0415

        # No retries: a probe that waits out Prefect's backoff is not a few seconds' answer.
        no_retries = ps.temporary_settings(updates={ps.PREFECT_CLIENT_MAX_RETRIES: 0})
        with (
            self._on(),
            no_retries,
            get_client(httpx_settings={"timeout": self.probe_timeout}, sync_client=True) as client,
        ):
            if client.api_healthcheck() is not None:
                return False
            for deployment in (record.recheck, record.plan):
                client.read_deployment_by_name(deployment)  # raises ObjectNotFound: down
        return True

    def recheck(self, session: Session) -> RecheckResult:
        """Start the recheck flow run, wait, and report what it committed (or that it still runs)."""
        runner = self._usable(session, "mesh_recheck")
        done = self._dispatch(
            "recheck",
            self.record.recheck,
            lambda: deployed.dispatch_recheck(self.record, feed=self.feed, wait=self.wait),
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
            lambda: deployed.dispatch_resume(self.record, session, feed=self.feed, wait=self.wait, origin="mcp"),
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

    @contextmanager
    def _on(self) -> Iterator[None]:
        with client_settings(self.record.api_url, heartbeat=False):
            yield

    def _usable(self, session: Session, tool: str) -> Runner:
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
        name = self._dispatch("report", done.deployment, lambda: self._flow_run_name(done.flow_run_id))
        round_ = round_of(name)
        if round_ is None:  # named otherwise (not by our flows): the newest round on record
            round_ = after.runner.ledger.entries[-1].round if len(after.runner.ledger) else after.runner.round
        return after, round_, [e for e in after.runner.ledger.entries if e.round == round_]

    def _flow_run_name(self, flow_run_id: str) -> str:
        from prefect.client.orchestration import get_client  # noqa: PLC0415

        with self._on(), get_client(sync_client=True) as client:
            return str(client.read_flow_run(uuid.UUID(flow_run_id)).name)


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


def _in_order(runner: Runner, names: set[str]) -> list[str]:
    return [name for name in runner.tasks if name in names]


def _fallen(runner: Runner, entries: list[LedgerEntry]) -> list[str]:
    """What a round's disproofs made stale: each disproved task, then what fell with it, in plan order."""
    disproved = [e.task for e in entries if e.event == "disproved" and e.task is not None]
    fell = {e.task for e in entries if e.event == "invalidated" and e.task is not None}
    fell |= {e.task for e in entries if e.event == "blocked" and e.run is not None and e.task is not None}
    stale = list(dict.fromkeys(disproved))
    stale += [name for name in _in_order(runner, fell) if name not in stale]
    return [name for name in stale if runner.tasks[name].state is TaskState.STALE]


def _head_of(runner: Runner, entries: list[LedgerEntry]) -> str | None:
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


def _layers(runner: Runner, ran: list[str]) -> list[list[str]]:
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

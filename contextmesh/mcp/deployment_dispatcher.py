"""``mesh_recheck`` and ``mesh_resume`` as flow runs of a served session's deployments.

:class:`PrefectDispatcher` is the :class:`~contextmesh.mcp.write_dispatch.Dispatcher` the MCP launcher
(``deployments/serve_mcp.py``) passes when ``deployments/serve.py`` serves the session (its served
record, :mod:`contextmesh.orchestration.served_record`; :func:`dispatcher_for` asks
:func:`~contextmesh.orchestration.write_target.served_target`, the rule the CLI follows too). A call
starts the recheck deployment, or the plan deployment in resume mode
(:mod:`contextmesh.orchestration.deployed`), and by default returns at once (``wait`` 0: the start
and one read of the run's state); a launcher may ask it to wait up to ``wait`` seconds instead:

* the run finished ``Completed`` in that time: the result is the run's **own report**, the artifact
  it published after its commit (:mod:`contextmesh.orchestration.run_report`, ADR 0008) — the
  engine's ``RecheckReport`` or ``RoundReport``, the generation it committed and the ledger head
  after it, turned into the tool's result exactly as the in-process write turns its report;
* the run is still going: the report of the session as it stands (nothing new committed) with the
  flow run's id, UI address and state, ``completed`` false — the handle. :meth:`PrefectDispatcher.follow`
  (the ``mesh_flow_run`` tool) reads the run again and, once it completed, returns that same report;
* the run ended ``Failed``, ``Crashed`` or ``Cancelled``: an error naming the state, its message
  and the run's address — it committed nothing, and nothing is retried here.

Handles are remembered by this process only: a restarted server follows none of the runs its
predecessor started (each run's page in the UI keeps its report).

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
from typing import TYPE_CHECKING, TypeVar

from contextmesh.core.errors import ContextMeshError, ExecutionError
from contextmesh.execution.plan import RecheckReport, RoundReport
from contextmesh.mcp.models import FlowRunOut, FlowRunReport, RecheckResult, ResumeResult, result_of
from contextmesh.mcp.quoting import quote
from contextmesh.mcp.write_dispatch import DEFAULT_PROBE_TTL, ProbeCache
from contextmesh.orchestration import deployed
from contextmesh.orchestration.deployment_calls import DEFAULT_WAIT, PROBE_TIMEOUT, DeploymentCalls, round_of
from contextmesh.orchestration.run_report import RunReport
from contextmesh.orchestration.served_record import ServedRecord
from contextmesh.orchestration.write_target import served_target
from contextmesh.session.plan_check import plan_of
from contextmesh.session.session import Session

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = ["DEFAULT_WAIT", "MCP_WAIT", "PROBE_TIMEOUT", "PrefectDispatcher", "dispatcher_for", "round_of"]

MCP_WAIT = 0.0  # an MCP write returns at once with its flow run's handle; mesh_flow_run follows it

T = TypeVar("T")


def dispatcher_for(
    session_dir: Path, *, wait: float | None = None, home: Path | None = None
) -> PrefectDispatcher | None:
    """The dispatcher to ``serve.py``'s deployments when it serves ``session_dir``, else None (in-process).

    The served record is looked up once, here; whether its API answers is the dispatcher's own
    probe, before every call. A directory that is not a session with a plan gets None: the MCP
    server loading it says what is wrong with it.
    """
    try:
        record = served_target(session_dir, "auto", check_api=False, home=home)
    except (ContextMeshError, OSError):
        return None
    if record is None:
        return None
    return PrefectDispatcher(record, wait=MCP_WAIT if wait is None else wait, home=home)


class PrefectDispatcher:
    """Recheck and resume dispatched to the deployments ``serve.py`` serves for one session."""

    def __init__(
        self,
        record: ServedRecord,
        *,
        wait: float = MCP_WAIT,
        feed: str | None = None,
        home: Path | None = None,
        probe_ttl: float = DEFAULT_PROBE_TTL,
        probe_timeout: float = PROBE_TIMEOUT,
    ) -> None:
        if not wait >= 0:
            raise ExecutionError(f"a dispatch waits a number of seconds from 0, not {wait!r}")
        self.record = record
        self.wait = wait
        self.feed = feed  # None: the deployment's own advisory feed (serve.py --feed)
        self.home = home
        self.probe_timeout = probe_timeout
        self.calls = DeploymentCalls(record, home=home, probe_timeout=probe_timeout)
        self._probe = ProbeCache(self.probe, ttl=probe_ttl)
        self._started: dict[str, tuple[str, int]] = {}  # flow-run id -> (recheck|resume, generation at start)

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
        self._started[done.flow_run_id] = ("recheck", session.generation)
        if not done.finished:
            return result_of(
                RecheckResult, RecheckReport(runner.round), **_as_it_stands(session, flow_run), committed=False
            )
        run = self._reported(done, RecheckReport)
        # A recheck flow run that completed committed its round.
        return result_of(RecheckResult, run.report, **_as_run_left_it(run, flow_run), committed=True)

    def resume(self, session: Session) -> ResumeResult:
        """Start (or find) the resume of the session's ledger head, wait, and report its round."""
        runner = self._usable(session, "mesh_resume")
        done = self._dispatch(
            "resume",
            self.record.plan,
            lambda: self.calls.start_resume(session, feed=self.feed, wait=self.wait),
        )
        flow_run = _flow_run(done)
        self._started.setdefault(done.flow_run_id, ("resume", session.generation))  # a found run keeps its start
        if not done.finished:
            return result_of(ResumeResult, RoundReport(runner.round), **_as_it_stands(session, flow_run), changed=False)
        run = self._reported(done, RoundReport)
        changed = run.generation > session.generation
        return result_of(ResumeResult, run.report, **_as_run_left_it(run, flow_run), changed=changed)

    def follow(self, flow_run_id: str, session: Session) -> FlowRunReport:
        """A run this dispatcher started: its state now and, once it completed, its report."""
        started = self._started.get(flow_run_id)
        if started is None:
            known = ", ".join(self._started) or "none yet"
            raise ExecutionError(
                f"no flow run {quote(flow_run_id)} was started by this server's mesh_recheck or mesh_resume (it "
                f"started: {known}); a restarted server forgets its handles, and each run's page at "
                f"{self.record.ui_url} keeps its report"
            )
        kind, generation = started
        deployment = self.record.recheck if kind == "recheck" else self.record.plan
        done = self._dispatch("state read", deployment, lambda: self.calls.observe(deployment, flow_run_id))
        flow_run = _flow_run(done)
        if not done.finished:
            return FlowRunReport(kind=kind, flow_run=flow_run, recheck=None, resume=None)
        if kind == "recheck":
            run = self._reported(done, RecheckReport)
            recheck = result_of(RecheckResult, run.report, **_as_run_left_it(run, flow_run), committed=True)
            return FlowRunReport(kind=kind, flow_run=flow_run, recheck=recheck, resume=None)
        run = self._reported(done, RoundReport)
        changed = run.generation > generation
        resume = result_of(ResumeResult, run.report, **_as_run_left_it(run, flow_run), changed=changed)
        return FlowRunReport(kind=kind, flow_run=flow_run, recheck=None, resume=resume)

    # -- the steps ------------------------------------------------------------------------------------

    def _usable(self, session: Session, tool: str) -> Plan:
        runner = plan_of(session, f"{tool} has nothing to run")
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
        return runner

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

    def _reported(self, done: deployed.Dispatched, kind: type[RoundReport] | type[RecheckReport]) -> RunReport:
        """The report the finished run published; a run that did not complete committed nothing.

        A recheck the deployment's limit turned away ends Completed-type but named ``Skipped`` (ADR
        0016): it never ran, so it published no report either.
        """
        if done.state != "COMPLETED" or done.state_name == "Skipped":
            raise ExecutionError(
                f"the flow run ended {done.state_name}: {done.message or 'no message'}; it committed nothing "
                f"({done.url})"
            )
        run = self._dispatch("report", done.deployment, lambda: self.calls.report(done.flow_run_id, url=done.url))
        if not isinstance(run.report, kind):
            raise ExecutionError(
                f"flow run {done.flow_run_id} published a {run.kind} report, not the {kind.__name__} of the "
                f"{done.deployment} run it was started as ({done.url})"
            )
        return run


def _flow_run(done: deployed.Dispatched) -> FlowRunOut:
    return FlowRunOut(id=done.flow_run_id, url=done.url, state=done.state_name, completed=done.finished)


def _as_it_stands(session: Session, flow_run: FlowRunOut) -> dict[str, object]:
    """The context of a run still going: nothing new committed, the session as this process holds it."""
    runner = session.runner
    return {
        "ledger_head": None if runner is None else runner.ledger.head,
        "generation": session.generation,
        "flow_run": flow_run,
    }


def _as_run_left_it(run: RunReport, flow_run: FlowRunOut) -> dict[str, object]:
    """The context of a finished run: the generation it committed and the ledger head after it."""
    return {"ledger_head": run.ledger_head, "generation": run.generation, "flow_run": flow_run}

"""Flow factories: a plan round and a recheck over a session directory, each one Prefect flow run.

``make_plan_flow(registry)`` and ``make_recheck_flow(registry)`` build flows bound to a deployment's
:class:`~contextmesh.execution.task_registry.TaskRegistry` (keys are looked up there, never imported).
Parameters and results are plain data, so a deployment, an automation or ``run_deployment`` can
start them.

A **plan flow run** (``session_dir``, ``mode`` ``run`` | ``resume`` | ``rerun`` with ``rerun_from``) is named
``<plan> · round <n>``. Under the session's concurrency limit it loads the session, re-emits
announcements still pending, runs one round through the Plan with a :class:`PrefectExecutor`
(``run``: every pending, stale or failed task whose ground stands; ``resume``: only the stale and
pending ones), commits by compare-and-swap, creates a ``<task> · cached`` run in state ``Cached``
for each untouched task (every one when the plan has at most 50 tasks, else the direct needs of the
tasks that ran), lists every task — blocked ones with their reasons, and no task run — in the table
artifact ``cm-round-<n>``, and announces the round's disproofs.

A **recheck flow run** (``session_dir``) is named ``<plan> · round <n> · recheck``: every standing
auditor as a ``<task> · audit`` run, nothing executed; a disproof is committed (rejection, receipt)
and then announced (:mod:`contextmesh.orchestration.announce`).

Every run returns its final state (ADR 0016, :mod:`contextmesh.orchestration.run_states`): Completed-type,
named for its outcome (``Blocked``, ``Disproved``, ``TaskFailed``, ``Completed``), with a message that
says what it did and why; calling a flow still returns the result dict (the state's data).

Invariants (``tests/orchestration/``):

1. Every flow run that mutates a session holds one slot of the Prefect global concurrency limit
   ``contextmesh-session-<session id>`` (limit 1, created when missing) from before it loads the
   session until after its commit, so two rounds never overlap.
2. One round is one flow run; no subflow per decision.
3. The session is loaded inside the limit and committed by compare-and-swap (``Session.apply``); a
   conflict with another writer re-plans the round on the newer generation (bounded), never merges.
4. Nothing Prefect-specific enters the graph: run ids go to the ledger only.
5. Plans of at most 50 tasks get every identity tag on their task runs and a ``Cached`` run per
   untouched task; larger plans get untagged task runs (see
   :mod:`contextmesh.orchestration.prefect_executor`, invariant 5) and ``Cached`` runs for the direct needs
   of what ran. Every flow run is tagged ``cm.plan:<plan>`` and ``cm.session:<session id>`` (flow-run
   tags cost nothing per task), and the round's table lists every task.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, cast

from prefect import Flow, flow
from prefect.client.schemas.objects import State
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture, wait
from prefect.task_runners import TaskRunner

from contextmesh.core.errors import ExecutionError
from contextmesh.execution.plan import Plan, RecheckReport, RoundReport
from contextmesh.execution.report_codec import recheck_report_from_dict, round_report_from_dict, to_dict
from contextmesh.execution.run_reasons import cached_reason, repair_message
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.orchestration.announce import Outbox
from contextmesh.orchestration.flow_options import (
    PLAN_FLOW,
    RECHECK_FLOW,
    REPAIR_FLOW,
    identify,
    plan_flow_options,
    recheck_flow_options,
    repair_flow_options,
)
from contextmesh.orchestration.prefect_executor import PrefectExecutor, cached_run, flow_run_id
from contextmesh.orchestration.resume import ResumeTrigger
from contextmesh.orchestration.round_table import behind, publish_round_table, why_links
from contextmesh.orchestration.run_links import artifact_url, flow_run_url
from contextmesh.orchestration.run_logs import log_loaded, log_round, run_logger
from contextmesh.orchestration.run_report import RunReport, publish_report
from contextmesh.orchestration.run_states import COMPLETED, final_state, recheck_state, round_state
from contextmesh.orchestration.run_watch import body_started
from contextmesh.orchestration.served_record import peek
from contextmesh.orchestration.skipped_rechecks import relabel_turned_away
from contextmesh.orchestration.slots import SLOT_LEASE_SECONDS, ensure_limit, limit_name, session_slot
from contextmesh.project.project import load_project
from contextmesh.session.plan_check import plan_of
from contextmesh.session.session import Session

__all__ = [
    "CACHED_RUNS_ALL_UP_TO",
    "PLAN_FLOW",
    "RECHECK_FLOW",
    "REPAIR_FLOW",
    "SLOT_LEASE_SECONDS",
    "cached_shown",
    "ensure_limit",
    "limit_name",
    "make_plan_flow",
    "make_recheck_flow",
    "make_repair_flow",
    "peek",
    "plan_flow_options",
    "recheck_flow_options",
    "recheck_report_from",
    "repair_flow_options",
    "round_report_from",
    "run_plan_round",
    "run_project_recheck",
    "run_project_repair",
    "run_project_round",
    "run_recheck",
    "run_repair",
    "session_slot",
]

CACHED_RUNS_ALL_UP_TO = 50
Mode = Literal["run", "resume", "rerun"]


# -- shared steps -------------------------------------------------------------------------------------


def _load(session_dir: str, registry: TaskRegistry) -> Session:
    session = Session.load(Path(session_dir), registry=registry)
    plan_of(session, where=session_dir)
    return session


def _with(session: Session, executor: PrefectExecutor) -> Plan:
    runner = plan_of(session)
    runner.executor = executor  # a reload after a conflict builds a fresh runner: bind it again
    executor.tagged = len(runner.tasks) <= CACHED_RUNS_ALL_UP_TO
    return runner


def _announce(
    session: Session, outbox: Outbox | None, session_dir: str, resume: ResumeTrigger | None
) -> tuple[Outbox, list[str]]:
    runner = session.runner
    assert runner is not None
    outbox = outbox or Outbox(session_id=session.session_id, session_dir=session_dir, plan=runner.name, resume=resume)
    return outbox, outbox.flush(runner.ledger)


def cached_shown(runner: Plan, report: RoundReport) -> list[str]:
    """The untouched tasks that get a ``Cached`` run: all of them in a plan of at most 50 tasks,
    else only those a task that ran this round needs directly."""
    if len(runner.tasks) <= CACHED_RUNS_ALL_UP_TO:
        return list(report.cached)
    needed = {need for name in report.runs for need in runner.tasks[name].needs}
    return [name for name in report.cached if name in needed]


def _cached_runs(runner: Plan, shown: list[str]) -> list[PrefectFuture[Any]]:
    tagged = len(runner.tasks) <= CACHED_RUNS_ALL_UP_TO
    futures = []
    for name in shown:
        task = runner.tasks[name]
        why = cached_reason(runner, name)
        futures.append(
            cached_run(runner.name, name, task.worker_key, task.assumption_id, task.output, tagged=tagged, reason=why)
        )
    return futures


@dataclasses.dataclass
class _Writer:
    """One mutating flow run's hold on a session: loaded inside its slot, announcements flushed."""

    session_id: str
    session_dir: str
    session: Session
    executor: PrefectExecutor
    outbox: Outbox
    announced: list[str]
    resume: ResumeTrigger | None

    @property
    def runner(self) -> Plan:
        """The session's runner, bound to this flow run's executor (again after a conflict reload)."""
        return _with(self.session, self.executor)

    def committed(self, round_: int, suffix: str = "") -> Plan:
        """After the commit: name the run for the round it ran, flush what it announced; the runner."""
        runner = self.runner
        identify(f"{runner.name} · round {round_}{suffix}", runner.name, self.session_id)
        run_logger().info(
            "committed round %d as session generation %d (ledger head %s)",
            round_,
            self.session.generation,
            runner.ledger.head[:16],
        )
        self.announced += _announce(self.session, self.outbox, self.session_dir, self.resume)[1]
        return runner

    def result(self, report: RoundReport | RecheckReport) -> dict[str, Any]:
        """The flow run's return value, its fields shared by every kind of round; the report published.

        The report goes out as the run's report artifact (ADR 0008) before the run returns, so a
        caller that sees the run ``Completed`` finds it there.
        """
        runner = self.runner
        published = RunReport(report, self.session.generation, runner.ledger.head)
        suffix = "" if published.kind == "round" else " · recheck"
        run_id = flow_run_id()
        publish_report(
            published,
            flow_run_id=run_id,
            description=f"{runner.name} · round {report.round}{suffix}: the {published.kind} report (JSON)",
        )
        return {
            "session_id": self.session_id,
            "session_dir": self.session_dir,
            "generation": self.session.generation,
            "plan": runner.name,
            "round": report.round,
            "flow_run_id": run_id,
            "task_runs": self.executor.task_runs,
            "announced": self.announced,
            "report": to_dict(report),
        }


@contextlib.contextmanager
def _writing(session_dir: str, registry: TaskRegistry, suffix: str, resume: ResumeTrigger | None) -> Iterator[_Writer]:
    """Hold the session's slot, load it, name the run, re-emit pending announcements; yield the hold."""
    session_id, _, _ = peek(session_dir)
    executor = PrefectExecutor()
    with session_slot(session_id):
        session = _load(session_dir, registry)
        runner = _with(session, executor)
        identify(f"{runner.name} · round {runner.round + 1}{suffix}", runner.name, session_id)
        log_loaded(session, runner)
        outbox, announced = _announce(session, None, session_dir, resume)
        yield _Writer(session_id, session_dir, session, executor, outbox, announced, resume)


def run_plan_round(
    session_dir: str,
    mode: Mode,
    registry: TaskRegistry,
    *,
    resume: ResumeTrigger | None = None,
    rerun_from: str | None = None,
    asked_by: str = "",
) -> State[Any]:
    """The body of a plan flow run: run (every ready task) or resume (stale and pending only) one round;
    or ``rerun``: ``rerun_from``'s closure marked stale for ``asked_by``, then a resume (ADR 0019 §7).

    Must run inside a flow run made with :func:`plan_flow_options`. ``resume`` is passed on to the
    announcements this run re-emits (a disproof committed by a recheck that crashed before it
    announced). Returns the run's final state (ADR 0016), whose data is the result dict.
    """
    body_started()
    if mode not in ("run", "resume", "rerun"):
        raise ExecutionError(f"plan flow mode {mode!r}: a plan round runs in mode 'run', 'resume' or 'rerun'")
    if (mode == "rerun") != (rerun_from is not None):
        raise ExecutionError(f"plan flow mode {mode!r}: rerun_from names the task of mode 'rerun', and only of it")
    with _writing(session_dir, registry, "", resume) as held:
        executor, session, session_id = held.executor, held.session, held.session_id

        def one_round(s: Session) -> RoundReport:
            if rerun_from is not None:
                return _with(s, executor).rerun_from(rerun_from, asked_by=asked_by or "a flow run")
            return _with(s, executor).run(include_failed=mode == "run")

        report = session.apply(one_round, retries=2)
        runner = held.runner
        log_round(runner, report, mode)
        shown = cached_shown(runner, report)
        wait(_cached_runs(runner, shown))
        held.committed(report.round)
    why = behind(runner, session_id, report)
    key = publish_round_table(runner, report, mode, session_id, set(shown), why_links(why))
    result = held.result(report)
    data = {
        **result,
        "mode": mode,
        "executed": report.executed,
        "cached_runs": shown,
        "blocked": report.blocked,
        "failed": report.failed,
        "task_runs": result["task_runs"] + len(shown),
    }
    state = round_state(runner, report, mode, data)
    receipts = "; ".join(f"receipt {artifact_url(item.artifact_key)}" for item in why)
    if receipts:
        state.message = f"{state.message}; {receipts}"
    run_logger().info("published %s; ending %s: %s", key, state.name, state.message)
    return state


def run_recheck(
    session_dir: str, registry: TaskRegistry, *, resume: ResumeTrigger | None = None, full: bool = False
) -> State[Any]:
    """The body of a recheck flow run: the standing auditors whose watched slice changed (every one
    when ``full``, ADR 0019); a disproof committed, then announced.

    With ``resume``, each announcement delivered here also starts the plan deployment in resume
    mode (:mod:`contextmesh.orchestration.resume`); the started runs are in ``resumes``. A recheck
    of a deployment relabels the runs its one-at-a-time limit turned away as ``Skipped``
    (:mod:`contextmesh.orchestration.skipped_rechecks`), before it starts and after it ends.
    """
    body_started()
    ctx = FlowRunContext.get()
    deployment = ctx.flow_run.deployment_id if ctx is not None and ctx.flow_run is not None else None
    if deployment is not None:
        relabel_turned_away(deployment, None)
    with _writing(session_dir, registry, " · recheck", resume) as held:
        executor = held.executor

        def one_recheck(s: Session) -> RecheckReport:
            return _with(s, executor).recheck(full=full)

        report = held.session.apply(one_recheck, retries=2)
        runner = held.runner
        run_logger().info(
            "recheck round %d audited %s; disproved %d; stale now: %s",
            report.round,
            ", ".join(report.audited) or "nothing",
            len(report.invalidations),
            ", ".join(report.stale) or "none",
        )
        held.committed(report.round, " · recheck")
    resumes = list(held.outbox.resumes)
    data = {**held.result(report), "stale": report.stale, "resumes": resumes}
    after = "; ".join(f"resume started: {flow_run_url(str(r['flow_run_id']))}" for r in resumes)
    state = recheck_state(runner, report, data, after)
    if deployment is not None:
        relabel_turned_away(deployment, data["flow_run_id"])
    run_logger().info("ending %s: %s", state.name, state.message)
    return state


def run_repair(
    session_dir: str, registry: TaskRegistry, *, task: str, worker_key: str | None, assumes: str
) -> State[Any]:
    """The body of a repair flow run: ground one stale or failed task on new ground (and a new key).

    Runs no code: the key is checked against ``registry`` and recorded; the next resume runs it.
    """
    body_started()
    session_id, _, _ = peek(session_dir)
    with session_slot(session_id):
        session = _load(session_dir, registry)
        plan = session.runner.name if session.runner else ""
        identify(f"{plan} · repair {task}", plan, session_id)
        run_logger().info(
            "loaded session %s generation %d; repairing %s onto %r (key %s)",
            session_id,
            session.generation,
            task,
            assumes,
            worker_key or "unchanged",
        )

        def one_repair(s: Session) -> dict[str, Any]:
            runner = s.runner
            assert runner is not None
            repaired = runner.repair(task, assumes=assumes, worker_key=worker_key)
            return {"task": repaired.name, "worker_key": repaired.worker_key, "assumption_id": repaired.assumption_id}

        done = session.apply(one_repair, retries=2)
        runner = plan_of(session)
    data = {
        "session_id": session_id,
        "session_dir": session_dir,
        "generation": session.generation,
        "plan": plan,
        "flow_run_id": flow_run_id(),
        **done,
        "assumes": assumes,
    }
    message = f"{repair_message(runner, task)}; committed as session generation {session.generation}"
    run_logger().info(message)
    return final_state(COMPLETED, message, data)


def make_plan_flow(
    registry: TaskRegistry, *, max_workers: int = 8, task_runner: TaskRunner[PrefectFuture[Any]] | None = None
) -> Flow[..., dict[str, Any]]:
    """A flow that runs or resumes one round of a session's plan as one flow run.

    The flow returns its final state (ADR 0016); calling it returns that state's data, the result dict.
    """

    @flow(**plan_flow_options(max_workers=max_workers, task_runner=task_runner))
    def plan_round(
        session_dir: str, mode: Mode = "run", rerun_from: str | None = None, asked_by: str = ""
    ) -> State[Any]:
        """Run (every ready task), resume (stale and pending only) or rerun (from a task) one round."""
        return run_plan_round(session_dir, mode, registry, rerun_from=rerun_from, asked_by=asked_by)

    return cast("Flow[..., dict[str, Any]]", plan_round)


def make_recheck_flow(
    registry: TaskRegistry, *, max_workers: int = 8, resume: ResumeTrigger | None = None
) -> Flow[..., dict[str, Any]]:
    """A flow that runs every standing auditor of a session's plan as one flow run (see :func:`make_plan_flow`)."""

    @flow(**recheck_flow_options(max_workers=max_workers))
    def recheck(session_dir: str, full: bool = False) -> State[Any]:
        """The standing auditors whose watched slice changed (``full``: all); commit a disproof, then announce it."""
        return run_recheck(session_dir, registry, resume=resume, full=full)

    return cast("Flow[..., dict[str, Any]]", recheck)


def make_repair_flow(registry: TaskRegistry) -> Flow[..., dict[str, Any]]:
    """A flow that repairs one task of a session's plan as one flow run (it runs no code)."""

    @flow(**repair_flow_options())
    def repair(session_dir: str, task: str, assumes: str, worker_key: str | None = None) -> State[Any]:
        """Ground ``task`` on ``assumes`` (and the registered ``worker_key``); the next resume runs it."""
        return run_repair(session_dir, registry, task=task, worker_key=worker_key, assumes=assumes)

    return cast("Flow[..., dict[str, Any]]", repair)


# -- a user's project: the bodies its flows/ entrypoints call, with the folder they sit in ----------
# The root comes from the entrypoint's own location, never from a parameter: a flow parameter that
# named a folder would let whoever starts a run choose which code it imports (ADR 0009 §2).


def _project_session(root: Path | str, session_dir: str | None) -> tuple[str, TaskRegistry]:
    """The session a project's run works on (by default its own, made on first use) and its registry."""
    project = load_project(Path(root))
    directory = project.session_dir(Path(session_dir) if session_dir else None)
    if not session_dir:
        project.ensure_session()
    return str(directory), project.registry()


def run_project_round(
    root: Path | str, session_dir: str | None, mode: Mode, *, rerun_from: str | None = None, asked_by: str = ""
) -> State[Any]:
    """:func:`run_plan_round` for the project at ``root``, its registry bound from its own code."""
    directory, registry = _project_session(root, session_dir)
    return run_plan_round(directory, mode, registry, rerun_from=rerun_from, asked_by=asked_by)


def run_project_recheck(
    root: Path | str, session_dir: str | None, *, resume_deployment: str = "", full: bool = False
) -> State[Any]:
    """:func:`run_recheck` for the project at ``root``; a disproof resumes on ``resume_deployment`` if named."""
    directory, registry = _project_session(root, session_dir)
    trigger = ResumeTrigger(resume_deployment) if resume_deployment else None
    return run_recheck(directory, registry, resume=trigger, full=full)


def run_project_repair(
    root: Path | str, session_dir: str | None, *, task: str, assumes: str, worker_key: str | None
) -> State[Any]:
    """:func:`run_repair` for the project at ``root``."""
    directory, registry = _project_session(root, session_dir)
    return run_repair(directory, registry, task=task, worker_key=worker_key, assumes=assumes)


# A flow run's ``report`` back as the engine's report: the codec's readers, under the names callers use.
round_report_from = round_report_from_dict
recheck_report_from = recheck_report_from_dict

"""Flow factories: a plan round and a recheck over a session directory, each one Prefect flow run.

``make_plan_flow(registry)`` and ``make_recheck_flow(registry)`` build flows bound to a deployment's
:class:`~contextmesh.execution.task_registry.TaskRegistry` (keys are looked up there, never imported).
Parameters and results are plain data, so a deployment, an automation or ``run_deployment`` can
start them.

A **plan flow run** (``session_dir``, ``mode`` ``run`` | ``resume``) is named
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
from prefect.artifacts import create_table_artifact
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.concurrency.sync import concurrency
from prefect.context import FlowRunContext
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound
from prefect.futures import PrefectFuture, wait
from prefect.runtime import flow_run as runtime_flow_run
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from contextmesh.core.errors import ContextMeshError, ExecutionError
from contextmesh.execution.plan import Plan, RecheckReport, RoundReport
from contextmesh.execution.report_codec import recheck_report_from_dict, round_report_from_dict, to_dict
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.orchestration.announce import Outbox
from contextmesh.orchestration.prefect_executor import PrefectExecutor, cached_run, flow_run_id
from contextmesh.orchestration.resume import ResumeTrigger
from contextmesh.orchestration.run_report import RunReport, publish_report
from contextmesh.orchestration.served_record import peek
from contextmesh.session.plan_check import plan_of
from contextmesh.session.session import Session

__all__ = [
    "CACHED_RUNS_ALL_UP_TO",
    "PLAN_FLOW",
    "RECHECK_FLOW",
    "REPAIR_FLOW",
    "cached_shown",
    "limit_name",
    "make_plan_flow",
    "make_recheck_flow",
    "peek",
    "plan_flow_options",
    "recheck_flow_options",
    "recheck_report_from",
    "repair_flow_options",
    "round_report_from",
    "run_plan_round",
    "run_recheck",
    "run_repair",
]

CACHED_RUNS_ALL_UP_TO = 50
PLAN_FLOW = "contextmesh-plan"
RECHECK_FLOW = "contextmesh-recheck"
REPAIR_FLOW = "contextmesh-repair"
Mode = Literal["run", "resume"]


def limit_name(session_id: str) -> str:
    """The Prefect global concurrency limit that serialises a session's writers."""
    return f"contextmesh-session-{session_id}"


# -- reading a session's identity cheaply (for names and the limit, before the full load) ----------


def _peeked_name(suffix: str) -> str:
    session_dir = str(runtime_flow_run.get_parameters().get("session_dir", ""))
    try:
        _, plan, round_ = peek(session_dir)
    except (ContextMeshError, OSError, KeyError, TypeError, ValueError):
        return f"contextmesh · {Path(session_dir).name or 'session'}{suffix}"
    return f"{plan} · round {round_ + 1}{suffix}"


def _plan_run_name() -> str:
    return _peeked_name("")


def _recheck_run_name() -> str:
    return _peeked_name(" · recheck")


def _repair_run_name() -> str:
    task = str(runtime_flow_run.get_parameters().get("task", "?"))
    return _peeked_name(f" · repair {task}")


def _identify(name: str, plan: str, session_id: str) -> None:
    """Name this flow run for the round it actually runs (the name peeked at start may be a round
    behind when another run held the session) and tag it with its plan and session."""
    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:
        return
    wanted = sorted({*ctx.flow_run.tags, f"cm.plan:{plan}", f"cm.session:{session_id}"})
    if ctx.flow_run.name == name and sorted(ctx.flow_run.tags) == wanted:
        return
    with get_client(sync_client=True) as client:
        client.update_flow_run(ctx.flow_run.id, name=name, tags=wanted)
    ctx.flow_run.name, ctx.flow_run.tags = name, wanted


# -- the session's concurrency limit ----------------------------------------------------------------


def ensure_limit(name: str) -> None:
    """Create the global concurrency limit ``name`` (one slot) unless it exists."""
    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            with contextlib.suppress(ObjectAlreadyExists):
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))


# The slot is a lease the holder renews (every 3/4 of it) while it runs. A holder killed outright
# (SIGKILL, OOM, a lost host) cannot release it: the server frees it only when the lease expires,
# so the lease bounds how long the next writer of the session waits after a crash. Prefect's
# default is 300 s; 60 s is the shortest the API accepts.
SLOT_LEASE_SECONDS = 60.0


@contextlib.contextmanager
def session_slot(session_id: str) -> Iterator[None]:
    """Hold the session's one writer slot for the block (waits while another flow run holds it)."""
    name = limit_name(session_id)
    ensure_limit(name)
    with concurrency(name, occupy=1, strict=True, lease_duration=SLOT_LEASE_SECONDS):
        yield


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


def _round_description(plan: str, report: RoundReport, mode: Mode, session_id: str) -> str:
    text = f"{plan} · round {report.round} ({mode}) of session {session_id}"
    if report.blocked:
        waiting = ", ".join(sorted(report.blocked))
        text += f" — {len(report.blocked)} task(s) wait for repair: {waiting}"
    return text


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
        futures.append(cached_run(runner.name, name, task.worker_key, task.assumption_id, task.output, tagged=tagged))
    return futures


def _round_table(runner: Plan, report: RoundReport, shown: set[str]) -> list[dict[str, str]]:
    rows = []
    for name in runner.tasks:
        if name in report.blocked:
            rows.append({"task": name, "outcome": "blocked", "task run": "none", "reason": report.blocked[name]})
        elif name in report.failed:
            rows.append({"task": name, "outcome": "failed", "task run": name, "reason": report.failed[name]})
        elif name in report.executed:
            rows.append({"task": name, "outcome": "executed", "task run": name, "reason": ""})
        elif name in report.stale:
            rows.append(
                {
                    "task": name,
                    "outcome": "stale",
                    "task run": name if name in report.runs else "none",
                    "reason": runner.tasks[name].error or "its ground fell this round",
                }
            )
        elif name in report.cached:
            run = f"{name} · cached" if name in shown else "none (listed here only)"
            rows.append({"task": name, "outcome": "cached", "task run": run, "reason": "untouched"})
        else:
            rows.append({"task": name, "outcome": runner.tasks[name].state.value, "task run": "none", "reason": ""})
    return rows


# -- the factories ----------------------------------------------------------------------------------


def _runner(max_workers: int) -> TaskRunner[PrefectFuture[Any]]:
    # Bounded: without max_workers Prefect's pool allows sys.maxsize threads (docs/prefect-facts.md §4.1).
    return cast("TaskRunner[PrefectFuture[Any]]", ThreadPoolTaskRunner(max_workers=max_workers))


def plan_flow_options(
    *, max_workers: int = 8, task_runner: TaskRunner[PrefectFuture[Any]] | None = None
) -> dict[str, Any]:
    """The ``@flow`` options of a plan flow: its name, run name, bounded task runner, no persisted result.

    A deployment that builds its own flow function (to take extra parameters, such as the file its
    auditors read) passes these to ``flow`` so its runs look like the factory's.
    """
    return {
        "name": PLAN_FLOW,
        "flow_run_name": _plan_run_name,
        "task_runner": task_runner or _runner(max_workers),
        "persist_result": False,
        "log_prints": False,
    }


def recheck_flow_options(*, max_workers: int = 8) -> dict[str, Any]:
    """The ``@flow`` options of a recheck flow (see :func:`plan_flow_options`)."""
    return {
        "name": RECHECK_FLOW,
        "flow_run_name": _recheck_run_name,
        "task_runner": _runner(max_workers),
        "persist_result": False,
        "log_prints": False,
    }


def repair_flow_options() -> dict[str, Any]:
    """The ``@flow`` options of a repair flow (no task runs: a repair runs no code)."""
    return {"name": REPAIR_FLOW, "flow_run_name": _repair_run_name, "persist_result": False, "log_prints": False}


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
        _identify(f"{runner.name} · round {round_}{suffix}", runner.name, self.session_id)
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
        _identify(f"{runner.name} · round {runner.round + 1}{suffix}", runner.name, session_id)
        outbox, announced = _announce(session, None, session_dir, resume)
        yield _Writer(session_id, session_dir, session, executor, outbox, announced, resume)


def run_plan_round(
    session_dir: str, mode: Mode, registry: TaskRegistry, *, resume: ResumeTrigger | None = None
) -> dict[str, Any]:
    """The body of a plan flow run: run (every ready task) or resume (stale and pending only) one round.

    Must run inside a flow run made with :func:`plan_flow_options`. ``resume`` is passed on to the
    announcements this run re-emits (a disproof committed by a recheck that crashed before it
    announced).
    """
    if mode not in ("run", "resume"):
        raise ExecutionError(f"plan flow mode {mode!r}: a plan round runs in mode 'run' or 'resume'")
    with _writing(session_dir, registry, "", resume) as held:
        executor, session, session_id = held.executor, held.session, held.session_id

        def one_round(s: Session) -> RoundReport:
            return _with(s, executor).run(include_failed=mode == "run")

        report = session.apply(one_round, retries=2)
        runner = held.runner
        shown = cached_shown(runner, report)
        wait(_cached_runs(runner, shown))
        held.committed(report.round)
    create_table_artifact(
        key=f"cm-round-{report.round}",
        table=_round_table(runner, report, set(shown)),
        description=_round_description(runner.name, report, mode, session_id),
    )
    result = held.result(report)
    return {
        **result,
        "mode": mode,
        "executed": report.executed,
        "cached_runs": shown,
        "blocked": report.blocked,
        "failed": report.failed,
        "task_runs": result["task_runs"] + len(shown),
    }


def run_recheck(session_dir: str, registry: TaskRegistry, *, resume: ResumeTrigger | None = None) -> dict[str, Any]:
    """The body of a recheck flow run: every standing auditor; a disproof committed, then announced.

    With ``resume``, each announcement delivered here also starts the plan deployment in resume
    mode (:mod:`contextmesh.orchestration.resume`); the started runs are in ``resumes``.
    """
    with _writing(session_dir, registry, " · recheck", resume) as held:
        executor = held.executor

        def one_recheck(s: Session) -> RecheckReport:
            return _with(s, executor).recheck()

        report = held.session.apply(one_recheck, retries=2)
        held.committed(report.round, " · recheck")
    return {**held.result(report), "stale": report.stale, "resumes": list(held.outbox.resumes)}


def run_repair(
    session_dir: str, registry: TaskRegistry, *, task: str, worker_key: str | None, assumes: str
) -> dict[str, Any]:
    """The body of a repair flow run: ground one stale or failed task on new ground (and a new key).

    Runs no code: the key is checked against ``registry`` and recorded; the next resume runs it.
    """
    session_id, _, _ = peek(session_dir)
    with session_slot(session_id):
        session = _load(session_dir, registry)
        plan = session.runner.name if session.runner else ""
        _identify(f"{plan} · repair {task}", plan, session_id)

        def one_repair(s: Session) -> dict[str, Any]:
            runner = s.runner
            assert runner is not None
            repaired = runner.repair(task, assumes=assumes, worker_key=worker_key)
            return {"task": repaired.name, "worker_key": repaired.worker_key, "assumption_id": repaired.assumption_id}

        done = session.apply(one_repair, retries=2)
    return {
        "session_id": session_id,
        "session_dir": session_dir,
        "generation": session.generation,
        "plan": plan,
        "flow_run_id": flow_run_id(),
        **done,
        "assumes": assumes,
    }


def make_plan_flow(
    registry: TaskRegistry, *, max_workers: int = 8, task_runner: TaskRunner[PrefectFuture[Any]] | None = None
) -> Flow[..., dict[str, Any]]:
    """A flow that runs or resumes one round of a session's plan as one flow run."""

    @flow(**plan_flow_options(max_workers=max_workers, task_runner=task_runner))
    def plan_round(session_dir: str, mode: Mode = "run") -> dict[str, Any]:
        """Run (every ready task) or resume (stale and pending only) one round of the session's plan."""
        return run_plan_round(session_dir, mode, registry)

    return plan_round


def make_recheck_flow(
    registry: TaskRegistry, *, max_workers: int = 8, resume: ResumeTrigger | None = None
) -> Flow[..., dict[str, Any]]:
    """A flow that runs every standing auditor of a session's plan as one flow run."""

    @flow(**recheck_flow_options(max_workers=max_workers))
    def recheck(session_dir: str) -> dict[str, Any]:
        """Run every standing auditor; commit a disproof, then announce it."""
        return run_recheck(session_dir, registry, resume=resume)

    return recheck


# A flow run's ``report`` back as the engine's report: the codec's readers, under the names callers use.
round_report_from = round_report_from_dict
recheck_report_from = recheck_report_from_dict

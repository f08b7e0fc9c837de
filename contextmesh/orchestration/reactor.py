"""The serving process reacts: a change starts a recheck at once, and due runs run here, warm (ADR 0017).

``contextmesh serve`` and ``deployments/serve.py`` start one :class:`Reactor` beside Prefect's runner.
Every ``CONTEXTMESH_REACT_SECONDS`` (0.5 s by default) its thread:

1. asks :class:`~contextmesh.orchestration.watched.Watched` what changed — a file the auditors read,
   or new evidence in the session (``contextmesh evidence add``, ``mesh_submit_evidence``, any
   writer) — and, when something did and no recheck of the deployment is pending or running,
   creates a recheck run of the deployment, due now and tagged ``cm.trigger:<what changed>``
   (a change seen while one runs waits for it to end, then starts one more: never lost, never queued twice);
2. claims every due run of the session's three deployments (that recheck, the resume a disproof
   created, a dispatched repair or resume, a scheduled recheck) and runs it in a thread of this
   process (:mod:`contextmesh.orchestration.warm_runs`) — no runner poll, no subprocess;
3. prints one line for every run of the deployments that ended (:mod:`contextmesh.orchestration.serve_lines`).

It also keeps the session's :mod:`~contextmesh.orchestration.reactions` file current, so a writer can
say what happens next. The interval schedule stays as the safety net for changes nobody can see
(a world that is not a file, a feed on another machine).
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import Flow
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.context import SyncClientContext
from prefect.states import Failed

from contextmesh.core.errors import ExecutionError
from contextmesh.orchestration import reactions, wakeups
from contextmesh.orchestration.plain_api import PlainApi
from contextmesh.orchestration.run_links import flow_run_url
from contextmesh.orchestration.run_watch import STUCK, Overdue, RunWatch, finish_seconds, start_seconds
from contextmesh.orchestration.serve_lines import run_line, started_line
from contextmesh.orchestration.skipped_rechecks import skip_now
from contextmesh.orchestration.warm_runs import claim, create_run, due_runs, ended_runs, recheck_runs, run_claimed
from contextmesh.orchestration.watched import Watched

__all__ = [
    "ASK_SECONDS",
    "DEFAULT_REACT_SECONDS",
    "REACT_SETTING",
    "RUNNER_POLL_WHEN_WARM",
    "WARM_SETTING",
    "WATCH_SETTING",
    "Reactor",
    "react_seconds",
    "reacts",
    "warm_runs",
]

REACT_SETTING = "CONTEXTMESH_REACT_SECONDS"
# With warm runs the reactor runs every due run; Prefect's runner still registers the deployments,
# keeps their schedules and pauses them on exit, but polls only this rarely, so it never races the
# reactor for a recheck (a race the deployment's limit would settle by cancelling one).
RUNNER_POLL_WHEN_WARM = 3600.0
WARM_SETTING = "CONTEXTMESH_WARM_RUNS"
WATCH_SETTING = "CONTEXTMESH_REACT"
DEFAULT_REACT_SECONDS = 0.5
# How often a look also asks the API for due and ended runs when looks are more frequent (a tuned
# CONTEXTMESH_REACT_SECONDS): changes are still seen every look, and a run created in this process
# is claimed at once (wakeups); a run created elsewhere (the CLI, MCP, the schedule) within this.
ASK_SECONDS = 0.5
_ERROR_EVERY = 30.0  # a Prefect API that stops answering is said once per half minute, not every tick


def react_seconds(environ: Mapping[str, str] | None = None) -> float:
    """How often the reactor looks, from ``CONTEXTMESH_REACT_SECONDS`` (a number in (0, 60])."""
    text = (environ if environ is not None else os.environ).get(REACT_SETTING, "")
    if not text:
        return DEFAULT_REACT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 60:
        raise ExecutionError(f"{REACT_SETTING}={text!r}: the rule is a number of seconds above 0 and at most 60")
    return value


def _switch(name: str, environ: Mapping[str, str] | None, what: str) -> bool:
    text = (environ if environ is not None else os.environ).get(name, "1")
    if text not in ("0", "1"):
        raise ExecutionError(f"{name}={text!r}: the rule is 1 ({what}) or 0")
    return text == "1"


def reacts(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a change starts a recheck (``CONTEXTMESH_REACT``: ``1``, the default, or ``0``: only
    the schedule and rechecks somebody asks for)."""
    return _switch(WATCH_SETTING, environ, "a change starts a recheck")


def warm_runs(environ: Mapping[str, str] | None = None) -> bool:
    """Whether due runs run in the serving process (``CONTEXTMESH_WARM_RUNS``: ``1``, the default, or ``0``).

    ``0`` leaves every flow run to Prefect's runner, a fresh subprocess each (code re-imported per
    run); the reactor still starts rechecks on a change.
    """
    return _switch(WARM_SETTING, environ, "run due runs here")


class Reactor:
    """Watches one served session and runs its deployments' due flow runs in this process."""

    def __init__(
        self,
        *,
        session_id: str,
        session_dir: Path,
        api_url: str,
        flows: Mapping[str, Flow[..., Any]],
        deployments: Mapping[str, uuid.UUID],
        files: list[Path],
        interval: float,
        say: Callable[[str], None],
        limit: int = 4,
        tick: float | None = None,
        warm: bool | None = None,
        react: bool | None = None,
        watch: RunWatch | None = None,
    ) -> None:
        self.session_dir = session_dir
        self.api_url = api_url
        self.flows = dict(flows)
        self.roles = {deployment: role for role, deployment in deployments.items()}
        self.recheck = deployments["recheck"]
        self.say = say
        self.tick = react_seconds() if tick is None else tick
        self.warm = warm_runs() if warm is None else warm
        self.react = reacts() if react is None else react
        self.watched = Watched(session_dir, files)
        watching = tuple(str(path) for path in self.watched.files)
        self.state = reactions.Reacting(session_id, str(session_dir), os.getpid(), watching, interval)
        self.wanted: list[str] = []
        self._claimed: set[uuid.UUID] = set()
        self._said: set[uuid.UUID] = set()
        self._ours: dict[uuid.UUID, str] = {}  # rechecks this reactor created -> the change that asked
        self._since = datetime.now(UTC)
        self._stop = threading.Event()
        self._woken = wakeups.listen()  # set by a run created in this process (a recheck's resume)
        self._ask_now, self._asked = True, float("-inf")  # due and ended runs: the first look asks
        self.limit = limit
        # Every claimed run is timed to its first step and to its end; one past a bound is failed
        # and stops counting against ``limit`` (run_watch), so a stuck thread cannot hold the process.
        self.watch = watch if watch is not None else RunWatch(start_seconds(), finish_seconds())
        self._runs: dict[uuid.UUID, threading.Thread] = {}
        self._given_up: dict[uuid.UUID, Overdue] = {}  # failed as stuck while their thread still runs
        self._thread: threading.Thread | None = None
        self._last_error = 0.0
        self._deadline = 0.0  # set by stop(), before the loop is told to end

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start watching (the thread runs in a copy of the caller's context: its Prefect settings)."""
        reactions.write(self.state)
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._loop,), name="contextmesh-reactor", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop looking, let runs in flight end (up to ``timeout`` s), remove the reactions file."""
        self._deadline = time.monotonic() + timeout
        self._stop.set()
        self._woken.set()
        wakeups.forget(self._woken)
        if self._thread is not None:
            self._thread.join(timeout)
        self._join_runs()  # the loop joined them already, unless it never ran
        reactions.reacting_path(self.state.session_id).unlink(missing_ok=True)

    def _join_runs(self) -> None:
        for run in list(self._runs.values()):  # daemon threads: one given up as stuck cannot hold the exit
            run.join(max(0.0, self._deadline - time.monotonic()))

    # -- the loop -------------------------------------------------------------------------------

    def _loop(self) -> None:
        # The loop's client is in a client context that every claimed run's thread inherits (_claim
        # copies this context): Prefect's flow engine and every get_client() in a run reuse it instead
        # of each building a client (a TLS context from the CA bundle, 20-70 ms of CPU here, an API
        # version check and new connections) on the way to the run's first step. So runs in flight end
        # before the context closes it.
        with SyncClientContext.get_or_create() as context:
            while not self._stop.is_set():
                self._woken.clear()  # a run created here from now on is seen by this look or the next
                try:
                    self.step(context.client)
                except Exception as exc:
                    if time.monotonic() - self._last_error > _ERROR_EVERY:
                        self._last_error = time.monotonic()
                        self.say(f"reacting paused ({type(exc).__name__}: {exc}); trying again")
                if self._woken.wait(self.tick):  # the next look, or at once when a run is created here
                    self._ask_now = True
            self._join_runs()

    def step(self, client: SyncPrefectClient) -> None:
        """One look: what is stuck, what changed, what is due, what ended.

        What changed is a ``stat`` per watched file, asked every look. What is due and what ended are
        two API queries, asked at most every :data:`ASK_SECONDS` (or every look, when looks are
        rarer), and at once when a run was created in this process (``wakeups``): tuned to look
        every 0.1 s, the reactor otherwise sent the server 20 queries a second, which on a busy
        2-core machine slowed the very runs it was waiting for (ADR 0032).
        """
        self._fail_overdue(client)
        if self.react:
            self.wanted += self.watched.changes()
        if self.wanted:
            self._start_recheck(client)
        now = time.monotonic()
        if self._ask_now or now - self._asked >= max(self.tick, ASK_SECONDS):
            self._ask_now, self._asked = False, now
            if self.warm:
                self._claim_due(client)
            self._say_ended(client)

    def _start_recheck(self, client: SyncPrefectClient) -> None:
        held, due = recheck_runs(client, self.recheck)
        if held:
            return  # the running recheck may have read the change already or not: one more after it
        if due:
            self.wanted = []  # a recheck due and not started yet loads the session after the change
            return
        trigger = "; ".join(dict.fromkeys(self.wanted))
        kind = "evidence" if all(w.startswith("new evidence") for w in self.wanted) else "change"
        self.wanted = []
        run = create_run(PlainApi.of_this_process(), self.recheck, [f"cm.trigger:{kind}"])
        url = flow_run_url(str(run.id), self.api_url)
        self._ours[run.id] = trigger
        self.state = replace(self.state, started_at=time.time(), trigger=trigger, flow_run_id=str(run.id), url=url)
        reactions.write(self.state)
        self.say(started_line(trigger, url))
        if self.warm:
            self._claim(client, run)

    def _claim_due(self, client: SyncPrefectClient) -> None:
        busy: list[FlowRun] | None = None
        for run in due_runs(client, self.roles):
            if run.id in self._claimed:
                continue
            if self.watch.active() >= self.limit:
                return  # as many runs as this process runs at once: the rest wait, Scheduled, for a look
            if run.deployment_id == self.recheck:
                # One recheck at a time, decided here so nothing is left Cancelled by the limit: a
                # scheduled one due while another runs is Skipped at once; one somebody asked for
                # (a CLI or MCP recheck) stays Scheduled and runs when the running one ends.
                busy = recheck_runs(client, self.recheck)[0] if busy is None else busy
                if busy:
                    if run.auto_scheduled:
                        self._claimed.add(run.id)
                        skip_now(client, run.id, flow_run_url(str(busy[0].id), self.api_url))
                    continue
                busy = [run]
            self._claim(client, run)

    def _claim(self, client: SyncPrefectClient, run: FlowRun) -> None:
        if self.watch.active() >= self.limit:
            return  # left Scheduled: a later look claims it when a run ends
        self._claimed.add(run.id)
        state = claim(client, run.id)
        if state is None:
            return  # Prefect's runner took it: it runs in a subprocess, and its line is said when it ends
        if state.type != StateType.PENDING:
            if run.id in self._ours:  # turned away by the one-at-a-time limit: ask again after it
                self.wanted.append(self._ours.pop(run.id))
            return
        role = self.roles.get(run.deployment_id) if run.deployment_id else None
        if role is None:
            return
        # The claimed state carries the deployment's concurrency lease, which the engine renews: hand
        # it the run as claimed instead of reading it back (one API call less on the critical path).
        claimed = run.model_copy(update={"state": state, "state_type": state.type, "state_name": state.name})
        self.watch.claimed(run.id, role)
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run,
            args=(self._run, self.flows[role], claimed),
            name=f"contextmesh-run-{run.id}",
            daemon=True,
        )
        self._runs[run.id] = thread
        thread.start()

    def _run(self, flow: Flow[..., Any], run: FlowRun) -> None:
        try:
            run_claimed(flow, run)
        except BaseException as exc:  # the engine recorded the state; the process serves on
            self.say(f"flow run {run.id} ended with {type(exc).__name__}: {exc}")
        finally:
            self._runs.pop(run.id, None)
            stuck = self._given_up.pop(run.id, None)
            if stuck is None:
                self.watch.ended(run.id)
            elif not stuck.started:  # it woke, its body refused to start: say so where the engine's failure is
                self._refail(stuck)

    def _refail(self, stuck: Overdue) -> None:
        message = f"{stuck.message}; its thread woke later and did not run the body"
        with get_client(sync_client=True) as client:
            client.set_flow_run_state(stuck.flow_run_id, Failed(name=STUCK, message=message), force=True)
        url = flow_run_url(str(stuck.flow_run_id), self.api_url)
        self.say(f"{stuck.role} run {url} woke after it was failed as stuck; its body did not run")

    def _fail_overdue(self, client: SyncPrefectClient) -> None:
        """Fail every claimed run past its bound (run_watch): forced, so the server frees its deployment
        slot whatever state it is stuck in; one line each."""
        for stuck in self.watch.overdue():
            client.set_flow_run_state(stuck.flow_run_id, Failed(name=STUCK, message=stuck.message), force=True)
            self.watch.given_up(stuck)  # its thread no longer counts against the limit
            self._given_up[stuck.flow_run_id] = stuck
            url = flow_run_url(str(stuck.flow_run_id), self.api_url)
            self.say(f"{stuck.role} run {url} stuck: {stuck.message}")

    def _say_ended(self, client: SyncPrefectClient) -> None:
        for run in ended_runs(client, self.roles, self._since):
            if run.id in self._said or run.deployment_id is None or run.state is None:
                continue
            self._said.add(run.id)
            role = self.roles[run.deployment_id]
            name = run.state.name or run.state.type.value
            url = flow_run_url(str(run.id), self.api_url)
            self.say(run_line(role, run.parameters, name, run.state.message or "", url))

"""A flow run run in the serving process that stops moving is failed and its slot freed, not left ``Running``.

Issue 20: a recheck that ``serve`` claimed and ran in a thread of its own (ADR 0017) stayed
``Running`` for minutes, wrote nothing and held its deployment's one slot, so no recheck of the
session could run after it. Whatever the cause, a warm run must not be able to do that. The
reactor therefore times every run it claims (:class:`RunWatch`):

* **to its first step** — from the claim to the moment the flow body begins (:func:`body_started`,
  called first thing by every ContextMesh flow body): Prefect's engine start in this process,
  normally well under a second; bounded by ``CONTEXTMESH_RUN_START_SECONDS`` (120 s by default);
* **to its end** — from the claim to the engine's return; bounded by ``CONTEXTMESH_RUN_SECONDS``
  (3600 s by default: a plan round of a user's project may run long).

A run past either bound is set ``Failed`` with a message saying which bound and where to look; the
server's own rule for a run that leaves ``Running`` (``ReleaseFlowConcurrencySlots``, applied to a
forced state too) frees its deployment's concurrency slot, so the next due run proceeds. The thread
itself cannot be stopped from outside; it is left behind. If it ever wakes:

* a run failed before its first step does not start its body (:func:`body_started` refuses it), and
  the reactor sets it back to ``Stuck`` — the work nobody waited for is not done late;
* a run failed after its first step finishes what it was doing (it holds the session's writer slot,
  so its commit cannot overlap another writer's), and its own final state stands: it says what it did.

``kill -USR1`` on the serving process (:mod:`~contextmesh.orchestration.stack_dumps`) shows where it waits.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from prefect.context import FlowRunContext

from contextmesh.core.errors import ExecutionError

__all__ = [
    "DEFAULT_FINISH_SECONDS",
    "DEFAULT_START_SECONDS",
    "FINISH_SETTING",
    "START_SETTING",
    "STUCK",
    "Overdue",
    "RunWatch",
    "body_started",
    "finish_seconds",
    "start_seconds",
]

START_SETTING = "CONTEXTMESH_RUN_START_SECONDS"
FINISH_SETTING = "CONTEXTMESH_RUN_SECONDS"
DEFAULT_START_SECONDS = 120.0
DEFAULT_FINISH_SECONDS = 3600.0
STUCK = "Stuck"  # the name of the Failed state a stuck run is given (a failure: it did not do its work)
_MOST = 7 * 24 * 3600.0

_started: set[uuid.UUID] = set()  # flow runs of this process whose body began
_given_up: set[uuid.UUID] = set()  # flow runs failed as stuck before their first step: no body
_started_lock = threading.Lock()


def _seconds(name: str, default: float, environ: Mapping[str, str] | None) -> float:
    text = (environ if environ is not None else os.environ).get(name, "")
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= _MOST:
        raise ExecutionError(f"{name}={text!r}: the rule is a number of seconds above 0 and at most {_MOST:g}")
    return value


def start_seconds(environ: Mapping[str, str] | None = None) -> float:
    """How long a claimed run may take to reach its first step (``CONTEXTMESH_RUN_START_SECONDS``)."""
    return _seconds(START_SETTING, DEFAULT_START_SECONDS, environ)


def finish_seconds(environ: Mapping[str, str] | None = None) -> float:
    """How long a claimed run may take to end (``CONTEXTMESH_RUN_SECONDS``)."""
    return _seconds(FINISH_SETTING, DEFAULT_FINISH_SECONDS, environ)


def body_started() -> None:
    """Record that the current flow run's body began: its first step. Called first by every flow body.

    Harmless outside the serving process (a runner's subprocess records it for nobody). Refuses, by
    raising, a run this process already failed as stuck before its first step: it woke too late.
    """
    context = FlowRunContext.get()
    if context is not None and context.flow_run is not None:
        with _started_lock:
            if context.flow_run.id in _given_up:
                raise ExecutionError(
                    f"flow run {context.flow_run.id} was failed as stuck before its first step; it woke too late "
                    "to run its body, which a later run does instead"
                )
            _started.add(context.flow_run.id)


def _forget_started(flow_run_id: uuid.UUID) -> bool:
    with _started_lock:
        if flow_run_id in _started:
            _started.discard(flow_run_id)
            return True
        return False


def _has_started(flow_run_id: uuid.UUID) -> bool:
    with _started_lock:
        return flow_run_id in _started


@dataclass(frozen=True)
class Overdue:
    """A claimed run past a bound: which run, its role, and the state message that fails it."""

    flow_run_id: uuid.UUID
    role: str
    message: str
    started: bool


@dataclass
class _InFlight:
    role: str
    claimed: float


class RunWatch:
    """The runs this process claimed and runs, each timed to its first step and to its end."""

    def __init__(self, start: float, finish: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.start = start
        self.finish = finish
        self.clock = clock
        self._runs: dict[uuid.UUID, _InFlight] = {}
        self._lock = threading.Lock()

    def claimed(self, flow_run_id: uuid.UUID, role: str) -> None:
        """Start timing a run this process just claimed."""
        with self._lock:
            self._runs[flow_run_id] = _InFlight(role, self.clock())

    def ended(self, flow_run_id: uuid.UUID) -> None:
        """The run's engine returned, or the run was failed as stuck: stop timing and counting it."""
        with self._lock:
            self._runs.pop(flow_run_id, None)
        _forget_started(flow_run_id)

    def active(self) -> int:
        """Runs claimed and neither ended nor given up: what counts against the process's limit."""
        with self._lock:
            return len(self._runs)

    def overdue(self) -> list[Overdue]:
        """The runs past a bound; the caller fails each, then gives it up with :meth:`ended`."""
        now = self.clock()
        found: list[Overdue] = []
        with self._lock:
            for flow_run_id, run in list(self._runs.items()):
                waited = now - run.claimed
                started = _has_started(flow_run_id)
                if not started and waited > self.start:
                    bound = f"did not reach its first step within {self.start:g} s ({START_SETTING})"
                elif waited > self.finish:
                    bound = f"did not finish within {self.finish:g} s ({FINISH_SETTING})"
                else:
                    continue
                message = (
                    f"failed by the serving process (pid {os.getpid()}): this {run.role} run {bound} of being "
                    "claimed there, so it was failed and its deployment slot freed; the next due run proceeds "
                    f"(`kill -USR1 {os.getpid()}` writes where its thread waits to serve's log)"
                )
                found.append(Overdue(flow_run_id, run.role, message, started))
        return found

    def given_up(self, stuck: Overdue) -> None:
        """``stuck`` was failed: stop timing and counting it; if it had not started, it never will."""
        if not stuck.started:
            with _started_lock:
                _given_up.add(stuck.flow_run_id)
        self.ended(stuck.flow_run_id)

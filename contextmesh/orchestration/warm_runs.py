"""Flow runs of a served session's deployments, claimed and run in the serving process itself.

Prefect's runner (``prefect.serve``) starts every flow run in a fresh subprocess after its next poll:
up to ``PREFECT_RUNNER_POLL_FREQUENCY`` (10 s) of waiting plus a Python, Prefect and ContextMesh
start-up of 3–16 s on a busy machine, paid once for the recheck and again for the resume
(issue 20). The serving process already holds the same flows bound to the same registry, so
(ADR 0017) it claims a due run the way a runner does — by proposing ``Pending``, which is where the
server checks the deployment's concurrency limit and refuses a second claimant
(``PreventPendingTransitions``) — and then runs it in a thread with Prefect's own flow engine
(``prefect.flow_engine.run_flow`` on that flow run). The run is the deployment's run as before:
same id, parameters, tags, state history, logs and artifacts; only the process differs. Prefect's
runner still serves the same deployments (it keeps their schedules) but polls only hourly
(:data:`~contextmesh.orchestration.reactor.RUNNER_POLL_WHEN_WARM`); if both ever claim one run, the
server lets exactly one of them have it.

Nothing here changes ADR 0006's keys: a resume is still created from the plan deployment under its
idempotency key inside the recheck (``run_deployment``'s requests,
:mod:`~contextmesh.orchestration.resume`), so a run created and not yet claimed when the process
dies stays ``Scheduled`` and the next serving process (or Prefect's runner) runs it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from prefect import Flow
from prefect.client.orchestration import SyncPrefectClient
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterId,
    FlowRunFilter,
    FlowRunFilterEndTime,
    FlowRunFilterExpectedStartTime,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import FlowRun, State, StateType
from prefect.client.schemas.sorting import FlowRunSort
from prefect.exceptions import Abort
from prefect.flow_engine import run_flow
from prefect.states import Pending
from prefect.utilities.engine import propose_state_sync

from contextmesh.orchestration.plain_api import PlainApi

__all__ = ["BUSY", "claim", "create_run", "due_runs", "ended_runs", "recheck_runs", "run_claimed"]

BUSY = (StateType.PENDING, StateType.RUNNING, StateType.CANCELLING)
TERMINAL = (StateType.COMPLETED, StateType.FAILED, StateType.CANCELLED, StateType.CRASHED)


def _of(deployments: Iterable[uuid.UUID]) -> DeploymentFilter:
    return DeploymentFilter(id=DeploymentFilterId(any_=list(deployments)))


def due_runs(client: SyncPrefectClient, deployments: Iterable[uuid.UUID]) -> list[FlowRun]:
    """The deployments' ``Scheduled`` runs that are due now, oldest first."""
    state = FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED]))
    due = FlowRunFilterExpectedStartTime(before_=datetime.now(UTC))
    return client.read_flow_runs(
        flow_run_filter=FlowRunFilter(state=state, expected_start_time=due),
        deployment_filter=_of(deployments),
        sort=FlowRunSort.EXPECTED_START_TIME_ASC,
        limit=50,
    )


def recheck_runs(client: SyncPrefectClient, deployment: uuid.UUID) -> tuple[list[FlowRun], list[FlowRun]]:
    """``(held, due)``: the deployment's runs holding or taking its slot (Pending, Running,
    Cancelling), and those Scheduled and due now — one API call."""
    state = FlowRunFilterState(type=FlowRunFilterStateType(any_=[*BUSY, StateType.SCHEDULED]))
    runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(state=state), deployment_filter=_of([deployment]))
    now = datetime.now(UTC)
    held = [run for run in runs if run.state_type in BUSY]
    due = [
        run
        for run in runs
        if run.state_type == StateType.SCHEDULED and (run.expected_start_time is None or run.expected_start_time <= now)
    ]
    return held, due


def ended_runs(client: SyncPrefectClient, deployments: Iterable[uuid.UUID], after: datetime) -> list[FlowRun]:
    """The deployments' runs that ended after ``after``, in the order they ended."""
    state = FlowRunFilterState(type=FlowRunFilterStateType(any_=list(TERMINAL)))
    ended = FlowRunFilterEndTime(after_=after)
    runs = client.read_flow_runs(
        flow_run_filter=FlowRunFilter(state=state, end_time=ended), deployment_filter=_of(deployments), limit=200
    )
    return sorted(runs, key=lambda run: run.end_time or after)


def create_run(api: PlainApi, deployment: uuid.UUID, tags: list[str]) -> FlowRun:
    """A run of ``deployment`` due now, with its default parameters and ``tags`` added to its own.

    Over plain HTTP: the create reads the deployment and then writes, which the managed SQLite server
    refuses (503) when another write lands in between; Prefect's client would ask again two seconds
    later, plain_api after 50 ms (ADR 0032).
    """
    return FlowRun.model_validate(api.create_run_of(str(deployment), {}, tags=tags))


def claim(client: SyncPrefectClient, flow_run_id: uuid.UUID) -> State[Any] | None:
    """Propose ``Pending`` for a due run: the state the server answered when this process won it, else None.

    None when another claimant (Prefect's runner, a second serving process) took it first, or the
    server turned it away — its answer then is the run's state (``Cancelled`` by the deployment's
    one-at-a-time limit), returned so the caller can tell.
    """
    try:
        state = propose_state_sync(client, Pending(), flow_run_id=flow_run_id)
    except Abort:
        return None
    return state


def run_claimed(flow: Flow[..., Any], flow_run: FlowRun) -> State[Any]:
    """Run a claimed flow run (``flow_run`` in the ``Pending`` state the claim got) here with Prefect's
    flow engine, which opens its own client; its final state."""
    state = run_flow(flow, flow_run=flow_run, return_type="state")
    assert isinstance(state, State)  # a synchronous flow: run_flow_sync's state
    return state

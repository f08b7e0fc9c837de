"""Rechecks the deployment's one-at-a-time limit turned away, relabelled ``Skipped`` instead of left ``Cancelled``.

The recheck deployment runs one at a time (``concurrency_limit`` 1, ``CANCEL_NEW``): the server
refuses a run that comes due while another recheck runs, before any process starts for it, and
leaves it ``Cancelled`` with the message ``Deployment concurrency limit reached.`` A recheck that
held the slot audits the same facts, so nothing was lost — but a runs list full of ``Cancelled``
reads as trouble. Every recheck of a deployment therefore relabels those runs, when it starts (what a
crashed holder left) and when it ends (what came due while it ran): a Completed-type state named
``Skipped`` whose message names the recheck that ran instead (ADR 0016). A run somebody cancelled by
hand carries another message and is left alone.
"""

from __future__ import annotations

import uuid

from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterId,
    FlowRunFilter,
    FlowRunFilterId,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.states import Completed

from contextmesh.orchestration.run_links import flow_run_url
from contextmesh.orchestration.run_logs import run_logger
from contextmesh.orchestration.run_states import SKIPPED

__all__ = ["LIMIT_MESSAGE", "relabel_turned_away", "skip_now", "skipped_message"]

LIMIT_MESSAGE = "Deployment concurrency limit reached."  # the server's message (core_policy.py)


def skipped_message(holder_url: str | None) -> str:
    """The message of a recheck that came due while the recheck at ``holder_url`` ran."""
    ran = f"recheck {holder_url}" if holder_url else "another recheck of this session"
    return (
        f"skipped: it came due while {ran} was running (the recheck deployment runs one at a time); that "
        "recheck audited the same facts, so nothing was audited or committed here"
    )


def skip_now(client: SyncPrefectClient, flow_run_id: uuid.UUID, holder_url: str) -> None:
    """Mark a due scheduled recheck ``Skipped`` before anything claims it: it never shows ``Cancelled``.

    The serving process's reactor (ADR 0017) does this for a scheduled recheck that comes due while
    another recheck runs, instead of letting the deployment's limit cancel it.
    """
    client.set_flow_run_state(flow_run_id, Completed(name=SKIPPED, message=skipped_message(holder_url)), force=True)


def relabel_turned_away(deployment_id: uuid.UUID, holder: str | None) -> list[str]:
    """Relabel ``deployment_id``'s runs the concurrency limit cancelled as ``Skipped``; their ids.

    ``holder`` is the recheck that ran meanwhile (this one), or None when the holder is unknown.
    """
    wanted = FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.CANCELLED])))
    if holder is not None:
        wanted.id = FlowRunFilterId(not_any_=[uuid.UUID(holder)])
    deployment = DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id]))
    message = skipped_message(flow_run_url(holder) if holder else None)
    relabelled = []
    with get_client(sync_client=True) as client:
        for run in client.read_flow_runs(flow_run_filter=wanted, deployment_filter=deployment, limit=200):
            if run.state is None or run.state.message != LIMIT_MESSAGE:
                continue
            client.set_flow_run_state(run.id, Completed(name=SKIPPED, message=message), force=True)
            relabelled.append(str(run.id))
    if relabelled:
        run_logger().info("relabelled %d recheck(s) the deployment limit turned away as Skipped", len(relabelled))
    return relabelled

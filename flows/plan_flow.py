"""Entrypoint ``flows/plan_flow.py:plan`` — run or resume one round of a session's plan as one flow run.

Deployed on demand (``deployments/prefect.yaml``, ``deployments/serve.py``); a recheck that commits a
disproof starts it in ``resume`` mode. The registry comes from ``registry/`` in this process.
"""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.client.schemas.objects import State

from contextmesh.orchestration.flow_bodies import Mode, plan_flow_options, run_plan_round
from registry import build_registry


@flow(**plan_flow_options())
def plan(
    session_dir: str,
    mode: Mode = "run",
    feed: str | None = None,
    rerun_from: str | None = None,
    asked_by: str = "",
) -> State[Any]:
    """Run (every ready task), resume (only stale and pending work) or rerun (mode "rerun": rerun_from's
    closure) one round of the session's plan."""
    return run_plan_round(session_dir, mode, build_registry(feed), rerun_from=rerun_from, asked_by=asked_by)

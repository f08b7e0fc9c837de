"""Entrypoint ``flows/recheck_flow.py:recheck`` — every standing auditor; a disproof starts the resume.

Scheduled on an interval (``deployments/prefect.yaml``: every 10 minutes by default). When it
commits a disproof it announces it and, unless ``resume_deployment`` is empty, starts the plan
deployment in resume mode under an idempotency key (``contextmesh.orchestration.resume``).
"""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.client.schemas.objects import State

from contextmesh.orchestration.flow_bodies import recheck_flow_options, run_recheck
from contextmesh.orchestration.resume import ResumeTrigger
from registry import build_registry

PLAN_DEPLOYMENT = "contextmesh-plan/plan"


@flow(**recheck_flow_options())
def recheck(
    session_dir: str, feed: str | None = None, resume_deployment: str = PLAN_DEPLOYMENT, full: bool = False
) -> State[Any]:
    """Run the session's auditors whose watched slice changed (full: every one); on a disproof, commit,
    announce, resume."""
    trigger = ResumeTrigger(resume_deployment, {"feed": feed} if feed else {}) if resume_deployment else None
    return run_recheck(session_dir, build_registry(feed), resume=trigger, full=full)

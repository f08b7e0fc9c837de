"""Entrypoint ``flows/repair_flow.py:repair`` — ground a stale or failed task on new ground, as a flow run.

A repair runs no code: it checks the new key against this deployment's registry, supersedes the
task's assumption and commits, under the session's concurrency limit like every other writer.
The next resume runs the repaired task.
"""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.client.schemas.objects import State

from contextmesh.orchestration.flow_bodies import repair_flow_options, run_repair
from registry import build_registry


@flow(**repair_flow_options())
def repair(
    session_dir: str, task: str, assumes: str, worker_key: str | None = None, feed: str | None = None
) -> State[Any]:
    """Repair ``task`` onto the assumption ``assumes`` (and the registered ``worker_key``)."""
    return run_repair(session_dir, build_registry(feed), task=task, worker_key=worker_key, assumes=assumes)

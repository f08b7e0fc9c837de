"""How a ContextMesh flow run is named, tagged and configured: the ``@flow`` options of the plan,
recheck and repair flows, shared by :mod:`contextmesh.orchestration.flow_bodies`' factories and by the
entrypoints of a deployment (``flows/``, a project's ``flows/``), so every run looks the same.

A run's name is peeked from its session before the run starts (``<plan> · round <n>``, ``… ·
recheck``, ``… · repair <task>``) and corrected by :func:`identify` once the run holds the session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture
from prefect.runtime import flow_run as runtime_flow_run
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from contextmesh.core.errors import ContextMeshError
from contextmesh.orchestration.served_record import peek

__all__ = [
    "PLAN_FLOW",
    "RECHECK_FLOW",
    "REPAIR_FLOW",
    "identify",
    "plan_flow_options",
    "recheck_flow_options",
    "repair_flow_options",
]

PLAN_FLOW = "contextmesh-plan"
RECHECK_FLOW = "contextmesh-recheck"
REPAIR_FLOW = "contextmesh-repair"


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


def identify(name: str, plan: str, session_id: str) -> None:
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


# -- the options --------------------------------------------------------------------------------------


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

"""The library calls behind ``contextmesh execute`` (on Prefect) and ``contextmesh server start|status|stop``.

The CLI stays thin: it parses, makes one of these calls and renders. Both set Prefect's environment
before Prefect is imported (:func:`~contextmesh.orchestration.settings.prepare_environment`), so
this module imports Prefect only inside the functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from contextmesh.orchestration import local_server as server
from contextmesh.orchestration.deployed import require_api
from contextmesh.orchestration.settings import prepare_environment

if TYPE_CHECKING:
    from contextmesh.orchestration.walkthrough import PrefectWalkthrough

__all__ = ["execute_on_prefect", "server_command"]

Action = Literal["start", "status", "stop"]


def server_command(
    action: Action, *, home: Path | None = None, port: int | None = None, ui: bool = True
) -> tuple[dict[str, Any], str]:
    """``server start|status|stop``: plain data for ``--json`` and the line a person reads."""
    if action == "start":
        info = server.start(home, port=port, ui=ui)
        text = f"Prefect server running: UI {info.ui_url} · API {info.api_url} · pid {info.pid} · home {info.home}"
        hint = f"point other shells at it with: export PREFECT_API_URL={info.api_url}"
        return {"running": True, "server": info.to_dict()}, f"{text}\n{hint}"
    if action == "status":
        found = server.status(home)
        if found.running and found.info is not None:
            return found.to_dict(), f"running: UI {found.info.ui_url} · pid {found.info.pid} · home {found.home}"
        return found.to_dict(), f"not running ({found.reason}); start it with `contextmesh server start`"
    root = home or server.contextmesh_home()
    stopped = server.stop(root)
    return {"home": str(root), "stopped": stopped}, ("stopped" if stopped else "no managed server was running")


def execute_on_prefect(
    session_dir: Path | None, feed: Path | None = None, *, threads: int = 4, home: Path | None = None
) -> tuple[PrefectWalkthrough, str]:
    """The execute walk-through with every round a flow run; returns it and a note for stderr.

    Uses ``PREFECT_API_URL`` when one is configured, else the managed server (started for this
    command and stopped after its runs are recorded, unless it was already running).
    """
    prepare_environment()
    configured = server.configured_api_url()
    if configured:
        require_api(configured)  # an unreachable API is refused before any flow is built
    from contextmesh.orchestration.walkthrough import run_walkthrough_on_prefect  # noqa: PLC0415 - after the env

    with server.ensure_server(home) as handle:
        walk = run_walkthrough_on_prefect(session_dir, feed, max_workers=threads)
        for round_, flow_run_id in walk.flow_runs.items():
            handle.record(flow_run_id, walk.task_runs.get(round_, 0))
    return walk, handle.note

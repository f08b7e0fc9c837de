"""The library calls behind ``contextmesh execute`` (on Prefect) and ``contextmesh server start|status|stop``.

The CLI stays thin: it parses, makes one of these calls and renders. Both set Prefect's environment
before Prefect is imported (:func:`~contextmesh.orchestration.settings.prepare_environment`), so
this module imports Prefect only inside the functions, and a caller imports the modules that need
Prefect (:mod:`~contextmesh.orchestration.flow_steps`) inside :func:`prefect_for_command`'s block.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from contextmesh.orchestration import local_server as server
from contextmesh.orchestration.deployed import require_api
from contextmesh.orchestration.settings import prepare_environment

__all__ = ["prefect_for_command", "server_command"]

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


@contextmanager
def prefect_for_command(home: Path | None = None) -> Iterator[server.ServerHandle]:
    """A Prefect API for one command's flow runs; the handle's ``note`` is a line for stderr.

    Uses ``PREFECT_API_URL`` when one is configured (refused at once, before any flow is built, if
    it does not answer), else the managed server, started for this command and stopped after the
    runs given to ``handle.record`` are recorded, unless it was already running.
    """
    prepare_environment()
    configured = server.configured_api_url()
    if configured:
        require_api(configured)
    with server.ensure_server(home) as handle:
        yield handle

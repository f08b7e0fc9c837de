"""A Prefect API for one command: the configured one, the running managed one, or one started for it.

Invariant 4 of :mod:`contextmesh.orchestration.local_server`: ``ensure_server`` stops a server it
started for a command only after the command's runs are recorded and the client's log and event
workers are drained, and only when no other command holds a lease on it; a server started with
``contextmesh server start`` (``keep``) is never stopped by a command. This module imports Prefect
only inside its functions (the client settings come from
:mod:`contextmesh.orchestration.settings`, the worker drain from Prefect itself).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from contextmesh.orchestration.server_files import LEASES_DIR, home_root, locked, read_pid_file
from contextmesh.orchestration.server_lifecycle import start, stop_locked
from contextmesh.orchestration.server_process import alive
from contextmesh.orchestration.settings import client_settings

__all__ = ["ServerHandle", "configured_api_url", "drain_workers", "ensure_server", "wait_recorded"]

TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "CRASHED")


# -- recording --------------------------------------------------------------------------------------


def wait_recorded(api_url: str, flow_run_ids: list[str], expected: int, *, timeout: float = 30.0) -> bool:
    """Poll until the server has recorded ``expected`` terminal task runs of these flow runs."""
    if not flow_run_ids:
        return True
    body = {"flow_runs": {"id": {"any_": flow_run_ids}}, "task_runs": {"state": {"type": {"any_": list(TERMINAL)}}}}
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=api_url, timeout=5.0) as client:
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                if int(client.post("/task_runs/count", json=body).json()) >= expected:
                    return True
            time.sleep(0.1)
    return False


# -- a server for one command ---------------------------------------------------------------------


@dataclass
class ServerHandle:
    """The API a command talks to; ``started`` when it was started for this command and will stop."""

    api_url: str
    started: bool
    home: Path | None
    note: str = ""
    recorded: list[tuple[str, int]] = field(default_factory=list)

    @property
    def ui_url(self) -> str:
        """The UI root (the API URL without ``/api``)."""
        return self.api_url.removesuffix("/").removesuffix("/api")

    def flow_run_url(self, flow_run_id: str) -> str:
        """Where a person watches a flow run."""
        return f"{self.ui_url}/runs/flow-run/{flow_run_id}"

    def record(self, flow_run_id: str, task_runs: int) -> None:
        """Remember a flow run and its task-run count; the handle waits for them before stopping."""
        self.recorded.append((flow_run_id, task_runs))


def configured_api_url() -> str | None:
    """``PREFECT_API_URL`` from the environment or the active Prefect profile, if any."""
    from_env = os.environ.get("PREFECT_API_URL")
    if from_env:
        return from_env
    import prefect.settings as ps  # noqa: PLC0415 - only commands that run Prefect pay for the import

    value = ps.PREFECT_API_URL.value()
    return str(value) if value else None


@contextlib.contextmanager
def ensure_server(home: Path | None = None, *, heartbeat: bool = False, ui: bool = True) -> Iterator[ServerHandle]:
    """The Prefect API for one command: the configured one, the running managed one, or one started for it.

    A server started here is stopped when the block ends — after the runs given to
    :meth:`ServerHandle.record` are recorded and the client's log and event workers have drained —
    unless another command still holds a lease on it or someone ran ``contextmesh server start``.
    """
    configured = configured_api_url()
    if configured:
        handle = ServerHandle(configured, False, None)
        with client_settings(configured, heartbeat=heartbeat):
            try:
                yield handle
            finally:
                _settle(handle)
        return
    root = home_root(home)
    info = start(root, ui=ui, keep=False)
    started = not info.keep
    note = (
        ""
        if not started
        else f"started a Prefect server for this command at {info.ui_url}; it stops when the command ends — "
        "run `contextmesh server start` to keep it, and its UI, running"
    )
    handle = ServerHandle(info.api_url, started, root, note)
    lease = _take_lease(root)
    try:
        with client_settings(info.api_url, heartbeat=heartbeat):
            try:
                yield handle
            finally:
                _settle(handle)
    finally:
        _release_lease(root, lease)


def _settle(handle: ServerHandle) -> None:
    if handle.recorded:
        ids = [flow_run_id for flow_run_id, _ in handle.recorded]
        wait_recorded(handle.api_url, ids, sum(n for _, n in handle.recorded))
    drain_workers()


def drain_workers() -> None:
    """Flush this process's Prefect log and event workers (before a server it talks to goes away)."""
    from prefect.events.worker import EventsWorker  # noqa: PLC0415
    from prefect.logging.handlers import APILogWorker  # noqa: PLC0415

    with contextlib.suppress(RuntimeError):
        APILogWorker.instance().drain()
    EventsWorker.drain_all()


def _take_lease(root: Path) -> Path:
    leases = root / LEASES_DIR
    leases.mkdir(parents=True, exist_ok=True)
    lease = leases / f"{os.getpid()}-{secrets.token_hex(4)}"
    lease.write_text(str(os.getpid()), encoding="utf-8")
    return lease


def _release_lease(root: Path, lease: Path) -> None:
    # The last user of a temporary server stops it, whichever command started it.
    lease.unlink(missing_ok=True)
    with locked(root):
        info = read_pid_file(root)
        if info is None or info.keep:
            return
        if not any(_lease_alive(p) for p in list((root / LEASES_DIR).iterdir())):
            stop_locked(root, 15.0)


def _lease_alive(path: Path) -> bool:
    try:
        pid = int(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if alive(pid):
        return True
    path.unlink(missing_ok=True)
    return False

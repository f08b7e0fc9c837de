"""Helpers for the deployment tests: the local PostgreSQL cluster, Prefect's REST API, processes.

Recording is asynchronous (events → the server's task-run recorder), so every read of task runs
polls until the expected number is there; flow-run states are polled the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
TERMINAL = ["COMPLETED", "FAILED", "CANCELLED", "CRASHED"]
TIMINGS: dict[str, float] = {}  # printed at the end of the run (conftest.pytest_terminal_summary)
NOTES: dict[str, str] = {}


@contextlib.contextmanager
def timed(name: str) -> Iterator[None]:
    """Record how long the block took under ``name``."""
    started = time.monotonic()
    yield
    TIMINGS[name] = round(time.monotonic() - started, 1)


# -- PostgreSQL ---------------------------------------------------------------------------------------


def pg_cluster() -> tuple[str, str]:
    """``(version, name)`` of the newest installed server version's ``main`` cluster (Debian layout)."""
    versions = sorted((p.name for p in Path("/usr/lib/postgresql").glob("*") if p.name.isdigit()), key=int)
    if not versions:
        raise FileNotFoundError("/usr/lib/postgresql holds no server version")
    return versions[-1], "main"


def pg_online(version: str, name: str) -> bool:
    """Whether ``pg_lsclusters`` shows the cluster online."""
    out = subprocess.run(["pg_lsclusters", "--no-header"], check=True, capture_output=True, text=True).stdout
    return any(line.split()[:2] == [version, name] and "online" in line.split()[3] for line in out.splitlines())


def pg_ctl(version: str, name: str, action: str) -> None:
    subprocess.run(["pg_ctlcluster", version, name, action], check=True, capture_output=True, timeout=120)


# -- Prefect's REST API --------------------------------------------------------------------------------


def post(api: str, path: str, body: dict[str, Any]) -> Any:
    response = httpx.post(f"{api}{path}", json=body, timeout=10.0)
    response.raise_for_status()
    return response.json()


def get(api: str, path: str) -> Any:
    response = httpx.get(f"{api}{path}", timeout=10.0)
    response.raise_for_status()
    return response.json()


def flow_run(api: str, flow_run_id: str) -> dict[str, Any]:
    return dict(get(api, f"/flow_runs/{flow_run_id}"))


def wait_state(api: str, flow_run_id: str, wanted: set[str], *, timeout: float) -> dict[str, Any]:
    """The flow run once its state type is in ``wanted`` (or whatever it is when ``timeout`` passes)."""
    deadline = time.monotonic() + timeout
    run = flow_run(api, flow_run_id)
    while run["state_type"] not in wanted and time.monotonic() < deadline:
        time.sleep(0.5)
        run = flow_run(api, flow_run_id)
    return run


def wait_flow_runs(api: str, body: dict[str, Any], expected: int, *, timeout: float) -> list[dict[str, Any]]:
    """The flow runs ``body`` filters, once there are ``expected`` of them."""
    deadline = time.monotonic() + timeout
    found = list(post(api, "/flow_runs/filter", body))
    while len(found) < expected and time.monotonic() < deadline:
        time.sleep(0.5)
        found = list(post(api, "/flow_runs/filter", body))
    return found


def task_runs(api: str, flow_run_id: str, expected: int, *, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Every terminal task run of a flow run, once the server has recorded ``expected`` of them."""
    body = {"flow_runs": {"id": {"any_": [flow_run_id]}}, "task_runs": {"state": {"type": {"any_": TERMINAL}}}}
    deadline = time.monotonic() + timeout
    count = post(api, "/task_runs/count", body)
    while count < expected and time.monotonic() < deadline:
        time.sleep(0.2)
        count = post(api, "/task_runs/count", body)
    time.sleep(0.5)  # anything beyond the expected number shows in the assertion, not after it
    return list(post(api, "/task_runs/filter", {**body, "limit": 200}))


def table_rows(api: str, key: str, flow_run_id: str) -> list[dict[str, Any]]:
    """The rows of the table artifact ``key`` that ``flow_run_id`` created."""
    body = {"artifacts": {"key": {"any_": [key]}, "flow_run_id": {"any_": [flow_run_id]}}}
    (artifact,) = post(api, "/artifacts/filter", body)
    assert artifact["type"] == "table"
    data = artifact["data"]
    return list(json.loads(data) if isinstance(data, str) else data)


# -- processes ------------------------------------------------------------------------------------------


def _environ(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def flow_run_processes(flow_run_id: str) -> list[int]:
    """Pids of the processes a worker started for one flow run (``PREFECT__FLOW_RUN_ID`` in their environment)."""
    marker = f"PREFECT__FLOW_RUN_ID={flow_run_id}"
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and marker in _environ(int(entry.name)):
            found.append(int(entry.name))
    return sorted(found)


def engine_process(flow_run_id: str) -> int:
    """The one process running the flow run's code: ``python -m prefect.engine`` with its id."""
    engines = [pid for pid in flow_run_processes(flow_run_id) if "prefect.engine" in _cmdline(pid)]
    assert len(engines) == 1, f"flow run {flow_run_id}: engine processes {engines}"
    return engines[0]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return False  # a zombie its parent has not reaped yet: dead
    return True


def stop_group(proc: subprocess.Popen[bytes], *, timeout: float = 15.0) -> str:
    """SIGTERM a process started in its own session (and its group), wait, then SIGKILL; how it ended."""
    if proc.poll() is not None:
        return f"had exited ({proc.returncode})"
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
        how = f"SIGTERM ({proc.returncode})"
    except subprocess.TimeoutExpired:
        how = f"SIGKILL after {timeout:g} s of SIGTERM"
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of its group (flow-run processes)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5.0)
    return how

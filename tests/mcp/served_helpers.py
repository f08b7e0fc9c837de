"""A session served by ``deployments/serve.py`` on a real Prefect server, for the dispatch tests.

:class:`ServeProcess` saves a demo session with the CLI (its own session id, so its concurrency
limit is its own on a shared server), starts ``serve.py`` with ``PREFECT_API_URL`` and
``CONTEXTMESH_HOME`` set, and waits until its served record exists and both deployments answer.
It is stopped by its own process group: SIGTERM (schedules pause, the record is removed), up to
30 s, then SIGKILL. The REST helpers read Prefect back the way a person's tools would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

from contextmesh.orchestration import served_record as served

ROOT = Path(__file__).resolve().parents[2]
SERVE = ROOT / "deployments" / "serve.py"
CLI = Path(sys.executable).with_name("contextmesh")
INTERVAL = ["--interval", "3600"]  # no scheduled recheck during a test: every run is one a tool started
TERMINAL = ["COMPLETED", "FAILED", "CRASHED", "CANCELLED"]
T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T], timeout: float = 120.0, every: float = 0.5) -> T:
    """Poll ``probe`` until it returns something true; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def post(api: str, path: str, body: dict[str, Any]) -> Any:
    response = httpx.post(f"{api}{path}", json=body, timeout=10.0)
    response.raise_for_status()
    return response.json()


def get(api: str, path: str) -> Any:
    response = httpx.get(f"{api}{path}", timeout=10.0)
    response.raise_for_status()
    return response.json()


def get_status(api: str, path: str) -> int:
    return httpx.get(f"{api}{path}", timeout=10.0).status_code


def deployment_exists(api: str, name: str) -> bool:
    return get_status(api, f"/deployments/name/{name}") == 200


def task_runs(api: str, flow_run_id: str, expected: int, *, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Every terminal task run of a flow run, once the server has recorded ``expected`` of them
    (the task-run recorder writes in batches, after the flow run's own state)."""
    body = {"flow_runs": {"id": {"any_": [flow_run_id]}}, "task_runs": {"state": {"type": {"any_": TERMINAL}}}}
    wait_for(f"{expected} task runs of {flow_run_id}", lambda: post(api, "/task_runs/count", body) >= expected, timeout)
    return list(post(api, "/task_runs/filter", {**body, "sort": "EXPECTED_START_TIME_ASC", "limit": 200}))


def flow_runs(api: str, *, flow: str, tags: list[str]) -> list[dict[str, Any]]:
    body = {"flows": {"name": {"any_": [flow]}}, "flow_runs": {"tags": {"all_": tags}}, "limit": 200}
    return list(post(api, "/flow_runs/filter", body))


class ServeProcess:
    """``deployments/serve.py`` serving a fresh demo session saved under ``root``."""

    def __init__(self, api: str, root: Path) -> None:
        self.api = api
        self.root = root
        self.home = root / "home"
        self.feed = root / "feed.json"  # absent: no advisory is published; only submitted evidence disproves
        self.directory = root / "session"
        self.env = {
            **os.environ,
            "PREFECT_API_URL": api,
            "PREFECT_HOME": str(root / "prefect-client"),
            "CONTEXTMESH_HOME": str(self.home),
            "PREFECT_RUNNER_POLL_FREQUENCY": "2",  # Prefect's default 10 s would pace every dispatch
            # mesh_recheck, not serve's own reaction to the submission (ADR 0017, tests/orchestration/
            # test_serve_reacts.py), is what interprets submitted evidence in these tests.
            "CONTEXTMESH_REACT": "0",
        }
        subprocess.run(
            [str(CLI), "session", "save", str(self.directory), "--feed", str(self.feed)],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=300,
        )
        self.session_id, _, _ = served.peek(str(self.directory))
        self.log = root / "serve.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, str(SERVE), "--session", str(self.directory), "--feed", str(self.feed), *INTERVAL],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=ROOT,
            )
        try:
            wait_for("serve.py's served record", lambda: self.record() is not None or self._died(), timeout=180)
            wait_for("both deployments", self.deployments_up, timeout=120)
        except BaseException:
            self.stop()
            raise

    def _died(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"serve.py exited with {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
        return False

    def record(self) -> served.ServedRecord | None:
        return served.find(self.session_id, self.directory, self.home)

    def deployments_up(self) -> bool:
        self._died()
        return all(deployment_exists(self.api, n) for n in ("contextmesh-recheck/recheck", "contextmesh-plan/plan"))

    def launcher_env(self) -> dict[str, str]:
        """What an MCP launcher subprocess needs beside the SDK's default environment."""
        return {key: self.env[key] for key in ("CONTEXTMESH_HOME", "PREFECT_HOME")}

    def stop(self) -> int:
        """SIGTERM the process group, wait up to 30 s, then SIGKILL; the exit code."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                return self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        return self.process.wait(10)

"""Shared pieces of the project tests on a real Prefect server: the CLI in a fresh process, a project
served by ``contextmesh serve`` (and stopped), Prefect's deployments and flow runs read back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from orch_helpers import post


def project_env(api: str, home: Path) -> dict[str, str]:
    return {**os.environ, "PREFECT_API_URL": api, "CONTEXTMESH_HOME": str(home), "PREFECT_RUNNER_POLL_FREQUENCY": "2"}


def cm(env: dict[str, str], *args: str, cwd: Path | None = None, timeout: float = 300) -> dict[str, Any]:
    """``contextmesh ARGS --json`` in a fresh process; its document (asserting exit 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "contextmesh", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    document = json.loads(done.stdout)
    assert isinstance(document, dict)
    return document


def wait_for(what: str, probe: Any, timeout: float = 180.0, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


@dataclass
class Served:
    root: Path
    session_id: str
    name: str
    process: subprocess.Popen[bytes]
    log: Path


def init_project(env: dict[str, str], where: Path, name: str, interval: int) -> Path:
    cm(env, "init", str(where / name))
    toml = where / name / "contextmesh.toml"
    toml.write_text(toml.read_text().replace("recheck_interval = 600", f"recheck_interval = {interval}"))
    return where / name


def serve(env: dict[str, str], root: Path) -> Served:
    """``contextmesh serve --project ROOT`` in its own process, once its served record is there."""
    session_id = cm(env, "session", "show", "--project", str(root))["session_id"]
    log = root.parent / f"{root.name}-serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "contextmesh", "serve", "--project", str(root)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    record = Path(env["CONTEXTMESH_HOME"]) / "served" / f"{session_id}.json"
    wait_for(f"{root.name}'s served record", record.exists, timeout=120)
    served = json.loads(record.read_text())
    return Served(root, session_id, served["plan"].split("/", 1)[1], process, log)


def stop(served: Served) -> None:
    served.process.send_signal(signal.SIGTERM)
    try:
        served.process.wait(90)
    except subprocess.TimeoutExpired:
        os.killpg(served.process.pid, signal.SIGKILL)
        served.process.wait(10)
        raise AssertionError(f"serve did not stop on SIGTERM; log:\n{served.log.read_text()[-3000:]}") from None


def flow_runs(api: str, deployment_ids: list[str], **extra: Any) -> list[dict[str, Any]]:
    body = {"deployments": {"id": {"any_": deployment_ids}}, "sort": "EXPECTED_START_TIME_ASC", "limit": 200}
    return list(post(api, "/flow_runs/filter", {**body, **extra}))


def deployments(api: str) -> dict[str, dict[str, Any]]:
    found = post(api, "/deployments/filter", {"limit": 200})
    flows = {f["id"]: f["name"] for f in post(api, "/flows/filter", {"limit": 200})}
    return {f"{flows[d['flow_id']]}/{d['name']}": d for d in found}


def httpx_get(api: str, path: str) -> dict[str, Any]:
    response = httpx.get(f"{api}{path}", timeout=10.0)
    response.raise_for_status()
    return dict(response.json())

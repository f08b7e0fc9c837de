"""What a served project's short recheck schedule costs while nobody reads it (ADR 0040).

    .venv/bin/python bench/schedule_cost.py [--interval 4] [--seconds 60]

Starts a Prefect server (SQLite) on a fresh home, makes a project with ``contextmesh init``, runs
its round 1, serves it with ``contextmesh serve`` (a recheck every ``--interval`` seconds, a full
one every ten), then measures the CPU that the server and the serving process spend over
``--seconds`` of wall twice, side by side in one run: with the schedule running, then with the
deployment paused through Prefect's API (what the test modules do once no later test needs a
scheduled recheck). Prints CPU-s per minute of wall for each and the load average; CPU figures,
not wall, are the ones to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from contextmesh.orchestration import local_server as server

_TICKS = os.sysconf("SC_CLK_TCK")


def _tree_cpu(root: int) -> float:
    """User + system CPU-s of ``root``'s live descendants (not ``root``), own and reaped children's."""
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
        if pid == root:
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15]) / _TICKS  # utime stime cutime cstime
    return total


def _cm(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "contextmesh", *args, "--json"], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"contextmesh {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def _recheck_deployment(api: str, home: Path, session_id: str) -> str:
    record = home / "served" / f"{session_id}.json"
    deadline = time.monotonic() + 180
    while not record.exists():
        if time.monotonic() > deadline:
            raise SystemExit("serve wrote no served record in 180 s")
        time.sleep(0.5)
    name = json.loads(record.read_text())["plan"].split("/", 1)[1]
    found = httpx.post(f"{api}/deployments/filter", json={"deployments": {"name": {"any_": [name]}}}, timeout=10)
    flows = httpx.post(f"{api}/flows/filter", json={"flows": {"name": {"any_": ["contextmesh-recheck"]}}}, timeout=10)
    (flow,) = flows.json()
    (deployment,) = [d for d in found.json() if d["flow_id"] == flow["id"]]
    return str(deployment["id"])


def _measure(seconds: float) -> float:
    start = _tree_cpu(os.getpid())
    time.sleep(seconds)
    return (_tree_cpu(os.getpid()) - start) * 60 / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--interval", type=int, default=4, help="the recheck interval, seconds (default 4)")
    parser.add_argument("--seconds", type=float, default=60.0, help="wall seconds per measurement (default 60)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="schedule-cost-") as scratch:
        where = Path(scratch)
        info = server.start(where / "prefect", port=server.free_port(), ui=False, keep=False, timeout=240)
        serving: subprocess.Popen[bytes] | None = None
        try:
            env = {**os.environ, "PREFECT_API_URL": info.api_url, "CONTEXTMESH_HOME": str(where / "home")}
            root = where / "report"
            _cm(env, "init", str(root))
            toml = root / "contextmesh.toml"
            toml.write_text(
                toml.read_text().replace("recheck_interval = 600", f"recheck_interval = {options.interval}")
            )
            _cm(env, "run", "--project", str(root))
            session_id = _cm(env, "session", "show", "--project", str(root))["session_id"]
            with (where / "serve.log").open("wb") as log:
                serving = subprocess.Popen(
                    [sys.executable, "-m", "contextmesh", "serve", "--project", str(root)],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            recheck = _recheck_deployment(info.api_url, where / "home", session_id)
            time.sleep(10)  # past serve's start and the schedule's first runs
            running = _measure(options.seconds)
            httpx.post(f"{info.api_url}/deployments/{recheck}/pause_deployment", timeout=10).raise_for_status()
            time.sleep(5)  # the recheck under way, if any, ends
            paused = _measure(options.seconds)
        finally:
            if serving is not None:
                serving.send_signal(signal.SIGTERM)
                serving.wait(90)
            server.stop(where / "prefect")
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"served project, recheck every {options.interval} s; server + serve CPU-s per minute of wall:")
    print(f"  schedule running {running:6.2f}")
    print(f"  schedule paused  {paused:6.2f}")
    print(f"  saved by pausing {running - paused:6.2f} CPU-s/min  (load average {load})")


if __name__ == "__main__":
    main()

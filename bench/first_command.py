"""What the README's first command costs: ``contextmesh demo`` from a fresh home, then again.

    .venv/bin/python bench/first_command.py [--rounds 8]

Each run is a fresh process in a temporary ``$CONTEXTMESH_HOME`` with no ``PREFECT_API_URL`` — what
a person who has just installed ContextMesh runs. It times, in order:

1. ``demo --executor in-process`` — both halves in the process, no Prefect (the floor);
2. ``demo`` with no server running — the managed server is started (while the graph builds) and
   kept, and the plan's rounds run as flow runs (the first command as pasted);
3. ``demo`` again — the kept server is reused.

It prints the wall seconds of each and the load average before and after (on two cores, a load
above 2 stretches every figure), then stops the server it started. ``pip install`` is not timed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(home: Path, *args: str) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CONTEXTMESH_"))}
    env["CONTEXTMESH_HOME"] = str(home)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "contextmesh", *args], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
    return time.monotonic() - started, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="walk rounds of the knowledge half (the default is 8)")
    args = parser.parse_args()
    rounds = ["--rounds", str(args.rounds)]
    before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="contextmesh-bench-first-") as scratch:
        home = Path(scratch)
        try:
            rows.append(("demo --executor in-process", *_run(home, "demo", *rounds, "--executor", "in-process")))
            rows.append(("demo (server started and kept)", *_run(home, "demo", *rounds)))
            rows.append(("demo (server already running)", *_run(home, "demo", *rounds)))
        finally:
            _run(home, "server", "stop")
    after = os.getloadavg()
    print(f"{'command':<34} {'seconds':>8}  exit")
    for name, seconds, code in rows:
        print(f"{name:<34} {seconds:>8.1f}  {code}")
    print(f"load average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}; after {after[0]:.2f}")
    return 0 if all(code == 0 for _, _, code in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Loading a session whose numbers are hostile: time and peak memory against the number, not the file.

    .venv/bin/python bench/hostile_load.py [--repeat 3]

The demo session is saved once; then, for each ``attempt`` value, the execution companion's first
done task is given that attempt (the manifest re-sealed around it, so the load reaches the check),
and the directory is loaded in a fresh interpreter ``--repeat`` times. Each child reports its own
wall time for ``load_directory`` and its peak RSS. The loader checks a task's decision against the
one attempt the decision records, so both columns should stay flat from ``1`` to ``2**53 - 2``; the
loader that minted one decision id per attempt took 27 s and 1.4 GB at 10⁷ and never finished at
2⁵³ − 1. The last row is that value, which is refused (one more run could not be written).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import percentile, print_table
from session_helpers import build_demo_template, clone, manifest_doc, reseal

from contextmesh.core.canonical import MAX_SAFE_INTEGER, file_bytes, loads

ATTEMPTS = (1, 10**4, 10**6, 10**8, MAX_SAFE_INTEGER - 1, MAX_SAFE_INTEGER)

_CHILD = """
import json, resource, sys, time
from pathlib import Path
from contextmesh.demo.saved import demo_registry
from contextmesh.core.errors import ContextMeshError
from contextmesh.session.load import load_directory
registry = demo_registry(Path(sys.argv[2]))
start = time.perf_counter()
try:
    load_directory(Path(sys.argv[1]), registry=registry)
    outcome = "loads"
except ContextMeshError as exc:
    outcome = "refused at " + getattr(exc, "path", "?")
elapsed = (time.perf_counter() - start) * 1000
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"ms": elapsed, "rss_mb": peak, "outcome": outcome}))
"""


def with_attempt(template: Path, dest: Path, attempt: int) -> Path:
    directory = clone(template, dest)
    _, doc = manifest_doc(directory)
    execution = loads((directory / doc["execution"]["name"]).read_bytes())
    task = next(t for t in execution["tasks"] if t["state"] == "done")
    task["attempt"] = attempt
    reseal(directory, "execution", file_bytes(execution))
    return directory


def measure(directory: Path, feed: Path, repeat: int) -> tuple[float, float, str]:
    runs = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(directory), str(feed)],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        runs.append(json.loads(done.stdout))
    return percentile([r["ms"] for r in runs], 50), max(r["rss_mb"] for r in runs), runs[0]["outcome"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cm-hostile-") as scratch:
        root = Path(scratch)
        template, feed = build_demo_template(root)
        rows = []
        for attempt in ATTEMPTS:
            directory = with_attempt(template, root / f"attempt-{attempt}", attempt)
            ms, rss, outcome = measure(directory, feed, args.repeat)
            rows.append([f"{attempt:,}", f"{ms:.1f}", f"{rss:.0f}", outcome])
    print_table(["attempt", "load p50 ms", "peak RSS MB", "outcome"], rows)
    load = os.getloadavg()[0]
    print(f"({args.repeat} fresh interpreters each; load average at the end {load:.2f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()

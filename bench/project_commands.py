"""The commands a user types on a project of their own, timed as a person sees them.

    .venv/bin/python bench/project_commands.py [--repeat 2] [--local-only]

Each repetition makes a fresh project with ``contextmesh init`` in a temporary folder and runs the
README's "Your own project" sequence as separate ``python -m contextmesh`` processes (start-up
included, as a person pays it): ``run``, ``evidence add``, ``recheck``, ``blast-radius``,
``repair``, ``resume``, ``ask``, ``session verify`` — once with ``--local`` (in this process, no
Prefect), and, unless ``--local-only``, once on Prefect: each round a flow run on a managed server
(SQLite, no UI) started once in a temporary ``$CONTEXTMESH_HOME`` and stopped at the end (its
start is timed too). Printed: every command's wall-clock p50 / max over the repetitions per mode,
and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile, print_table

STEPS = (
    ("run", ["run"]),
    ("evidence add", ["evidence", "add", "Finance quotes every price in USD from June", "--source", "mail:f/1"]),
    ("recheck", ["recheck"]),
    ("blast-radius", ["blast-radius", "the orders export lists every region"]),
    (
        "repair",
        ["repair", "summarise", "--worker-key", "report.summarise.usd.v1", "--assumes", "prices are in US dollars"],
    ),
    ("resume", ["resume"]),
    ("ask", ["ask", "What does the Summary Step assume?"]),
    ("session verify", ["session", "verify"]),
)
LOCAL = {"run", "recheck", "repair", "resume"}


def _cm(env: dict[str, str], cwd: Path, *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "contextmesh", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"contextmesh {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return elapsed


def _sequence(env: dict[str, str], where: Path, local: bool) -> dict[str, float]:
    root = where / f"weekly-{'local' if local else 'prefect'}"
    times = {"init": _cm(env, where, "init", str(root))}
    (root / "world.json").write_text((root / "world.json").read_text().replace('"EUR"', '"USD"'))
    for name, argv in STEPS:
        times[name] = _cm(env, root, *argv, *(["--local"] if local and name in LOCAL else []))
    return times


def main() -> int:
    """Time the sequence; print the table and the load average."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--local-only", action="store_true")
    args = parser.parse_args()
    before = os.getloadavg()
    samples: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="cm-bench-project-") as scratch:
        home = Path(scratch) / "home"
        env = {k: v for k, v in os.environ.items() if k not in {"PREFECT_API_URL", "CONTEXTMESH_HOME"}}
        env["CONTEXTMESH_HOME"] = str(home)
        modes = [("local", True)] + ([] if args.local_only else [("prefect", False)])
        try:
            if not args.local_only:
                samples[("prefect", "server start")] = [_cm(env, Path(scratch), "server", "start")]
            for repetition in range(args.repeat):
                for mode, local in modes:
                    where = Path(scratch) / f"{mode}-{repetition}"
                    where.mkdir()
                    for name, ms in _sequence(env, where, local).items():
                        samples.setdefault((mode, name), []).append(ms)
        finally:
            if not args.local_only:
                subprocess.run([sys.executable, "-m", "contextmesh", "server", "stop"], env=env, check=False)
    rows = [
        [mode, name, f"{percentile(ms, 50):,.0f}", f"{max(ms):,.0f}", str(len(ms))]
        for (mode, name), ms in samples.items()
    ]
    print_table(["mode", "command", "p50 ms", "max ms", "n"], rows)
    after = os.getloadavg()
    print("load average (1, 5, 15 min) before", " ".join(f"{x:.2f}" for x in before), end="; ")
    print("after", " ".join(f"{x:.2f}" for x in after))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

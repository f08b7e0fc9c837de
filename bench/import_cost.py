"""What ``import contextmesh`` costs, and what the first use of a public name costs on top.

    .venv/bin/python bench/import_cost.py [--repeat 15] [--tree DIR]

Each sample is a fresh interpreter run with ``-X importtime``; the figure is the cumulative
microseconds Python reports for the top-level ``contextmesh`` import (``import contextmesh``), and
for a second statement that also imports the graph, the plan and the session modules (what the first
use of ``ContextGraph``, ``Plan`` and ``Session`` imports).
It prints the median and p95 of each, how many modules the bare import adds to a plain
interpreter, whether networkx, pydantic, Prefect or the MCP SDK came with it, and the load average
(wall figures mean little when it exceeds the CPU count). ``--tree`` measures another checkout of
the package (it is put first on ``sys.path``), so two trees can be compared on one machine.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile, print_table

BARE = "import contextmesh"
# By module path, so the statement means the same in a tree whose root does not export these names.
FIRST_USE = "import contextmesh, contextmesh.core.graph, contextmesh.execution.plan, contextmesh.session.session"
PROBE = (
    "import sys; before = set(sys.modules); import contextmesh; added = set(sys.modules) - before; "
    "print(len(added)); print(' '.join(sorted(m for m in ('networkx', 'pydantic', 'prefect', 'mcp') if m in added)))"
)
_LINE = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| (\S.*)$")


def cumulative_us(statement: str, tree: Path | None) -> int:
    """The cumulative microseconds of every top-level import the statement made, in one fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(tree)} if tree is not None else None
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=tree,  # python -c puts the working directory first on sys.path, before PYTHONPATH
        timeout=120,
    )
    total = 0
    for line in done.stderr.splitlines():
        found = _LINE.match(line)
        # The pattern matches top-level lines only (no indentation before the name): nested imports are
        # already inside their parent's cumulative figure.
        if found and found.group(2).split(".")[0] == "contextmesh":
            total += int(found.group(1))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--tree", type=Path, help="a checkout whose contextmesh/ to measure instead")
    args = parser.parse_args()
    tree = args.tree.resolve() if args.tree else None
    rows = []
    for label, statement in (("import contextmesh", BARE), ("+ graph, plan, session modules", FIRST_USE)):
        samples = [cumulative_us(statement, tree) / 1000 for _ in range(args.repeat)]
        rows.append([label, f"{percentile(samples, 50):.1f}", f"{percentile(samples, 95):.1f}"])
    env = {**os.environ, "PYTHONPATH": str(tree)} if tree is not None else None
    probe = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, env=env, cwd=tree, timeout=120
    )
    added, heavy = [*probe.stdout.splitlines(), ""][:2]
    where = tree or Path(__file__).resolve().parents[1]
    print(f"contextmesh from {where}, {args.repeat} fresh interpreters per row")
    print_table(["statement", "p50 ms", "p95 ms"], rows)
    print(f"modules added by import contextmesh: {added}; heavy ones among them: {heavy or 'none'}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

"""The strict parser's cost on a file it did not write: the nesting scan against the whole parse.

    .venv/bin/python bench/strict_parse.py [--nodes 20000] [--repeat 3]

A file ContextMesh wrote takes ``canonical.loads``'s fast path (orjson, then one re-serialisation to
compare) and is never scanned. A file edited by hand or written by another tool — indented, keys in
another order — takes the slow path: the nesting scan (``text_depth``, which refuses anything deeper
than 254 levels before a recursive parser sees it), then the duplicate-seeing strict parser and the
integer check. This prints, for a synthetic graph file in both forms, the size, the best wall and
CPU seconds of ``loads`` over ``--repeat`` runs, the scan's own seconds and its share of the slow
path, and the load average (wall figures mean little when it exceeds the CPU count).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable

from contextmesh.core.canonical import loads, text_depth
from contextmesh.formats.graph_file import dump_graph
from contextmesh.testing import generate_graph


def _best(func: Callable[[], object], repeat: int) -> tuple[float, float]:
    """The best wall and CPU seconds of ``repeat`` calls."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        func()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    canonical = dump_graph(generate_graph(args.nodes, seed=0))
    edited = json.dumps(json.loads(canonical), indent=1).encode()
    for name, data in (("as written (fast path)", canonical), ("indented (slow path)", edited)):
        wall, cpu = _best(lambda data=data: loads(data), args.repeat)
        print(f"{name:24} {len(data) / 1e6:8.1f} MB  loads {wall:6.2f} s wall {cpu:6.2f} s CPU")
    scan_wall, scan_cpu = _best(lambda: text_depth(edited), args.repeat)
    slow_wall, _ = _best(lambda: loads(edited), args.repeat)
    print(
        f"{'nesting scan alone':24} {len(edited) / 1e6:8.1f} MB  scan  {scan_wall:6.2f} s wall {scan_cpu:6.2f} s CPU"
        f"  ({100 * scan_wall / slow_wall:.0f}% of the slow path)"
    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

"""Every InvalidationBench figure in one run, printed as one table.

    .venv/bin/python bench/run_all.py [--repeat 3] [--seed 0] [--layers 10] [--columns 24]
                                      [--delay-ms 20] [--width 8] [--sizes 10000,100000,1000000]
                                      [--max-gen-seconds 300] [--only invalidation,resume,blast]

One managed Prefect server (temporary home, free loopback port, no UI) serves both contenders and
is stopped at the end; the plain contender's cached results go to a temporary folder (Prefect's
local storage path), never the user's home. In order:

1. **invalidation** — the named cases, ContextMesh on Prefect against plain Prefect with
   input-keyed caching and hand-threaded assumption versions, ``--repeat`` times side by side
   (:mod:`invalidation.run`);
2. **resume** — the 5 %-stale resume of ``bench/orchestration.py``'s 1,000-task plan (20 ms
   workers) against its full plan flow, ``--repeat`` times;
3. **blast** — ``bench/blast_radius.py``'s measurement at each size in its own process, which
   also measures the receipt and its independent verification (:mod:`invalidation.scale`; the
   table shows the receipt at the largest size measured). A size whose
   graph generation is predicted (linearly, from the size before, +20 %) to exceed
   ``--max-gen-seconds`` is replaced by the largest size that fits, and the table says so.

Progress goes to stderr; the table to stdout. ``docs/benchmarks.md`` explains every row.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from contextmesh.orchestration.settings import prepare_environment

prepare_environment()  # before Prefect is imported

PARTS = ("invalidation", "resume", "blast")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _one_significant(value: int) -> int:
    scale = 10 ** (len(str(value)) - 1)
    return value // scale * scale


def machine() -> str:
    """A one-line description of this machine."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    system = f"{platform.system()} {platform.machine()}"
    return f"{os.cpu_count()} CPUs, {memory:.0f} GiB RAM, {system}, Python {platform.python_version()}"


def prefect_parts(args: argparse.Namespace, parts: set[str], work: Path) -> tuple[Any, list[dict[str, Any]]]:
    """The invalidation cases and the 5 %-stale resume, on one managed server."""
    import prefect.settings as ps
    from invalidation.run import run_bench
    from invalidation.scale import stale_resume

    from contextmesh.orchestration import local_server as server
    from contextmesh.orchestration.settings import client_settings

    home = work / "prefect-home"
    start = time.perf_counter()
    info = server.start(home, port=server.free_port(), ui=False, keep=False, timeout=180)
    _say(f"managed Prefect server on {info.api_url}: healthy after {time.perf_counter() - start:.1f} s")
    bench, resumes = None, []
    try:
        storage = {ps.PREFECT_LOCAL_STORAGE_PATH: str(work / "prefect-storage")}
        with client_settings(info.api_url, heartbeat=False), ps.temporary_settings(updates=storage):
            if "invalidation" in parts:
                bench = run_bench(
                    info.api_url,
                    work / "invalidation",
                    seed=args.seed,
                    layers=args.layers,
                    columns=args.columns,
                    delay_ms=args.delay_ms,
                    width=args.width,
                    repeat=args.repeat,
                    server_pid=info.pid,
                    progress=_say,
                )
            if "resume" in parts:
                resumes = stale_resume(info.api_url, work / "resume", repeat=args.repeat, seed=args.seed)
                for r in resumes:
                    _say(f"5%-stale resume: full {r['full_s']:.2f} s, resume {r['resume_s']:.2f} s")
            server.drain_workers()
    finally:
        server.stop(home)
    return bench, resumes


def blast_parts(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[str]]:
    """Blast radius at each size; the receipt at the largest."""
    from invalidation.scale import receipt_child

    sizes = [int(s) for s in args.sizes.split(",")]
    found: list[dict[str, Any]] = []
    skipped: list[str] = []
    for nodes in sizes:
        if found:
            per_node = found[-1]["generate_s"] / found[-1]["nodes"] * 1.2
            if per_node * nodes > args.max_gen_seconds:
                fits = _one_significant(int(args.max_gen_seconds / per_node))
                skipped.append(
                    f"{nodes:,} nodes: generation predicted at ~{per_node * nodes:.0f} s > "
                    f"{args.max_gen_seconds:.0f} s budget on this machine now; measured {fits:,} instead"
                )
                if fits <= found[-1]["nodes"]:
                    continue
                nodes = fits  # noqa: PLW2901 - the stand-in that fits the budget
        _say(f"blast radius and receipt at {nodes:,} nodes …")
        found.append(receipt_child(nodes, closure=100, reps=args.blast_reps, seed=args.seed))
    for figures in found[:-1]:  # the receipt is reported at the largest size measured
        for key in [k for k in figures if k.startswith(("receipt_", "ledger_", "verify_", "digest_"))]:
            del figures[key]
    return found, skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layers", type=int, default=10)
    parser.add_argument("--columns", type=int, default=24)
    parser.add_argument("--delay-ms", type=int, default=20)
    parser.add_argument("--width", type=int, default=8)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--blast-reps", type=int, default=20)
    parser.add_argument("--max-gen-seconds", type=float, default=300.0)
    parser.add_argument("--only", default=",".join(PARTS))
    args = parser.parse_args(argv)
    parts = {p for p in args.only.split(",") if p}
    unknown = parts - set(PARTS)
    if unknown:
        parser.error(f"--only takes {', '.join(PARTS)}; not {', '.join(sorted(unknown))}")
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="cm-bench-all-"))
    try:
        bench, resumes = (None, [])
        if parts & {"invalidation", "resume"}:
            bench, resumes = prefect_parts(args, parts, work)
        sizes, skipped = blast_parts(args) if "blast" in parts else ([], [])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    from _common import print_table
    from invalidation.report import blast_rows, invalidation_rows, resume_rows

    rows = (invalidation_rows(bench) if bench else []) + resume_rows(resumes) + blast_rows(sizes, skipped)
    title = "InvalidationBench"
    if bench is not None:
        s = bench.settings
        title += (
            f" — {s['tasks']} tasks ({s['layers']} layers x {s['columns']} columns), {s['facts']} facts, "
            f"{s['delay_ms']} ms workers, width {s['width']}, seed {s['seed']}, {s['repeat']} runs"
        )
    print()
    print_table(
        ["figure", "ContextMesh on Prefect", "plain Prefect (cache + versions)", "ground truth / note"],
        rows,
        title=title,
    )
    print(f"\n{machine()}; total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

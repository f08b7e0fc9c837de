"""Blast radius at scale: the invalidation closure of a planted ~100-node closure in graphs of
10^4, 10^5 and 10^6 nodes, its p50/p95, the cost of listing the preserved complement, peak RSS.

    .venv/bin/python bench/blast_radius.py [--sizes 10000,100000,1000000] [--closure 100]
                                           [--reps 50] [--seed 0] [--max-gen-seconds 180]

Aims: p95(largest) / p95(10^4) ≤ 2, and closure p95 ≤ 10 ms at 10^6 nodes.

Each size runs in its own process (``--one N``), so its peak RSS is its own and no graph of an
earlier size is still in memory. A graph is ``generate_graph(N, seed=seed, embeddings=False)``
(5 N edges) with ``plant_closure(graph, size=--closure, seed=seed + 1)``; then, timed separately:

* ``closure`` — ``invalidation.closure(graph, assumption_id)``, ``--reps`` times: what falls;
* ``preserved list`` — the complement ``blast_radius`` lists (every live node that neither
  falls nor is the assumption), computed the way ``blast_radius`` does, ``--reps`` times;
* ``blast_radius`` — the whole dry-run report (closure, doomed edges, preserved list).

Before generating a size, the run predicts its generation time from the previous size (linear in
N, with a 20 % margin); a size predicted to take longer than ``--max-gen-seconds`` is skipped and
reported and replaced by the largest size the budget allows (rounded down to one significant
figure); the ratio uses the largest size that ran, and the output says which that was.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Timings, peak_rss_mb, print_table, time_calls, timed

AIM_RATIO = 2.0
AIM_P95_MS = 10.0


def run_one(nodes: int, closure_size: int, reps: int, seed: int) -> dict[str, object]:
    """Generate, plant, time; return the figures as plain data."""
    from contextmesh.belief.invalidation import blast_radius, closure
    from contextmesh.testing import generate_graph, plant_closure

    graph_obj, gen_s = timed(lambda: generate_graph(nodes, seed=seed, embeddings=False))
    graph = graph_obj  # the generated ContextGraph
    rss_generated = peak_rss_mb()
    assumption_id = plant_closure(graph, closure_size, seed=seed + 1, embeddings=False)  # type: ignore[arg-type]
    fallen = closure(graph, assumption_id)  # type: ignore[arg-type]  # warm-up, and the size check

    def preserved(_: object) -> list[str]:
        return [n.id for n in graph if n.live and n.id != assumption_id and n.id not in fallen]  # type: ignore[attr-defined]

    gc.collect()
    closure_t, _ = time_calls(lambda _: closure(graph, assumption_id), range(reps))  # type: ignore[arg-type]
    preserved_t, lists = time_calls(preserved, range(reps))
    report_reps = max(5, reps // 5)
    report_t, reports = time_calls(lambda _: blast_radius(graph, assumption_id), range(report_reps))  # type: ignore[arg-type]
    report = reports[0]
    return {
        "nodes": len(graph.nodes),  # type: ignore[attr-defined]
        "edges": len(graph.edges),  # type: ignore[attr-defined]
        "generate_s": gen_s,
        "fallen": len(fallen),
        "preserved": len(lists[0]),  # type: ignore[arg-type]
        "report_fallen": report.blast_radius,  # type: ignore[attr-defined]
        "closure_ms": list(closure_t.samples_ms),
        "preserved_ms": list(preserved_t.samples_ms),
        "report_ms": list(report_t.samples_ms),
        "rss_generated_mb": rss_generated,
        "peak_rss_mb": peak_rss_mb(),
    }


def _one_significant(value: int) -> int:
    """``value`` rounded down to one significant figure (354,812 -> 300,000)."""
    if value < 10:
        return value
    scale = 10 ** (len(str(value)) - 1)
    return value // scale * scale


def _child(nodes: int, args: argparse.Namespace) -> dict[str, object] | None:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--one",
        str(nodes),
        "--closure",
        str(args.closure),
        "--reps",
        str(args.reps),
        "--seed",
        str(args.seed),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"size {nodes:,}: the child process failed after {time.perf_counter() - start:.0f} s")
        print(done.stderr[-2000:])
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--closure", type=int, default=100)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-gen-seconds", type=float, default=180.0)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(run_one(args.one, args.closure, args.reps, args.seed)))
        return 0

    sizes = [int(s) for s in args.sizes.split(",")]
    results: list[dict[str, object]] = []
    skipped: list[str] = []
    for nodes in sizes:
        if results:
            last = results[-1]
            predicted = float(last["generate_s"]) * nodes / int(last["nodes"]) * 1.2  # type: ignore[arg-type]
            if predicted > args.max_gen_seconds:
                per_node = predicted / nodes
                feasible = _one_significant(int(args.max_gen_seconds / per_node))
                skipped.append(
                    f"{nodes:,} nodes skipped: generation predicted at ~{predicted:.0f} s "
                    f"(> {args.max_gen_seconds:.0f} s budget) from {int(last['nodes']):,} nodes in "  # type: ignore[call-overload]
                    f"{float(last['generate_s']):.1f} s"  # type: ignore[arg-type]
                    + (f"; measured {feasible:,} nodes instead" if feasible > int(last["nodes"]) else "")  # type: ignore[call-overload]
                )
                if feasible <= int(last["nodes"]):  # type: ignore[call-overload]
                    continue
                nodes = feasible  # noqa: PLW2901 - the feasible stand-in for the skipped size
        figures = _child(nodes, args)
        if figures is None:
            skipped.append(f"{nodes:,} nodes: failed (see above)")
            continue
        results.append(figures)

    rows = []
    for r in results:
        closure_t = Timings(tuple(r["closure_ms"]))  # type: ignore[arg-type]
        preserved_t = Timings(tuple(r["preserved_ms"]))  # type: ignore[arg-type]
        report_t = Timings(tuple(r["report_ms"]))  # type: ignore[arg-type]
        rows.append(
            [
                r["nodes"],
                r["edges"],
                r["generate_s"],
                r["fallen"],
                closure_t.p50,
                closure_t.p95,
                r["preserved"],
                preserved_t.p50,
                preserved_t.p95,
                report_t.p50,
                report_t.p95,
                r["peak_rss_mb"],
            ]
        )
    print(f"blast radius: planted closure of {args.closure} nodes; {args.reps} repetitions (blast_radius: fewer)")
    print_table(
        [
            "nodes",
            "edges",
            "gen s",
            "fallen",
            "closure p50 ms",
            "closure p95 ms",
            "preserved",
            "preserved-list p50 ms",
            "p95 ms",
            "blast_radius p50 ms",
            "p95 ms",
            "peak RSS MiB",
        ],
        rows,
    )
    for line in skipped:
        print(line)
    if len(results) >= 2:
        first, last = results[0], results[-1]
        p95_first = Timings(tuple(first["closure_ms"])).p95  # type: ignore[arg-type]
        p95_last = Timings(tuple(last["closure_ms"])).p95  # type: ignore[arg-type]
        ratio = p95_last / p95_first
        largest = int(last["nodes"])  # type: ignore[call-overload]
        print(
            f"closure p95({largest:,}) / p95({int(first['nodes']):,}) = {ratio:.2f}"  # type: ignore[call-overload]
            f"  [aim ≤ {AIM_RATIO:g}: {'ok' if ratio <= AIM_RATIO else 'MISSED'}]"
        )
        at_million = "" if largest >= 1_000_000 else f" (measured at {largest:,}, not 10^6)"
        verdict = "ok" if p95_last <= AIM_P95_MS else "MISSED"
        print(f"closure p95 at largest = {p95_last:.3f} ms  [aim ≤ {AIM_P95_MS:g} ms at 10^6: {verdict}]{at_million}")
    if any(int(r["fallen"]) != args.closure for r in results):  # type: ignore[call-overload]
        print("WARNING: a closure did not hold exactly the planted nodes (generate.py invariant 6)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

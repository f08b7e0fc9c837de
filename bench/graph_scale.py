"""Graph scale: build, save and load a synthetic graph; print seconds, file size and peak RSS.

    .venv/bin/python bench/graph_scale.py [--nodes 100000] [--edges 500000] [--seed 0]
                                          [--no-embeddings] [--verify] [--profile build|save|load]

Targets at 100,000 nodes / 500,000 edges with default embeddings: save ≤ 10 s, load ≤ 10 s,
peak RSS ≤ 2 GB, embeddings ≤ 1 KB per node on disk. The built graph is dropped before the load,
so the load's memory is what a process that only reads the file would need (peak RSS is still
the process's high-water mark over every phase; the per-phase marks are printed too).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from contextmesh.core.graph import ContextGraph
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.testing import generate_graph

T = TypeVar("T")
TARGETS = {"save_s": 10.0, "load_s": 10.0, "peak_rss_mb": 2048.0, "embedding_bytes_per_node": 1024.0}


def _rss_mb() -> float:
    # ru_maxrss is KiB on Linux and bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _measure(label: str, profile: str | None, func: Callable[..., T], *args: Any) -> tuple[T, float, float]:
    """Run ``func``; return its result, wall seconds and this process's CPU seconds.

    CPU seconds are printed beside wall seconds because on a shared machine the wall clock also
    counts other processes' turns; the targets are wall seconds.
    """
    profiler = cProfile.Profile() if profile == label else None
    wall, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    result = func(*args)
    if profiler is not None:
        profiler.disable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue())
    return result, wall, cpu


def _save(graph: ContextGraph, path: Path) -> int:
    data = dump_graph(graph)
    path.write_bytes(data)
    return len(data)


def _load(path: Path) -> ContextGraph:
    return load_graph(path.read_bytes())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=None, help="default: 5 x nodes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-embeddings", action="store_true")
    parser.add_argument("--verify", action="store_true", help="also check dump(load(bytes)) == bytes")
    parser.add_argument("--profile", choices=("build", "save", "load"), help="print a cProfile of one phase")
    args = parser.parse_args(argv)

    graph, build_s, build_cpu = _measure("build", args.profile, _build, args)
    n_nodes, n_edges = len(graph.nodes), len(graph.edges)
    embedded = [n.embedding for n in graph.nodes.values() if n.embedding is not None]
    embedding_bytes = sum(len(e) + 2 for e in embedded)  # on disk: the string and its quotes
    rss_build = _rss_mb()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "graph.json"
        size, save_s, save_cpu = _measure("save", args.profile, _save, graph, path)
        rss_save = _rss_mb()
        del graph  # the load below starts from the file alone, as a fresh reader would
        gc.collect()
        loaded, load_s, load_cpu = _measure("load", args.profile, _load, path)
        rss_load = _rss_mb()
        # The networkx view is built on first use, not by the load; show what that first use costs.
        _, nx_s, _ = _measure("nx", None, lambda: loaded.nx)
        verified = dump_graph(loaded) == path.read_bytes() if args.verify else None

    figures: dict[str, object] = {
        "nodes": n_nodes,
        "edges": n_edges,
        "build_s": f"{build_s:.2f} (cpu {build_cpu:.2f})",
        "save_s": f"{save_s:.2f} (cpu {save_cpu:.2f})",
        "load_s": f"{load_s:.2f} (cpu {load_cpu:.2f})",
        "nx_view_first_use_s": f"{nx_s:.2f}",
        "file_mb": f"{size / 1e6:.1f}",
        "file_bytes_per_node": round(size / max(n_nodes, 1)),
        "embedded_nodes": len(embedded),
        "embedding_bytes_per_node": round(embedding_bytes / max(len(embedded), 1)),
        "rss_after_build_mb": round(rss_build),
        "rss_after_save_mb": round(rss_save),
        "rss_after_load_mb": round(rss_load),
        "peak_rss_mb": round(_rss_mb()),
    }
    if verified is not None:
        figures["round_trip_identical"] = verified
    measured = {"save_s": save_s, "load_s": load_s, "peak_rss_mb": _rss_mb()}
    measured["embedding_bytes_per_node"] = embedding_bytes / max(len(embedded), 1)
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        verdict = ""
        if key in TARGETS:
            ok = measured[key] <= TARGETS[key]
            verdict = "  ok" if ok else f"  MISSES target {TARGETS[key]:g}"
        print(f"{key:<{width}}  {value}{verdict}")
    return 0


def _build(args: argparse.Namespace) -> ContextGraph:
    return generate_graph(args.nodes, args.edges, seed=args.seed, embeddings=not args.no_embeddings)


if __name__ == "__main__":
    raise SystemExit(main())

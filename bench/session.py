"""Session commits: time and bytes written, for a full commit and a telemetry-only commit.

    .venv/bin/python bench/session.py [--nodes 100000] [--repeat 5] [--dir DIR] [--skip-scale]

Two sessions, side by side:

* **demo** — the bundled demo saved as a session (8 walk rounds, the secure-authentication plan's
  round 1 executed): graph, resolver, plan and ledger.
* **scale** — ``generate_graph(nodes)`` (default 100,000 nodes, 500,000 edges, embeddings on) with a
  ``Resolver`` that registers every entity under its label; no plan.

For each: a **full commit** (``Session.create`` into an empty directory: every companion written)
and a **telemetry-only commit** (one node's ``walks`` bumped, then ``Session.commit``). Times are
wall-clock p50 over ``--repeat`` runs and include dumping the companions (``Session.companions``,
shown separately as "dump") and writing them with every fsync. Aims: demo ≤ 50 ms and scale
≤ 5 s for a full commit.

What the telemetry-only row shows: telemetry (``walks``, ``traversals``) lives in its own small
companion (the graph companion carries the counters as 0), so bumping one counter rewrites only the
telemetry file and the manifest — the graph, resolver, plan and ledger files are reused under their
content address. The "written" column says what fraction of the generation's bytes that is.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile, print_table

from contextmesh.demo.saved import save_demo_session
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.session import Session
from contextmesh.testing import generate_graph

AIM_FULL_MS = {"demo": 50.0, "scale": 5000.0}


@dataclass
class Row:
    """One measured commit kind for one session."""

    session: str
    nodes: int
    edges: int
    commit: str
    time_ms: float
    dump_ms: float
    written: int
    total: int
    aim_ms: float | None

    def cells(self) -> list[object]:
        share = self.written / self.total if self.total else float("nan")
        verdict = "-" if self.aim_ms is None else ("met" if self.time_ms <= self.aim_ms else "MISSED")
        return [
            self.session,
            self.nodes,
            self.edges,
            self.commit,
            self.time_ms,
            self.dump_ms,
            self.written,
            self.total,
            f"{share:.1%}",
            "-" if self.aim_ms is None else f"≤ {self.aim_ms:g} ({verdict})",
        ]


def _p50(samples: list[float]) -> float:
    return percentile(samples, 50)


def _generation_bytes(session: Session) -> int:
    """Bytes of every companion the newest generation names (the manifest excluded)."""
    return sum(len(data) for data in session.companions().values())


def measure(name: str, session: Session, root: Path, repeat: int) -> list[Row]:
    """A full commit ``repeat`` times into fresh directories, then ``repeat`` telemetry-only commits."""
    nodes, edges = len(session.graph), len(session.graph.edges)
    full_ms, dump_ms, full_written = [], [], 0
    for run in range(repeat):
        start = time.perf_counter()
        session.companions()
        dump_ms.append((time.perf_counter() - start) * 1000)
        directory = root / f"{name}-{run}"
        before = session.bytes_written
        start = time.perf_counter()
        Session.create(directory, session)
        full_ms.append((time.perf_counter() - start) * 1000)
        full_written = session.bytes_written - before
        if run < repeat - 1:
            shutil.rmtree(directory)
    total = _generation_bytes(session)
    rows = [Row(name, nodes, edges, "full", _p50(full_ms), _p50(dump_ms), full_written, total, AIM_FULL_MS[name])]

    node = next(iter(session.graph.nodes.values()))
    tele_ms, tele_dump, tele_written = [], [], 0
    for _ in range(repeat):
        node.walks += 1
        start = time.perf_counter()
        session.companions()
        tele_dump.append((time.perf_counter() - start) * 1000)
        before = session.bytes_written
        start = time.perf_counter()
        session.commit()
        tele_ms.append((time.perf_counter() - start) * 1000)
        tele_written = session.bytes_written - before
    rows.append(Row(name, nodes, edges, "telemetry-only", _p50(tele_ms), _p50(tele_dump), tele_written, total, None))
    return rows


def demo_session(root: Path) -> Session:
    """The demo, saved once to get its session object (the measured commits go elsewhere)."""
    return save_demo_session(root / "demo-source", rounds=8, feed=root / "feed.json")


def scale_session(nodes: int) -> Session:
    """A generated graph with a resolver that knows every entity."""
    graph = generate_graph(nodes)
    resolver = Resolver()
    for node in graph.by_type("entity"):
        resolver.register(node.id, node.label)
    return Session(graph, resolver, policy="never")


def _built(label: str, build: Callable[[], Session]) -> Session:
    start = time.perf_counter()
    session = build()
    print(f"built {label} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000, help="nodes of the generated session")
    parser.add_argument("--repeat", type=int, default=5, help="commits measured per kind (p50 reported)")
    parser.add_argument("--dir", type=Path, help="where to write (default: a temporary directory, removed after)")
    parser.add_argument("--skip-scale", action="store_true", help="measure the demo only")
    args = parser.parse_args(argv)

    root = args.dir or Path(tempfile.mkdtemp(prefix="cm-bench-session-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        rows = measure("demo", _built("the demo session", lambda: demo_session(root)), root, args.repeat)
        if not args.skip_scale:
            scale = _built(f"a {args.nodes:,}-node session", lambda: scale_session(args.nodes))
            rows += measure("scale", scale, root, max(1, min(args.repeat, 3)))
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)

    print_table(
        [
            "session",
            "nodes",
            "edges",
            "commit",
            "p50 ms",
            "dump ms",
            "bytes written",
            "generation bytes",
            "written",
            "aim",
        ],
        [row.cells() for row in rows],
        title=f"Session commits (wall clock, fsync on, written under {root}; "
        f"load average at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)",
    )
    print()
    for row in rows:
        if row.commit == "telemetry-only":
            print(
                f"{row.session}: a telemetry-only commit wrote {row.written:,} of {row.total:,} bytes "
                f"({row.written / row.total:.4%}) — the telemetry companion and the manifest; the graph, "
                "resolver, plan and ledger files were reused under their content address."
            )
    missed = [row for row in rows if row.aim_ms is not None and row.time_ms > row.aim_ms]
    for row in missed:
        print(f"AIM MISSED: {row.session} full commit p50 {row.time_ms:,.0f} ms > {row.aim_ms:g} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

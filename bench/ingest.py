"""Incremental ingestion: one changed file of a folder against the whole folder, side by side.

    .venv/bin/python bench/ingest.py [--corpus DIR] [--repeat 7]

Over a folder of documents (default: the container-terminal corpus, 16 documents), each row is
the wall-clock p50 over ``--repeat`` runs of :func:`contextmesh.belief.ingestion.ingest`:

* **all files** — every document into an empty graph (what a first ``contextmesh ingest`` does);
* **unchanged** — the same folder again: one read and one SHA-256 per file, nothing written;
* **one revised** — one document with one sentence changed (a different document each run, in
  name order), into a copy of the ingested graph: its new revision, its new claim, the claim it no
  longer makes superseded, and what falls;
* **one new** — one document arriving in a folder that holds all the others.

"parsed" is how many documents the increment parsed (the changed ones, plus the unchanged ones
whose links into or out of a changed one must be read again); "written" the nodes and edges it
added. The issue's aim: a revised file costs at most a fifth of all files. Printed last: the ratio
and the load average (1, 5, 15 min), since two cores are shared with other work.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile, print_table

from contextmesh.belief.ingestion import Ingestion, ingest
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.resolve import Resolver

ROOT = Path(__file__).resolve().parents[1]
TERMINAL = ROOT / "tests" / "data" / "documents" / "terminal" / "docs"


def _documents(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in {".md", ".markdown", ".txt"})


def _timed(graph: ContextGraph, resolver: Resolver, folder: Path) -> tuple[float, Ingestion]:
    start = time.perf_counter()
    result = ingest(graph, resolver, [folder])
    return (time.perf_counter() - start) * 1000, result


def _revise(path: Path, run: int) -> None:
    """Change one sentence: the first full stop that ends a sentence gets a clause before it."""
    text = path.read_text(encoding="utf-8")
    cut = text.find(". ", text.find("\n\n", text.find("---", 3) + 3 if text.startswith("---") else 0))
    if cut < 0:
        cut = text.rfind(".")
    path.write_text(text[:cut] + f" as revised in run {run}" + text[cut:], encoding="utf-8")


def _written(graph: ContextGraph, before: tuple[int, int]) -> int:
    return len(graph.nodes) + len(graph.edges) - before[0] - before[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=TERMINAL, help="a folder of documents")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cm-bench-ingest-"))
    try:
        rows, ratio = _measure(args.corpus, work, args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(["operation", "p50 ms", "min ms", "max ms", "parsed", "written"], rows, title=f"ingest {args.corpus}")
    print(f"one revised / all files: {ratio:.3f} (aim: at most 0.200)")
    print("load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))


def _measure(corpus: Path, work: Path, repeat: int) -> tuple[list[list[object]], float]:
    folder = work / "docs"
    shutil.copytree(corpus, folder)
    names = _documents(folder)
    samples: dict[str, list[float]] = {"all": [], "unchanged": [], "revised": [], "new": []}
    parsed: dict[str, int] = {}
    written: dict[str, int] = {}
    base: tuple[ContextGraph, Resolver] | None = None
    for _ in range(repeat):
        graph, resolver = ContextGraph(), Resolver()
        ms, result = _timed(graph, resolver, folder)
        samples["all"].append(ms)
        parsed["all"], written["all"] = len(result.increment.revisions), len(graph.nodes) + len(graph.edges)
        base = (graph, resolver)
    assert base is not None
    for _ in range(repeat):
        graph, resolver = copy.deepcopy(base[0], {id(base[0].ontology): base[0].ontology}), copy.deepcopy(base[1])
        ms, result = _timed(graph, resolver, folder)
        samples["unchanged"].append(ms)
        parsed["unchanged"], written["unchanged"] = 0, 0
    pristine = {path: path.read_bytes() for path in names}
    for run in range(repeat):
        graph, resolver = copy.deepcopy(base[0], {id(base[0].ontology): base[0].ontology}), copy.deepcopy(base[1])
        target = names[run % len(names)]
        _revise(target, run)
        before = (len(graph.nodes), len(graph.edges))
        ms, result = _timed(graph, resolver, folder)
        target.write_bytes(pristine[target])
        samples["revised"].append(ms)
        parsed["revised"] = max(parsed.get("revised", 0), _parsed(result))
        written["revised"] = max(written.get("revised", 0), _written(graph, before))
    for run in range(repeat):
        target = names[run % len(names)]
        moved = work / "aside"
        shutil.move(target, moved)
        graph, resolver = ContextGraph(), Resolver()
        ingest(graph, resolver, [folder])
        shutil.move(moved, target)
        before = (len(graph.nodes), len(graph.edges))
        ms, result = _timed(graph, resolver, folder)
        samples["new"].append(ms)
        parsed["new"] = max(parsed.get("new", 0), _parsed(result))
        written["new"] = max(written.get("new", 0), _written(graph, before))
    labels = {
        "all": f"all files ({len(names)})",
        "unchanged": "unchanged",
        "revised": "one revised",
        "new": "one new",
    }
    rows: list[list[object]] = [
        [labels[k], percentile(v, 50), min(v), max(v), parsed[k], written[k]] for k, v in samples.items()
    ]
    return rows, percentile(samples["revised"], 50) / percentile(samples["all"], 50)


def _parsed(result: Ingestion) -> int:
    """Documents the increment parsed: the changed ones and the neighbours read for their links."""
    return len(result.increment.revisions) + result.increment.neighbours_read


if __name__ == "__main__":
    main()

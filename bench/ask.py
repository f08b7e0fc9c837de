"""Ask latency: p50/p95 of ``Walker.ask`` on the demo graph and on a generated 100,000-node graph,
side by side with a brute-force baseline that seeds by scanning every node's embedding.

    .venv/bin/python bench/ask.py [--nodes 100000] [--questions 200] [--baseline-questions 20]
                                  [--passes 5] [--seed 0] [--profile] [--skip-demo] [--skip-generated]

Aims: p50 ≤ 5 ms on the demo graph, p50 ≤ 50 ms at 100,000 nodes.

* **demo** — ``build_world(0)``; the question mix is ``contextmesh/demo/questions.json`` "rounds"
  plus every question of ``tests/data/questions.json``. One warm-up pass (the resolver learns
  aliases on first sight, as it would in a session), then ``--passes`` timed passes. The walker
  is built without the flat-retrieval token baseline, so only the walk is timed.
* **generated** — ``generate_graph(nodes, seed)`` (256-dimensional random embeddings, so the walker
  and baseline use a 256-dimensional ``HashedEmbedder``); a ``Resolver`` registers every entity by
  id and label (no aliases); ``--questions`` seeded questions, each an entity label inside a few
  words of a template. One timed pass after a warm-up pass over the first 20 questions.
* **brute force** — embed the question, cosine against every node's (pre-decoded) embedding,
  keep the best node as the seed: what seeding costs without the resolver's alias and blocking
  tables. Plain Python (``sum(map(mul, q, v))``), the fastest form the project's no-numpy core
  allows. At 100,000 nodes each scan takes about a second, so it runs on the first
  ``--baseline-questions`` questions only (the count is printed).

``--profile`` prints a cProfile of the generated-graph walks (it is printed anyway when the
100,000-node aim is missed).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import operator
import pstats
import random
import sys
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Timings, peak_rss_mb, print_table, time_calls, timed

from contextmesh.core import vectors
from contextmesh.core.graph import ContextGraph
from contextmesh.demo.knowledge import build_world, round_questions
from contextmesh.knowledge.embed import Embedder, HashedEmbedder
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.traverse import Walk, Walker
from contextmesh.testing import generate_graph

ROOT = Path(__file__).resolve().parent.parent
AIM_DEMO_P50_MS = 5.0
AIM_SCALE_P50_MS = 50.0
_TEMPLATES = (
    "What does {e} need for {w}?",
    "Why was {e} chosen for {w}?",
    "Which decision depends on {e}?",
    "Does {e} {w}?",
    "What changed about {e} and {w}?",
    "Who relies on {e} when {w}?",
)
_WORDS = (
    "vector search",
    "the job queue",
    "caching",
    "p99 latency",
    "failover",
    "back-pressure",
    "arm64 hosts",
    "hnsw indexes",
    "ten million rows",
    "a production licence",
)


class BruteForce:
    """Seed by scanning every node's embedding: cosine of the question against all nodes."""

    def __init__(self, graph: ContextGraph, embedder: Embedder) -> None:
        self.embedder = embedder
        self.ids: list[str] = []
        self.vectors: list[array[int]] = []
        for node in graph:
            if node.embedding is not None:
                self.ids.append(node.id)
                self.vectors.append(vectors.decode(node.embedding))

    def seed(self, question: str) -> str | None:
        """The node whose embedding is most similar to the question's."""
        query = vectors.decode(self.embedder.embed(question))
        mul = operator.mul
        best, best_score = None, -(1 << 62)
        for node_id, vector in zip(self.ids, self.vectors, strict=True):
            score = sum(map(mul, query, vector)) if len(vector) == len(query) else 0
            if score > best_score:
                best, best_score = node_id, score
        return best


def _demo_questions() -> list[str]:
    tests = json.loads((ROOT / "tests" / "data" / "questions.json").read_text())
    return [*round_questions(), *(str(q["question"]) for q in tests)]


def _outcomes(walks: list[object]) -> str:
    done = [w for w in walks if isinstance(w, Walk)]
    answered = sum(1 for w in done if w.dead_end is None)
    return f"{answered}/{len(done)} answered"


def _row(name: str, timings: Timings, aim: float | None, note: str) -> list[object]:
    verdict = "-" if aim is None else ("ok" if timings.p50 <= aim else "MISSED")
    return [name, timings.count, timings.p50, timings.p95, timings.max, "-" if aim is None else aim, verdict, note]


HEADERS = ["case", "asks", "p50 ms", "p95 ms", "max ms", "aim p50", "verdict", "note"]


def bench_demo(passes: int) -> None:
    """The demo graph: walker vs brute force over the fixed question mix."""
    (world, build_s) = timed(lambda: build_world(0))
    graph = world.graph  # type: ignore[attr-defined]
    embedder = HashedEmbedder()
    walker = Walker(graph, world.result.resolver, embedder=embedder)  # type: ignore[attr-defined]
    questions = _demo_questions()
    for question in questions:  # warm-up: resolver learning and vector decoding happen once
        walker.ask(question)
    mix = questions * passes
    walks, results = time_calls(walker.ask, mix)
    brute = BruteForce(graph, embedder)
    brute_t, _ = time_calls(brute.seed, mix)
    print(
        f"\n== demo graph: {len(graph.nodes):,} nodes, {len(graph.edges):,} edges (built in {build_s:.2f} s); "
        f"{len(questions)} questions x {passes} passes"
    )
    print_table(
        HEADERS,
        [
            _row("walker.ask", walks, AIM_DEMO_P50_MS, _outcomes(results)),
            _row("brute-force seed scan", brute_t, None, f"{len(brute.ids):,} vectors scanned"),
        ],
    )
    print(f"ratio brute/walker p50 = {brute_t.p50 / walks.p50:.2f}x, p95 = {brute_t.p95 / walks.p95:.2f}x")


def _scale_questions(graph: ContextGraph, count: int, seed: int) -> list[str]:
    rng = random.Random(seed)  # a reproducible question mix
    entities = [n.label for n in graph.by_type("entity")]
    out = []
    for _ in range(count):
        template = rng.choice(_TEMPLATES)
        out.append(template.format(e=rng.choice(entities), w=rng.choice(_WORDS)))
    return out


def bench_generated(nodes: int, count: int, baseline_count: int, seed: int, profile: bool) -> None:
    """A generated graph: resolver over every entity, walker vs brute force."""
    graph_obj, gen_s = timed(lambda: generate_graph(nodes, seed=seed))
    graph: ContextGraph = graph_obj  # type: ignore[assignment]
    resolver = Resolver()
    _, reg_s = timed(lambda: [resolver.register(n.id, n.label) for n in graph.by_type("entity")])
    dims = next(len(vectors.decode(n.embedding)) for n in graph if n.embedding is not None)
    embedder = HashedEmbedder(dims)
    walker = Walker(graph, resolver, embedder=embedder)
    questions = _scale_questions(graph, count, seed)
    for question in questions[:20]:  # warm-up: first-touch costs (imports, caches) are not the steady state
        walker.ask(question)
    gc.collect()
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        profiler.enable()
    walks, results = time_calls(walker.ask, questions)
    if profiler is not None:
        profiler.disable()
    brute_index, index_s = timed(lambda: BruteForce(graph, embedder))
    brute: BruteForce = brute_index  # type: ignore[assignment]
    brute_t, _ = time_calls(brute.seed, questions[:baseline_count])
    print(
        f"\n== generated graph: {len(graph.nodes):,} nodes, {len(graph.edges):,} edges (generated in {gen_s:.1f} s); "
        f"resolver: {len(resolver.canonical):,} entities registered in {reg_s:.2f} s, "
        f"{len(resolver.blocks):,} blocking keys; embeddings {dims}-d"
    )
    print_table(
        HEADERS,
        [
            _row("walker.ask", walks, AIM_SCALE_P50_MS, _outcomes(results)),
            _row(
                "brute-force seed scan",
                brute_t,
                None,
                f"{len(brute.ids):,} vectors (decoded in {index_s:.1f} s), first {brute_t.count} questions",
            ),
        ],
    )
    print(f"ratio brute/walker p50 = {brute_t.p50 / walks.p50:.1f}x, p95 = {brute_t.p95 / walks.p95:.1f}x")
    print(f"peak RSS {peak_rss_mb():,.0f} MiB")
    if walks.p50 > AIM_SCALE_P50_MS and profiler is None:
        print(f"\nwalker p50 {walks.p50:.1f} ms misses the {AIM_SCALE_P50_MS:.0f} ms aim; profiling one more pass:")
        profiler = cProfile.Profile()
        profiler.enable()
        for question in questions:
            walker.ask(question)
        profiler.disable()
    if profiler is not None:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(
            r"\((ask|_walk|find_mentions|_search|_neighbours|_best|_justify|embed)\)"
        )
        stats.sort_stats("tottime").print_stats(12)
        print(out.getvalue())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--baseline-questions", type=int, default=20)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--skip-generated", action="store_true")
    args = parser.parse_args(argv)
    if not args.skip_demo:
        bench_demo(args.passes)
    if not args.skip_generated:
        bench_generated(args.nodes, args.questions, args.baseline_questions, args.seed, args.profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

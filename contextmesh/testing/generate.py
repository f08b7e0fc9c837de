"""Seeded synthetic context graphs of any size, for tests and the scale benchmarks.

:func:`generate_graph` builds a typed graph with a realistic mix of node types (:data:`TYPE_MIX`)
and heavy-tailed degrees: every node draws a Pareto-distributed fitness, and an edge picks each
endpoint with probability proportional to it. That gives the few hubs and long tail that
preferential attachment produces, without a growth process whose order would fight the
type table. :func:`plant_closure` adds one assumption with a known set of nodes standing on it,
so a benchmark can measure a blast radius of a chosen size inside a big graph.

Invariants (``tests/test_generate.py`` pins them):

1. The graph is a pure function of the arguments. Every draw comes from a ``random.Random``
   seeded from ``seed``; every loop runs over a list or an insertion-ordered dict, never over a
   set or anything ordered by ``hash()``; so ``dump_graph`` gives the same bytes in every process
   and under every ``PYTHONHASHSEED``.
2. Embeddings come from their own generator, seeded from the first draw of the main one, so the
   same seed yields the same nodes and edges with ``embeddings=True`` or ``False``.
3. Every node and edge is written through the graph's checked write path (``add_node``,
   ``_mint_decision``, ``add_assumption``, ``add_edge``, and for the random edges
   ``graph_bulk.add_new_edges``, the same rules over a batch): every edge is a legal pair of GRAPH.md
   and every node carries its must-carry names. Sources carry ``origin`` and ``retrieved_at``
   (an ISO date in 2024, or null for about one in ten); claims and decisions carry provenance
   naming a source inserted before them; decisions are auto-minted (``decision:auto:`` ids);
   assumptions are active, version 1, and nothing contradicts them.
4. An edge between two nodes of the same type points from the later node to the earlier one,
   so ``depends_on``, ``supersedes``, ``cites`` and ``resolves_to`` never form a cycle.
5. Exactly ``nodes`` nodes. Exactly ``edges`` edges, unless the graph cannot hold that many
   distinct legal edges within a bounded number of draws; then as many as were found.
6. ``plant_closure(graph, size, seed=s)`` adds one assumption and exactly ``size`` nodes, and
   no edge through which invalidation could travel links them to the rest of the graph: the
   invalidation closure of the assumption is exactly those ``size`` nodes.
"""

from __future__ import annotations

import datetime
import random
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from pydantic import JsonValue

from contextmesh.core import vectors
from contextmesh.core.errors import IdentityError, InputError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.graph_bulk import add_new_edges
from contextmesh.core.ids import AUTO_DECISION_PREFIX, slug
from contextmesh.core.model import AssumptionRecord, Provenance
from contextmesh.core.ontology import ONTOLOGY, Ontology
from contextmesh.formats.graph_file import collector_paused

__all__ = ["TYPE_MIX", "generate_graph", "plant_closure"]

# Percent of nodes per type; sums to 100.
TYPE_MIX: tuple[tuple[str, int], ...] = (
    ("source", 8),
    ("claim", 40),
    ("entity", 25),
    ("decision", 10),
    ("assumption", 5),
    ("evidence", 12),
)

# (edge type, source type, target type, relative frequency). Two legal pairs are left out on
# purpose: evidence -[contradicts]-> assumption would mean a disproof the assumption records do
# not show (GRAPH.md rule 8), and assumption -[supersedes]-> assumption needs the two-sided
# supersession fields of the records, which the loader checks.
_EDGE_MIX: tuple[tuple[str, str, str, float], ...] = (
    ("mentions", "claim", "entity", 30.0),
    ("mentions", "source", "entity", 8.0),
    ("derived_from", "claim", "source", 3.0),
    ("derived_from", "decision", "claim", 6.0),
    ("derived_from", "entity", "source", 5.0),
    ("cites", "decision", "source", 3.0),
    ("cites", "claim", "claim", 5.0),
    ("contradicts", "claim", "claim", 2.0),
    ("contradicts", "evidence", "claim", 3.0),
    ("supports", "evidence", "claim", 8.0),
    ("supports", "claim", "decision", 6.0),
    ("supports", "evidence", "decision", 3.0),
    ("depends_on", "decision", "assumption", 3.0),
    ("depends_on", "decision", "decision", 3.0),
    ("depends_on", "claim", "assumption", 2.0),
    ("produces", "decision", "entity", 3.0),
    ("produces", "decision", "source", 1.0),
    ("supersedes", "decision", "decision", 0.5),
    ("supersedes", "claim", "claim", 1.0),
    ("justified_by", "decision", "evidence", 2.0),
    ("justified_by", "claim", "evidence", 2.0),
    ("justified_by", "assumption", "evidence", 1.0),
    ("resolves_to", "entity", "entity", 1.0),
)

_DIMENSIONS = 256
_PARETO_ALPHA = 1.8  # below 2 the degree variance is unbounded: a few hubs, a long tail
_BATCH = 50_000  # drawn edges stored at once
_DRAWS_PER_EDGE = 20  # give up after this many rejected draws per wanted edge (saturated graphs)
_YEAR_START = datetime.date(2024, 1, 1)

_TOPICS = (
    "pgvector",
    "postgres",
    "kafka",
    "redis",
    "prefect",
    "networkx",
    "pydantic",
    "orjson",
    "qdrant",
    "duckdb",
    "sqlite",
    "arrow",
    "parquet",
    "k8s",
    "terraform",
    "fastapi",
    "grpc",
    "numpy",
    "torch",
    "mcp",
)
_SOURCE_KINDS = ("release notes", "design doc", "benchmark report", "issue thread", "api reference", "runbook")
_FACETS = ("index", "cluster", "schema", "client", "quota", "pipeline", "dataset", "service")
_PREDICATES = (
    "supports hnsw indexes",
    "scales past ten million rows",
    "keeps p99 latency under 50 ms",
    "needs a licence for production",
    "drops messages under back-pressure",
    "is deprecated in the next major",
    "runs on arm64",
    "loses writes on failover",
)
_PURPOSES = ("vector search", "the job queue", "caching", "analytics", "ingestion", "the api layer")
_EVIDENCE_KINDS = ("benchmark", "test run", "incident", "user report", "audit")


def generate_graph(
    nodes: int,
    edges: int | None = None,
    *,
    seed: int = 0,
    embeddings: bool = True,
    ontology: Ontology = ONTOLOGY,
) -> ContextGraph:
    """A synthetic graph of ``nodes`` nodes and ``edges`` edges (default ``5 * nodes``).

    See the module's invariants. Sources, claims, entities and evidence carry a 256-dimensional
    embedding when ``embeddings`` is true; decisions and assumptions are created through paths
    that take none. A custom ``ontology`` must define GRAPH.md's six node types; edge recipes
    whose pair it does not allow are skipped.
    """
    if nodes < 0 or (edges is not None and edges < 0):
        raise InputError("generate_graph", f"nodes={nodes}, edges={edges}", "counts are not negative")
    wanted_edges = 5 * nodes if edges is None else edges
    # Every object the generator makes stays alive in the graph, so the cycle collector's full
    # passes over millions of them free nothing: they were a third of the CPU at 10^5 nodes.
    with collector_paused():
        return _generate(nodes, wanted_edges, seed, embeddings, ontology)


def _generate(nodes: int, wanted_edges: int, seed: int, embeddings: bool, ontology: Ontology) -> ContextGraph:
    # S311: reproducible test data wants a seeded generator; nothing here is a secret.
    rng = random.Random(seed)  # noqa: S311
    emb_rng = random.Random(rng.getrandbits(64))  # noqa: S311 - invariant 2: drawn even when unused
    graph = ContextGraph(ontology)
    pools: dict[str, list[str]] = {t: [] for t in ontology.node_types}
    provenance_source: dict[str, str] = {}

    def embedding() -> str | None:
        return _embedding(emb_rng) if embeddings else None

    for node_type in _type_sequence(nodes, rng):
        index = len(pools[node_type])
        node_id = _add_node(graph, node_type, index, rng, pools["source"], embedding)
        pools[node_type].append(node_id)
        if node_type in {"claim", "decision"}:
            provenance = graph.nodes[node_id].provenance
            assert provenance is not None  # _add_node gives claims and decisions provenance
            provenance_source[node_id] = provenance.source_id

    # Ground claims and decisions in the source their provenance names, the way an extractor would.
    for node_id, source_id in provenance_source.items():
        if len(graph.edges) >= wanted_edges:
            break
        edge_type = "derived_from" if node_id.startswith("claim:") else "cites"
        graph.add_edge(node_id, edge_type, source_id)

    _add_random_edges(graph, pools, wanted_edges, rng)
    return graph


def plant_closure(graph: ContextGraph, size: int, *, seed: int, embeddings: bool = True) -> str:
    """Add one assumption and exactly ``size`` nodes standing on it; return the assumption's id.

    Claims ``depends_on`` the assumption; decisions form a deep tree under it through
    ``depends_on`` (to the assumption or an earlier planted decision) and ``derived_from`` a planted
    claim; entities are ``produces`` targets of planted decisions. The planted nodes also reach
    into the existing graph, but only through edges that carry no invalidation (``mentions``,
    ``cites``), so the closure stays exactly the planted set (invariant 6). Planting the same
    seed twice in one graph is refused with :class:`IdentityError`.
    """
    if size < 1:
        raise InputError("plant_closure", f"size={size}", "a planted closure has at least one node")
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not a secret
    emb_rng = random.Random(rng.getrandbits(64))  # noqa: S311
    existing_sources = [n.id for n in graph.by_type("source", live_only=False)]
    existing_entities = [n.id for n in graph.by_type("entity", live_only=False)]
    topic = rng.choice(_TOPICS)
    tag = f"P{seed}"

    def embedding() -> str | None:
        return _embedding(emb_rng) if embeddings else None

    if existing_sources:
        source_id = rng.choice(existing_sources)
    else:
        source_id = graph.add_node(
            "source", f"{tag} planted {topic} notes", attrs={"origin": f"synthetic://{tag}", "retrieved_at": None}
        ).id

    def provenance() -> Provenance:
        start = rng.randrange(5000)
        return Provenance(source_id=source_id, span=(start, start + rng.randrange(20, 400)), extractor="synthetic")

    assumption_id = slug(f"{tag} assumption: the {topic} quota holds", "assumption")
    graph.add_assumption(_assumption(assumption_id, f"{tag} assumption: the {topic} quota holds"))

    n_decisions = max(1, (size + 1) // 2)
    n_claims = (size - n_decisions) // 2
    n_entities = size - n_decisions - n_claims

    claims = []
    for j in range(n_claims):
        label = f"{tag}.C{j}: {topic} {rng.choice(_PREDICATES)}"
        claim = graph.add_node("claim", label, provenance=provenance(), embedding=embedding())
        graph.add_edge(claim.id, "depends_on", assumption_id)
        if existing_entities:
            graph.add_edge(claim.id, "mentions", rng.choice(existing_entities))
        claims.append(claim.id)

    decisions: list[str] = []
    for j in range(n_decisions):
        title = f"{tag}.D{j}: rework {topic} for {rng.choice(_PURPOSES)}"
        decision_id = slug(title + "|1", AUTO_DECISION_PREFIX.rstrip(":"))
        attrs: dict[str, JsonValue] = {"rationale": f"planted step {j} of {tag}", "decision_identity": "auto"}
        graph._mint_decision(decision_id, title, attrs, provenance())
        # Recent parents make a deep, narrow tree: a chain with side branches.
        if not decisions or rng.random() < 0.1:
            graph.add_edge(decision_id, "depends_on", assumption_id)
        if decisions:
            graph.add_edge(decision_id, "depends_on", decisions[rng.randrange(max(0, j - 4), j)])
        if claims and rng.random() < 0.5:
            graph.add_edge(decision_id, "derived_from", rng.choice(claims))
        if existing_sources and rng.random() < 0.5:
            graph.add_edge(decision_id, "cites", rng.choice(existing_sources))
        decisions.append(decision_id)

    for j in range(n_entities):
        label = f"{tag}.E{j} {topic} {rng.choice(_FACETS)}"
        entity = graph.add_node("entity", label, attrs={"canonical": label, "aliases": []}, embedding=embedding())
        graph.add_edge(rng.choice(decisions), "produces", entity.id)
    return assumption_id


def _type_sequence(nodes: int, rng: random.Random) -> list[str]:
    """``nodes`` type names in :data:`TYPE_MIX` proportions, shuffled, a source first."""
    exact = [(t, nodes * share / 100) for t, share in TYPE_MIX]
    counts = {t: int(x) for t, x in exact}
    # Largest remainder; ties go to the type listed first (sorted() is stable).
    by_remainder = sorted(exact, key=lambda item: item[1] - int(item[1]), reverse=True)
    for node_type, _ in by_remainder[: nodes - sum(counts.values())]:
        counts[node_type] += 1
    if nodes and not counts["source"]:  # claims and decisions need a source for provenance
        largest = max(counts, key=lambda t: counts[t])
        counts[largest] -= 1
        counts["source"] = 1
    sequence = [t for t, _ in TYPE_MIX for _ in range(counts[t])]
    rng.shuffle(sequence)
    if sequence:
        first = sequence.index("source")
        sequence[0], sequence[first] = sequence[first], sequence[0]
    return sequence


def _add_node(
    graph: ContextGraph,
    node_type: str,
    index: int,
    rng: random.Random,
    sources: list[str],
    embedding: Callable[[], str | None],
) -> str:
    """Add the ``index``-th node of a type. Its number sits in the first 40 characters of the
    label, inside the readable body of its slug id, so no two generated ids can collide."""
    topic = rng.choice(_TOPICS)
    emb = embedding
    if node_type == "source":
        label = f"S{index}: {topic} {rng.choice(_SOURCE_KINDS)}"
        day = _YEAR_START + datetime.timedelta(days=rng.randrange(366))
        origin = rng.choice((f"https://docs.example.org/{topic}/{index}", f"file://corpus/{topic}-{index}.md"))
        attrs: dict[str, JsonValue] = {
            "origin": origin,
            "retrieved_at": None if rng.random() < 0.1 else day.isoformat(),
        }
        return graph.add_node("source", label, attrs=attrs, embedding=emb()).id
    if node_type == "entity":
        label = f"{topic} {rng.choice(_FACETS)} {index}"
        aliases: list[JsonValue] = [f"{topic}-{index}-{k}" for k in range(rng.randrange(3))]
        return graph.add_node("entity", label, attrs={"canonical": label, "aliases": aliases}, embedding=emb()).id
    if node_type == "evidence":
        kind = rng.choice(_EVIDENCE_KINDS)
        label = f"E{index}: {kind} of {topic}"
        return graph.add_node("evidence", label, attrs={"kind": kind}, embedding=emb()).id
    if node_type == "assumption":
        statement = f"A{index}: {topic} {rng.choice(_PREDICATES)}"
        return graph.add_assumption(_assumption(slug(statement, "assumption"), statement)).id
    start = rng.randrange(5000)
    provenance = Provenance(
        source_id=sources[rng.randrange(len(sources))],
        span=(start, start + rng.randrange(20, 400)),
        extractor="synthetic",
    )
    if node_type == "claim":
        label = f"C{index}: {topic} {rng.choice(_PREDICATES)}"
        attrs = {"confidence": round(rng.random(), 2)}
        return graph.add_node("claim", label, attrs=attrs, provenance=provenance, embedding=emb()).id
    if node_type == "decision":
        title = f"D{index}: use {topic} for {rng.choice(_PURPOSES)}"
        decision_id = slug(title + "|1", AUTO_DECISION_PREFIX.rstrip(":"))
        attrs = {"rationale": f"{topic} fits {rng.choice(_PURPOSES)} best", "decision_identity": "auto"}
        return graph._mint_decision(decision_id, title, attrs, provenance).id
    raise InputError("generate_graph", f"node type {node_type!r}", f"the generator knows {[t for t, _ in TYPE_MIX]}")


def _add_random_edges(graph: ContextGraph, pools: dict[str, list[str]], wanted: int, rng: random.Random) -> None:
    # Pareto fitness per node; cumulative sums per type let one bisect pick an endpoint.
    cumulative = {t: list(accumulate(rng.paretovariate(_PARETO_ALPHA) for _ in pool)) for t, pool in pools.items()}
    legal = graph.ontology.signatures
    mix = [
        (edge_type, src, dst)
        for edge_type, src, dst, _ in _EDGE_MIX
        if (src, dst) in legal.get(edge_type, frozenset())
        and len(pools.get(src, ())) >= (2 if src == dst else 1)
        and len(pools.get(dst, ())) >= 1
    ]
    if not mix:
        return
    mix_weights = list(accumulate(w for e, s, d, w in _EDGE_MIX if (e, s, d) in mix))
    draws_left = _DRAWS_PER_EDGE * wanted + 1000
    # The triples stored so far (what ``find_edge`` answers, without deriving an edge id per draw),
    # each as one integer over the pools' positions: at 10^6 nodes a set of 5,000,000 string
    # triples was the generator's largest cost in time and memory.
    keys = _TripleKeys(graph, pools)
    stored = keys.stored(graph, pools)
    width, type_number, offset, types = keys.width, keys.type_number, keys.offset, keys.types

    spans = {t: (weights, weights[-1] if weights else 0.0, len(weights) - 1) for t, weights in cumulative.items()}
    draw = rng.random

    def pick(node_type: str) -> int:
        weights, total, last = spans[node_type]
        return bisect_right(weights, draw() * total, 0, last)

    # The drawn edges, written in batches through the checked bulk write (graph_bulk): the same
    # rules and the same graph as one add_edge a draw, without five calls an edge.
    batch: list[tuple[str, str, str, tuple[str, ...], float]] = []
    drawn = len(graph.edges)
    while drawn < wanted and draws_left > 0:
        draws_left -= 1
        edge_type, src_type, dst_type = mix[bisect_right(mix_weights, rng.random() * mix_weights[-1], 0, len(mix) - 1)]
        src_index, dst_index = pick(src_type), pick(dst_type)
        if src_type == dst_type:
            if src_index == dst_index:
                continue
            src_index, dst_index = max(src_index, dst_index), min(src_index, dst_index)  # invariant 4
        key = ((offset[src_type] + src_index) * width + offset[dst_type] + dst_index) * types + type_number[edge_type]
        if key in stored:
            continue  # a repeat would merge into the existing edge, not add one
        src, dst = pools[src_type][src_index], pools[dst_type][dst_index]
        evidence: tuple[str, ...] = ()
        if edge_type == "supports" and src_type == "claim" and pools["evidence"] and rng.random() < 0.3:
            evidence = (pools["evidence"][pick("evidence")],)
        weight = round(rng.uniform(0.1, 2.0), 2)
        batch.append((src, edge_type, dst, evidence, weight))
        stored.add(key)
        drawn += 1
        if len(batch) == _BATCH or drawn == wanted:
            drawn = _write(graph, batch)
    if batch:
        _write(graph, batch)


class _TripleKeys:
    """Edges' ``(src, type, dst)`` as integers: each endpoint's place among all pools' nodes, the
    type's number in the ontology."""

    def __init__(self, graph: ContextGraph, pools: dict[str, list[str]]) -> None:
        self.offset: dict[str, int] = {}
        at = 0
        for node_type, pool in pools.items():
            self.offset[node_type] = at
            at += len(pool)
        self.width = max(at, 1)
        self.type_number = {edge_type: number for number, edge_type in enumerate(graph.ontology.edge_types)}
        self.types = max(len(self.type_number), 1)  # Python's ints have no width: any ontology fits

    def stored(self, graph: ContextGraph, pools: dict[str, list[str]]) -> set[int]:
        """The keys of the edges the graph holds already (the grounding edges)."""
        if not graph.edges:
            return set()
        place = {n: self.offset[t] + i for t, pool in pools.items() for i, n in enumerate(pool)}
        return {
            (place[e.src] * self.width + place[e.dst]) * self.types + self.type_number[e.type]
            for e in graph.edges.values()
        }


def _write(graph: ContextGraph, batch: list[tuple[Any, ...]]) -> int:
    """Store a batch of drawn edges and empty it; the graph's edge count after."""
    try:
        add_new_edges(graph, *(list(column) for column in zip(*batch, strict=True)))
    except IdentityError:
        # Two edges share an id only if two node ids share 64 bits of SHA-1 (ADR 0021); the graph
        # refuses the second (GRAPH.md rule 9). Store the batch one by one, skipping such an edge
        # (deterministically), and let the caller draw again for it.
        for src, edge_type, dst, evidence, weight in batch:
            if graph.find_edge(src, edge_type, dst) is None:
                try:
                    graph.add_edge(src, edge_type, dst, evidence_ids=evidence, weight=weight)
                except IdentityError:
                    continue
    batch.clear()
    return len(graph.edges)


def _assumption(assumption_id: str, statement: str) -> AssumptionRecord:
    return AssumptionRecord(
        id=assumption_id,
        statement=statement,
        status="active",
        version=1,
        created_by="synthetic",
        created_at_build=0,
        evidence_ids=(),
        supersedes=None,
        superseded_by=None,
        rejected_at_build=None,
    )


def _embedding(rng: random.Random) -> str:
    # -128 has no stored form (vectors.check); folding it to -127 keeps the draw cheap.
    return vectors.encode_bytes(rng.randbytes(_DIMENSIONS).replace(b"\x80", b"\x81"))

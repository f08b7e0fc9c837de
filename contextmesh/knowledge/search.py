"""Where a walk starts and what it reaches: seeds, and the uniform-cost search over typed edges.

:func:`reach` runs one search per seed — forward along any edge the policy allows, backward only
into claims, decisions and evidence — with a penalty on hubs, a hop budget and an expansion cap.
An edge of a type the question asks across costs :data:`ASKED_EDGE_COST` instead of 1, so the walk
prefers it. For every node it keeps the cheapest path from any seed and its *closeness*: the sum
over the seeds of 1 / hops² from each. Pruned or invalidated nodes and edges are never crossed;
the claims and decisions the search would have needed are reported as *blocked*.

When no mention resolves, :func:`word_seeds` offers the entities whose names share the question's
rarest words and :func:`source_seeds` the sources of the claims that match it best.

Invariant: deterministic — ties on the heap break by hops, then discovery order; seeds and
neighbours are taken in insertion order.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contextmesh.knowledge.ranking import AnswerIndex, Reach, Trail
from contextmesh.knowledge.text import content_stems

if TYPE_CHECKING:
    from contextmesh.core.graph import ContextGraph
    from contextmesh.core.model import EdgeRecord

__all__ = ["ASKED_EDGE_COST", "BLOCKABLE", "WORD_SEEDS", "Reached", "reach", "source_seeds", "word_seeds"]

ASKED_EDGE_COST = 0.5
WORD_SEEDS = 4
BLOCKABLE = frozenset({"claim", "decision", "evidence"})
_EDGE_COST = {"resolves_to": 0.3}
_HUB_PENALTY = 0.15
_CLOSENESS_POWER = 2.0
_REVERSE_INTO = frozenset({"claim", "decision", "evidence"})
_Entry = tuple[float, int, int, Trail]  # cost, hops, discovery order, trail


@dataclass(frozen=True)
class Reached:
    """What the searches from one set of seeds found."""

    reached: dict[str, Reach]
    blocked: dict[str, str]
    seeds: list[str]


def reach(
    graph: ContextGraph,
    seeds: list[str],
    policy: frozenset[str],
    asked: Iterable[str],
    *,
    hop_budget: int,
    max_expand: int,
) -> Reached:
    """Search from every seed; keep each node's cheapest path and its closeness to the seeds."""
    best: dict[str, _Entry] = {}
    near: dict[str, float] = {}
    blocked: dict[str, str] = {}
    costs = {**_EDGE_COST, **dict.fromkeys(asked, ASKED_EDGE_COST)}
    for seed in seeds:
        for node_id, entry in _search(graph, seed, policy, blocked, costs, hop_budget, max_expand).items():
            if node_id not in best or entry[:3] < best[node_id][:3]:
                best[node_id] = entry
            near[node_id] = near.get(node_id, 0.0) + 1.0 / max(1, entry[1]) ** _CLOSENESS_POWER
    reached = {n: Reach(e[1], e[3], near.get(n, 0.0)) for n, e in best.items()}
    return Reached(reached, blocked, seeds)


def _search(
    graph: ContextGraph,
    seed: str,
    policy: frozenset[str],
    blocked: dict[str, str],
    costs: Mapping[str, float],
    budget: int,
    cap: int,
) -> dict[str, _Entry]:
    # Plain tuples on the heap (cost, hops, counter, node, trail): comparing them is far cheaper
    # than comparing dataclasses, and the counter keeps ties in discovery order.
    counter = 0
    frontier: list[tuple[float, int, int, str, Trail]] = [(0.0, 0, 0, seed, ())]
    settled: dict[str, _Entry] = {}
    while frontier and len(settled) < cap:
        cost, hops, order, node_id, trail = heapq.heappop(frontier)
        if node_id in settled:
            continue
        settled[node_id] = (cost, hops, order, trail)
        if hops >= budget:
            continue
        for edge, other, forward in _neighbours(graph, node_id, policy, blocked):
            if other in settled:
                continue
            counter += 1
            # Degrees are not cached: they grow with every write, and a long-lived walker must
            # answer exactly as a freshly loaded one would.
            step = costs.get(edge.type, 1.0) + _HUB_PENALTY * math.log1p(graph.degree(other))
            heapq.heappush(frontier, (cost + step, hops + 1, counter, other, (*trail, (edge.id, other, forward))))
    return settled


def _neighbours(
    graph: ContextGraph, node_id: str, policy: frozenset[str], blocked: dict[str, str]
) -> list[tuple[EdgeRecord, str, bool]]:
    out: list[tuple[EdgeRecord, str, bool]] = []
    for edge in graph.out_edges(node_id, policy, live_only=False):
        if _usable(graph, edge, edge.dst, blocked):
            out.append((edge, edge.dst, True))
    for edge in graph.in_edges(node_id, policy, live_only=False):
        if graph.node(edge.src).type in _REVERSE_INTO and _usable(graph, edge, edge.src, blocked):
            out.append((edge, edge.src, False))
    return out


def _usable(graph: ContextGraph, edge: EdgeRecord, other: str, blocked: dict[str, str]) -> bool:
    node = graph.node(other)
    if node.live and edge.live:
        return True
    if node.type in BLOCKABLE:
        why = "pruned" if node.pruned else "invalidated"
        blocked.setdefault(other, f"{node.type} '{node.label}' ({why})")
    return False


def entity_words(graph: ContextGraph) -> dict[str, list[str]]:
    """Stem → the live entities whose name holds it, in insertion order."""
    table: dict[str, list[str]] = {}
    for node in graph.by_type("entity"):
        for token in dict.fromkeys(content_stems(node.label)):
            table.setdefault(token, []).append(node.id)
    return table


def word_seeds(table: Mapping[str, list[str]], terms: Iterable[str]) -> list[str]:
    """Up to :data:`WORD_SEEDS` entities whose names share the question's words, rarest word first."""
    distinct = list(dict.fromkeys(terms))
    hits = sorted((len(table[t]), i, t) for i, t in enumerate(distinct) if t in table and len(t) > 2)
    seeds: list[str] = []
    for _, _, token in hits:
        for entity_id in table[token]:
            if entity_id not in seeds and len(seeds) < WORD_SEEDS:
                seeds.append(entity_id)
    return seeds


def source_seeds(graph: ContextGraph, index: AnswerIndex, terms: tuple[str, ...]) -> list[str]:
    """The sources of the claims that match the question best: where a walk no name anchors enters.

    The path then runs from the source to its claim — the answer's provenance — and the
    confidence check still decides whether that claim answers.
    """
    if not any(index.bm25.idf(term) > 0.0 for term in index.terms(terms)):
        return []
    claims = [node.id for node in graph.by_type("claim")]
    seeds: list[str] = []
    for claim_id in index.bm25.top(index.terms(terms), WORD_SEEDS, claims):
        for edge in graph.out_edges(claim_id, ("derived_from",)):
            if graph.node(edge.dst).type == "source" and edge.dst not in seeds:
                seeds.append(edge.dst)
    return seeds

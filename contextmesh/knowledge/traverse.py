"""Walks: an answer is the path the walk took, or one of exactly four named dead ends.

``Walker.ask`` resolves the question's mentions to entities, then runs a uniform-cost search from
them over typed edges — forward along any edge the policy allows, backward only into claims,
decisions and evidence — with a penalty on hubs, a hop budget and an expansion cap. Every claim or
decision reached is a candidate; its score blends vector similarity (45 %) and word overlap (55 %)
with what the question says beyond the entities it mentions — the mentions already chose where
the walk starts, so only the rest of the question can choose among what it reaches — plus its
closeness to the mentioned entities (the mean over them of 1 / hops from each; a claim that
mentions every entity the question names scores 1); a "why" question also favours a candidate
that states a cause ("because", "so", "due to"). The answer's path is
returned with edge directions, then its justification (the sources it derives from, the
assumptions it depends on).

The four dead ends, each with a detail naming what was tried:

* ``entity_unresolved`` — no mention in the question resolved to an entity;
* ``no_typed_edge`` — the entities resolved, but no live edge the policy allows leaves them;
* ``wrong_node_type`` — the walk reached only nodes that cannot answer (entities, sources…);
* ``pruned_too_early`` — what the walk needed has been pruned or invalidated.

Invariants:

1. A walk is deterministic: ties break by cost, then hops, then insertion sequence.
2. A walk moves telemetry (``walks``, ``traversals``) and nothing else in the graph.
3. Pruned or invalidated nodes and edges are never on a path.
"""

from __future__ import annotations

import heapq
import math
import re
from array import array
from collections import Counter
from dataclasses import dataclass, field

from contextmesh.core import vectors
from contextmesh.core.errors import OntologyError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import EdgeRecord
from contextmesh.knowledge.embed import Embedder, HashedEmbedder, cosine
from contextmesh.knowledge.pipeline import Chunk
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.text import content_stems, estimate_tokens, normalize

__all__ = [
    "ANSWER_TYPES",
    "DEAD_END_REASONS",
    "DEFAULT_POLICY",
    "DeadEnd",
    "FlatBaseline",
    "Step",
    "Walk",
    "Walker",
    "WalkerSettings",
]

DEAD_END_REASONS = ("entity_unresolved", "no_typed_edge", "wrong_node_type", "pruned_too_early")
ANSWER_TYPES = frozenset({"claim", "decision"})
_REVERSE_INTO = frozenset({"claim", "decision", "evidence"})
DEFAULT_POLICY: tuple[str, ...] = (
    "mentions",
    "derived_from",
    "cites",
    "contradicts",
    "supports",
    "depends_on",
    "produces",
    "supersedes",
    "justified_by",
    "resolves_to",
)
_EDGE_COST = {"resolves_to": 0.3}
_HUB_PENALTY = 0.15
_CLOSENESS = 0.3
_UNIT = 127 * 127  # the dot product of two stored unit vectors
_CAUSAL_BONUS = 0.1
_CAUSAL = re.compile(r"\b(because|since|so|due to|as a result|caused|causes)\b", re.IGNORECASE)
_WHY = re.compile(r"^\s*why\b|\bwhat (made|caused)\b", re.IGNORECASE)


@dataclass(frozen=True)
class WalkerSettings:
    """How far and how wide a walk may go; saved with a session so a restart answers the same."""

    hop_budget: int = 6
    flat_k: int = 40
    max_expand: int = 260
    policy: tuple[str, ...] = DEFAULT_POLICY

    def to_dict(self) -> dict[str, object]:
        """Plain data."""
        return {
            "hop_budget": self.hop_budget,
            "flat_k": self.flat_k,
            "max_expand": self.max_expand,
            "policy": list(self.policy),
        }


@dataclass(frozen=True)
class Step:
    """One node on a path, and the edge that led to it (``None`` for the start)."""

    node_id: str
    node_type: str
    label: str
    edge_type: str | None = None
    edge_id: str | None = None
    forward: bool = True

    def render(self) -> str:
        """``-[type]-> (claim) text`` or ``<-[type]- (claim) text``; the start has no arrow."""
        node = f"({self.node_type}) {self.label}"
        if self.edge_type is None:
            return node
        return f"-[{self.edge_type}]-> {node}" if self.forward else f"<-[{self.edge_type}]- {node}"


@dataclass(frozen=True)
class DeadEnd:
    """Why a walk could not answer: one of :data:`DEAD_END_REASONS`, with what it tried."""

    reason: str
    detail: str


@dataclass
class Walk:
    """One question asked: the answer and its path, or a dead end."""

    question: str
    mentions: list[str]
    answer_id: str | None = None
    answer: str | None = None
    path: list[Step] = field(default_factory=list)
    justification: list[Step] = field(default_factory=list)
    score: float = 0.0
    tokens: int = 0
    flat_tokens: int = 0
    dead_end: DeadEnd | None = None

    @property
    def hops(self) -> int:
        """Edges on the path."""
        return max(0, len(self.path) - 1)

    def to_dict(self) -> dict[str, object]:
        """Plain data for ``--json`` and MCP."""
        return {
            "question": self.question,
            "mentions": self.mentions,
            "answer_id": self.answer_id,
            "answer": self.answer,
            "hops": self.hops,
            "score": self.score,
            "tokens": self.tokens,
            "flat_tokens": self.flat_tokens,
            "path": [_step_dict(s) for s in self.path],
            "justification": [_step_dict(s) for s in self.justification],
            "dead_end": None
            if self.dead_end is None
            else {"reason": self.dead_end.reason, "detail": self.dead_end.detail},
        }


def _step_dict(step: Step) -> dict[str, object]:
    return {
        "node_id": step.node_id,
        "type": step.node_type,
        "label": step.label,
        "edge": step.edge_type,
        "edge_id": step.edge_id,
        "direction": None if step.edge_type is None else ("out" if step.forward else "in"),
    }


class FlatBaseline:
    """Flat top-k retrieval over the corpus chunks with the same embedder: what a walk is compared with."""

    def __init__(self, chunks: list[Chunk], embedder: Embedder) -> None:
        self.embedder = embedder
        self.chunks = {chunk.key: chunk for chunk in chunks}
        # Flat retrieval ranks every chunk: it is the baseline, so it gets no index shortcut.
        self._vectors = {chunk.key: vectors.decode(embedder.embed(chunk.text)) for chunk in chunks}

    def tokens(self, question: str, k: int) -> int:
        """Tokens flat top-k would send: the k best chunks by similarity, words × 1.3 each."""
        query = vectors.decode(self.embedder.embed(question))
        ranked = sorted(self.chunks, key=lambda key: -cosine(query, self._vectors[key]))
        return sum(estimate_tokens(self.chunks[key].text) for key in ranked[:k])


@dataclass(order=True)
class _Entry:
    cost: float
    hops: int
    seq: int
    node_id: str = field(compare=False)
    trail: tuple[tuple[str, str, bool], ...] = field(compare=False)  # (edge id, node id, forward)


class Walker:
    """Answers questions by walking the graph; keeps the walks for health and the dashboard."""

    def __init__(
        self,
        graph: ContextGraph,
        resolver: Resolver,
        *,
        embedder: Embedder | None = None,
        settings: WalkerSettings | None = None,
        flat: FlatBaseline | None = None,
    ) -> None:
        self.graph = graph
        self.resolver = resolver
        self.embedder = embedder or HashedEmbedder()
        self.settings = settings or WalkerSettings()
        self.flat = flat
        self.walks: list[Walk] = []
        self._check_policy(self.settings.policy)
        self._vectors: dict[str, tuple[str, array[int]]] = {}
        self._label_stems: dict[str, tuple[str, frozenset[str]]] = {}

    # -- the walk -------------------------------------------------------------------------

    def ask(self, question: str, *, policy: tuple[str, ...] | None = None) -> Walk:
        """Answer ``question`` with a path, or name the dead end. Records telemetry.

        ``policy`` narrows the edge types this one walk may follow (default: the settings').
        """
        if policy is not None:
            self._check_policy(policy)
        walk = self._walk(question, frozenset(policy if policy is not None else self.settings.policy))
        if self.flat is not None:
            walk.flat_tokens = self.flat.tokens(question, self.settings.flat_k)
        self.walks.append(walk)
        if walk.dead_end is None:
            self.graph.record_walk(
                [s.node_id for s in walk.path], [s.edge_id for s in walk.path if s.edge_id is not None]
            )
        return walk

    def _check_policy(self, policy: tuple[str, ...]) -> None:
        unknown = [t for t in policy if t not in self.graph.ontology.edge_types]
        if unknown:
            raise OntologyError(
                f"walk policy names {unknown}, which GRAPH.md does not define; it defines "
                f"{sorted(self.graph.ontology.edge_types)}"
            )

    def _walk(self, question: str, policy: frozenset[str]) -> Walk:
        mentions, dropped = self.resolver.find_mentions(question)
        resolved = list(dict.fromkeys(m.record.entity_id for m in mentions if m.record.entity_id))
        seeds = [s for s in resolved if s in self.graph]
        walk = Walk(question, [m.record.mention for m in mentions])
        if not seeds:
            if resolved:
                names = ", ".join(f"'{self.resolver.canonical.get(s, s)}'" for s in resolved)
                detail = f"mentions resolved to {names}, which this graph does not hold"
            else:
                tried = ", ".join(f"'{r.mention}'" for r in dropped) or "nothing"
                detail = f"no mention resolved to a canonical entity: {tried}"
            walk.dead_end = DeadEnd("entity_unresolved", detail)
            return walk
        live_seeds = [s for s in seeds if self.graph.is_live(s)]
        if not live_seeds:
            names = ", ".join(f"'{self.graph.node(s).label}'" for s in seeds)
            walk.dead_end = DeadEnd(
                "pruned_too_early", f"{names} resolved but is no longer walkable (pruned or invalidated)"
            )
            return walk
        mention_stems = {token for m in mentions for token in normalize(m.record.mention).split()}
        mention_stems |= {token for s in seeds for token in normalize(self.graph.node(s).label).split()}
        question_stems = [t for t in content_stems(question) if t not in mention_stems]
        question_vector = vectors.decode(self.embedder.embed(" ".join(question_stems))) if question_stems else None

        reached: dict[str, _Entry] = {}
        closeness: dict[str, float] = {}
        blocked: dict[str, str] = {}
        for seed in live_seeds:
            settled = self._search(seed, policy, blocked)
            for node_id, entry in settled.items():
                if node_id not in reached or entry < reached[node_id]:
                    reached[node_id] = entry
                closeness[node_id] = closeness.get(node_id, 0.0) + 1.0 / max(1, entry.hops) / len(live_seeds)
        candidates = [n for n in reached if self.graph.node(n).type in ANSWER_TYPES]
        if not candidates:
            walk.dead_end = self._why_no_candidate(live_seeds, reached, blocked)
            return walk
        causal = bool(_WHY.search(question))
        best_id, best_score = self._best(candidates, reached, closeness, question_stems, question_vector, causal)
        entry = reached[best_id]
        walk.answer_id = best_id
        walk.answer = self.graph.node(best_id).label
        walk.score = round(best_score, 4)
        walk.path = self._steps(entry)
        walk.justification = self._justify(best_id)
        walk.tokens = sum(estimate_tokens(step.label) for step in walk.path)
        return walk

    def _search(self, seed: str, policy: frozenset[str], blocked: dict[str, str]) -> dict[str, _Entry]:
        # Plain tuples on the heap (cost, hops, counter, node, trail): comparing them is far cheaper
        # than comparing dataclasses, and the counter keeps ties in discovery order.
        counter = 0
        frontier: list[tuple[float, int, int, str, tuple[tuple[str, str, bool], ...]]] = [(0.0, 0, 0, seed, ())]
        settled: dict[str, _Entry] = {}
        budget, cap = self.settings.hop_budget, self.settings.max_expand
        while frontier and len(settled) < cap:
            cost, hops, order, node_id, trail = heapq.heappop(frontier)
            if node_id in settled:
                continue
            settled[node_id] = _Entry(cost, hops, order, node_id, trail)
            if hops >= budget:
                continue
            for edge, other, forward in self._neighbours(node_id, policy, blocked):
                if other in settled:
                    continue
                counter += 1
                step = _EDGE_COST.get(edge.type, 1.0) + _HUB_PENALTY * self._hub(other)
                heapq.heappush(frontier, (cost + step, hops + 1, counter, other, (*trail, (edge.id, other, forward))))
        return settled

    def _hub(self, node_id: str) -> float:
        # Not cached: degrees grow with every write, and a long-lived walker must answer exactly as
        # a freshly loaded one would.
        return math.log1p(self.graph.degree(node_id))

    def _neighbours(
        self, node_id: str, policy: frozenset[str], blocked: dict[str, str]
    ) -> list[tuple[EdgeRecord, str, bool]]:
        out: list[tuple[EdgeRecord, str, bool]] = []
        for edge in self.graph.out_edges(node_id, policy, live_only=False):
            if self._usable(edge, edge.dst, blocked):
                out.append((edge, edge.dst, True))
        for edge in self.graph.in_edges(node_id, policy, live_only=False):
            if self.graph.node(edge.src).type in _REVERSE_INTO and self._usable(edge, edge.src, blocked):
                out.append((edge, edge.src, False))
        return out

    def _usable(self, edge: EdgeRecord, other: str, blocked: dict[str, str]) -> bool:
        node = self.graph.node(other)
        if node.live and edge.live:
            return True
        if node.type in ANSWER_TYPES:
            why = "pruned" if node.pruned else "invalidated"
            blocked.setdefault(other, f"{node.type} '{node.label}' ({why})")
        return False

    def _why_no_candidate(self, seeds: list[str], reached: dict[str, _Entry], blocked: dict[str, str]) -> DeadEnd:
        labels = ", ".join(f"'{self.graph.node(s).label}'" for s in seeds)
        if blocked:
            first = next(iter(blocked.values()))
            return DeadEnd(
                "pruned_too_early",
                f"from {labels} the walk needed {first}, which is no longer walkable ({len(blocked)} such node(s))",
            )
        if set(reached) <= set(seeds):
            return DeadEnd("no_typed_edge", f"no live edge of the policy's types leaves {labels}")
        kinds = Counter(self.graph.node(n).type for n in reached)
        found = ", ".join(f"{n} {t}" for t, n in sorted(kinds.items()))
        return DeadEnd("wrong_node_type", f"from {labels} the walk reached only {found}; none is a claim or decision")

    def _best(
        self,
        candidates: list[str],
        reached: dict[str, _Entry],
        closeness: dict[str, float],
        question_stems: list[str],
        question_vector: array[int] | None,
        causal: bool,
    ) -> tuple[str, float]:
        wanted = set(question_stems)
        # The residual is a few words, so its vector is sparse: a dot product over its non-zero
        # components is exact and an order of magnitude cheaper than over every dimension.
        sparse = [] if question_vector is None else [(i, v) for i, v in enumerate(question_vector) if v]
        scored = []
        for node_id in candidates:
            node = self.graph.node(node_id)
            similarity = 0.0
            if sparse and node.embedding:
                vector = self._vector(node_id, node.embedding)
                if len(vector) == len(question_vector or ()):
                    similarity = max(0.0, sum(v * vector[i] for i, v in sparse) / _UNIT)
            overlap = len(wanted & self._stems(node_id, node.label)) / len(wanted) if wanted else 0.0
            entry = reached[node_id]
            score = 0.45 * similarity + 0.55 * overlap + _CLOSENESS * closeness[node_id]
            if causal and _CAUSAL.search(node.label):
                score += _CAUSAL_BONUS
            scored.append((-score, entry.hops, self.graph.seq(node_id), node_id, score))
        scored.sort()
        return scored[0][3], scored[0][4]

    def _stems(self, node_id: str, label: str) -> frozenset[str]:
        cached = self._label_stems.get(node_id)
        if cached is None or cached[0] != label:
            cached = (label, frozenset(content_stems(label)))
            self._label_stems[node_id] = cached
        return cached[1]

    def _vector(self, node_id: str, embedding: str) -> array[int]:
        # Decoded once per node and kept: an answer's candidates are scored on every walk.
        cached = self._vectors.get(node_id)
        if cached is None or cached[0] != embedding:
            cached = (embedding, vectors.decode(embedding))
            self._vectors[node_id] = cached
        return cached[1]

    def _steps(self, entry: _Entry) -> list[Step]:
        trail = entry.trail
        steps = [self._step(entry.node_id if not trail else self._origin(trail))]
        for edge_id, node_id, forward in trail:
            edge = self.graph.edge(edge_id)
            steps.append(self._step(node_id, edge.type, edge_id, forward))
        return steps

    def _origin(self, trail: tuple[tuple[str, str, bool], ...]) -> str:
        edge_id, _, forward = trail[0]
        edge = self.graph.edge(edge_id)
        return edge.src if forward else edge.dst

    def _step(
        self, node_id: str, edge_type: str | None = None, edge_id: str | None = None, forward: bool = True
    ) -> Step:
        node = self.graph.node(node_id)
        return Step(node_id, node.type, node.label, edge_type, edge_id, forward)

    def _justify(self, node_id: str) -> list[Step]:
        steps = []
        for edge in self.graph.out_edges(node_id, ("derived_from", "depends_on", "cites")):
            target = self.graph.node(edge.dst)
            if target.type in {"source", "assumption", "claim"}:
                steps.append(self._step(edge.dst, edge.type, edge.id, True))
        return steps

    # -- what the walks add up to -------------------------------------------------------------

    def dead_end_ledger(self) -> dict[str, int]:
        """Dead ends by reason, all four present."""
        counts = dict.fromkeys(DEAD_END_REASONS, 0)
        for walk in self.walks:
            if walk.dead_end is not None:
                counts[walk.dead_end.reason] += 1
        return counts

    def hop_histogram(self) -> dict[int, int]:
        """Answered walks by number of hops."""
        return dict(sorted(Counter(w.hops for w in self.walks if w.dead_end is None).items()))

    @property
    def resolved_rate(self) -> float:
        """Share of walks in which at least one mention resolved."""
        if not self.walks:
            return 0.0
        resolved = sum(1 for w in self.walks if not (w.dead_end and w.dead_end.reason == "entity_unresolved"))
        return resolved / len(self.walks)

    def token_ratios(self) -> list[float]:
        """Path tokens over flat tokens for every answered walk that has a flat figure."""
        return [w.tokens / w.flat_tokens for w in self.walks if w.dead_end is None and w.flat_tokens]

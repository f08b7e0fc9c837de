"""Walks: an answer is the path the walk took, or one of exactly four named dead ends.

``Walker.ask`` resolves the question's mentions to entities, then runs a uniform-cost search from
them over typed edges — forward along any edge the policy allows, backward only into claims,
decisions and evidence — with a penalty on hubs, a hop budget and an expansion cap. Edges of the
types the question asks across ("replaced", "contradicts", "rests on"…,
:mod:`~contextmesh.knowledge.intent`) cost less, so the walk prefers them. When no mention
resolves, the walk starts from the entities whose names share the question's rarest words, and
if it then finds nothing it is confident in, it says the question named nothing it knows.

Every claim, decision and evidence node reached (an assumption too, when the question asks for
one) is a candidate with the path that reached it, and so is every node one asked-for edge away
from a reached node; :mod:`~contextmesh.knowledge.ranking` scores each pair on lexical evidence
over headline and body (BM25F), the question's entities next to it, its intent and the path's
length. The path shown is the path scored. A node that no longer stands (superseded, contradicted
by live evidence, resting on a rejected assumption: :mod:`~contextmesh.knowledge.standing`) is
never the answer unless the question asks across that very relation; a claim that supported a
decision resting on a since-rejected assumption is *in doubt*: it yields to any confident standing
answer (what contradicts it among them) and, when it still answers, says so in ``notes`` (ADR 0022). Below a calibrated
confidence the walk dead-ends instead (:mod:`~contextmesh.knowledge.confidence`), naming the best
candidate it rejected; an acronym that could mean two entities is tried both ways and dead-ends
naming both unless the context settles it.

The answer's path is returned with edge directions, then its justification (the sources it
derives from, the assumptions it depends on), and notes of any live contradiction.

The four dead ends, each with a detail naming what was tried:

* ``entity_unresolved`` — no mention in the question resolved to an entity (or one was ambiguous);
* ``no_typed_edge`` — no live edge the policy allows leaves the entities, or none of the relation
  the question asks across;
* ``wrong_node_type`` — the walk reached nothing that answers (only entities and sources, or
  claims none of which carries the question);
* ``pruned_too_early`` — what the walk needed has been pruned, invalidated or superseded.

Invariants:

1. A walk is deterministic: ties break by score, then hops, then insertion sequence.
2. A walk moves telemetry (``walks``, ``traversals``) and nothing else in the graph.
3. Pruned or invalidated nodes and edges are never on a path.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from contextmesh.core.errors import OntologyError
from contextmesh.knowledge.confidence import (
    READING_MARGIN,
    STRICT_RELATIONS,
    Verdict,
    ambiguous_acronyms,
    choose,
    doubt,
    initials_index,
    no_candidate,
    no_relation,
    sure,
)
from contextmesh.knowledge.embed import Embedder, HashedEmbedder
from contextmesh.knowledge.flat_baseline import FlatBaseline
from contextmesh.knowledge.intent import Intent, read_intent
from contextmesh.knowledge.ranking import AnswerIndex, Candidate, Trail, Weights, rank
from contextmesh.knowledge.search import entity_words, reach, source_seeds, word_seeds
from contextmesh.knowledge.semantic import SemanticMatch
from contextmesh.knowledge.standing import live_contradictions
from contextmesh.knowledge.text import content_stems, estimate_tokens, normalize

if TYPE_CHECKING:
    # Types only: importing the graph module at run time would pull networkx into every ask.
    from contextmesh.core.graph import ContextGraph
    from contextmesh.knowledge.resolve import ResolutionRecord, Resolver

__all__ = [
    "ANSWER_TYPES",
    "DEAD_END_REASONS",
    "DEFAULT_POLICY",
    "DeadEnd",
    "Step",
    "Walk",
    "Walker",
    "WalkerSettings",
]

DEAD_END_REASONS = ("entity_unresolved", "no_typed_edge", "wrong_node_type", "pruned_too_early")
ANSWER_TYPES = frozenset({"claim", "decision", "evidence"})
DEFAULT_POLICY: tuple[str, ...] = (
    *("mentions", "derived_from", "cites", "contradicts", "supports"),
    *("depends_on", "produces", "supersedes", "justified_by", "resolves_to"),
)
_CONTEXT_WORDS = 2
CONSIDERED = 10


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
    """Why a walk could not answer: one of :data:`DEAD_END_REASONS`, with what it tried.

    ``rejected`` is the best candidate the walk turned down, ``candidates`` what an ambiguous
    mention could mean.
    """

    reason: str
    detail: str
    rejected: str | None = None
    candidates: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """Plain data."""
        return {
            "reason": self.reason,
            "detail": self.detail,
            "rejected": self.rejected,
            "candidates": list(self.candidates),
        }


@dataclass
class Walk:
    """One question asked: the answer and its path, or a dead end.

    ``considered``: the first :data:`CONSIDERED` candidates ranked (ids, best first), not in :meth:`to_dict`.
    """

    question: str
    mentions: list[str]
    answer_id: str | None = None
    answer: str | None = None
    path: list[Step] = field(default_factory=list)
    justification: list[Step] = field(default_factory=list)
    score: float = 0.0
    confidence: float = 0.0
    notes: list[str] = field(default_factory=list)
    tokens: int = 0
    flat_tokens: int = 0
    dead_end: DeadEnd | None = None
    considered: list[str] = field(default_factory=list)

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
            "confidence": self.confidence,
            "notes": list(self.notes),
            "tokens": self.tokens,
            "flat_tokens": self.flat_tokens,
            "path": [_step_dict(s) for s in self.path],
            "justification": [_step_dict(s) for s in self.justification],
            "dead_end": None if self.dead_end is None else self.dead_end.to_dict(),
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


def _bodies_of(flat: FlatBaseline) -> dict[str, str]:
    """Span key → the body of its paragraph (the chunk without its headline is what the chunk adds)."""
    return {key: chunk.text for key, chunk in flat.chunks.items()}


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
        bodies: Mapping[str, str] | None = None,
        weights: Weights | None = None,
    ) -> None:
        self.graph = graph
        self.resolver = resolver
        self.embedder = embedder or HashedEmbedder()
        self.settings = settings or WalkerSettings()
        self.flat = flat
        self.weights = weights or Weights()
        self._meaning = SemanticMatch(self.embedder)
        self.walks: list[Walk] = []
        self._check_policy(self.settings.policy)
        self._bodies = dict(bodies) if bodies is not None else None
        self._index: AnswerIndex | None = None
        self._words: tuple[tuple[int, int, int], dict[str, list[str]]] | None = None
        self._by_initials: tuple[tuple[int, int], dict[str, list[str]]] | None = None

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

    def _answer_index(self) -> AnswerIndex:
        if self._index is None or not self._index.fresh(self.graph):
            # A claim carries its span's body in ``attrs["body"]`` when the build stored it; otherwise
            # the body comes with the corpus, through the flat baseline's chunks — read now, not at
            # construction, because a loaded session is handed its flat baseline afterwards.
            bodies = self._bodies if self._bodies is not None else (_bodies_of(self.flat) if self.flat else {})
            self._index = AnswerIndex(self.graph, bodies, self.weights.headline, self.weights.context)
        return self._index

    def _walk(self, question: str, policy: frozenset[str]) -> Walk:
        mentions, dropped = self.resolver.find_mentions(question)
        walk = Walk(question, [m.record.mention for m in mentions])
        resolved = list(dict.fromkeys(m.record.entity_id for m in mentions if m.record.entity_id))
        seeds = [s for s in resolved if s in self.graph]
        intent = read_intent(question)
        ambiguous = ambiguous_acronyms(self._initials(), self.resolver.aliases, mentions, dropped, self._holds)
        mention_stems = {token for m in mentions for token in normalize(m.record.mention).split()}
        mention_stems |= {token for s in seeds for token in normalize(self.graph.node(s).label).split()}
        terms = tuple(t for t in content_stems(question) if t not in mention_stems and t not in intent.cues)
        if ambiguous:
            return self._ambiguous(walk, ambiguous, seeds, terms, intent, policy)
        named = bool(seeds)
        if not seeds:
            seeds = word_seeds(self._entity_words(), terms) or source_seeds(self.graph, self._answer_index(), terms)
        if not seeds:
            walk.dead_end = self._unresolved(resolved, dropped)
            return walk
        live_seeds = [s for s in seeds if self.graph.is_live(s)]
        if not live_seeds:
            names = ", ".join(f"'{self.graph.node(s).label}'" for s in seeds)
            walk.dead_end = DeadEnd(
                "pruned_too_early", f"{names} resolved but is no longer walkable (pruned or invalidated)"
            )
            return walk
        tried = ", ".join(f"'{r.mention}'" for r in dropped) or "nothing"
        self._settle(walk, live_seeds, named, terms, intent, policy, tried)
        return walk

    def _initials(self) -> dict[str, list[str]]:
        # The resolver only ever adds canonical names, so their count says whether the index is current.
        stamp = (id(self.resolver), len(self.resolver.canonical))
        if self._by_initials is None or self._by_initials[0] != stamp:
            self._by_initials = (stamp, initials_index(self.resolver.canonical))
        return self._by_initials[1]

    def _holds(self, entity_id: str) -> bool:
        return entity_id in self.graph and self.graph.node(entity_id).type == "entity"

    def _unresolved(self, resolved: list[str], dropped: list[ResolutionRecord]) -> DeadEnd:
        if resolved:
            names = ", ".join(f"'{self.resolver.canonical.get(s, s)}'" for s in resolved)
            return DeadEnd("entity_unresolved", f"mentions resolved to {names}, which this graph does not hold")
        tried = ", ".join(f"'{r.mention}'" for r in dropped) or "nothing"
        return DeadEnd("entity_unresolved", f"no mention resolved to a canonical entity: {tried}")

    def _entity_words(self) -> dict[str, list[str]]:
        stamp = (id(self.graph), len(self.graph.nodes), len(self.graph.edges))
        if self._words is None or self._words[0] != stamp:
            self._words = (stamp, entity_words(self.graph))
        return self._words[1]

    def _ambiguous(
        self,
        walk: Walk,
        ambiguous: list[tuple[str, list[str]]],
        seeds: list[str],
        terms: tuple[str, ...],
        intent: Intent,
        policy: frozenset[str],
    ) -> Walk:
        """Try each reading of the first ambiguous acronym; answer only when the context settles it."""
        surface, meanings = ambiguous[0]
        fixed = [s for s in seeds if s not in meanings]
        readings = []
        for meaning in meanings:
            trial = Walk(walk.question, walk.mentions)
            live = [s for s in [*fixed, meaning] if self.graph.is_live(s)]
            if live:
                self._settle(trial, live, True, terms, intent, policy)
            readings.append((trial.confidence if trial.dead_end is None else 0.0, trial))
        ranked = sorted(range(len(readings)), key=lambda i: (-readings[i][0], i))
        best, runner_up = readings[ranked[0]], readings[ranked[1]]
        # The context settles it when one reading is clearly better — or when every reading finds the
        # same answer: then which entity was meant does not change what the question is answered with.
        agreed = all(trial.dead_end is None and trial.answer_id == best[1].answer_id for _, trial in readings)
        settled = best[0] - runner_up[0] >= READING_MARGIN or agreed
        if best[1].dead_end is None and settled and self._context(best[1], terms):
            return best[1]
        names = " or ".join(f"'{self.resolver.canonical.get(m, m)}'" for m in meanings)
        walk.dead_end = DeadEnd(
            "entity_unresolved",
            f"'{surface}' could mean {names}; the question does not say which",
            candidates=tuple(self.resolver.canonical.get(m, m) for m in meanings),
        )
        return walk

    def _context(self, walk: Walk, terms: tuple[str, ...]) -> bool:
        """True when the answer (or the node it was reached across from) holds two or more of the question's words.

        One word is too little context to choose what an acronym means: "capacity" fits any plant.
        """
        index = self._answer_index()
        near = [step.node_id for step in walk.path[-2:] if step.node_type in ANSWER_TYPES | {"assumption"}]
        return max((index.matched(n, terms) for n in near), default=0) >= _CONTEXT_WORDS

    def _settle(
        self,
        walk: Walk,
        seeds: list[str],
        named: bool,
        terms: tuple[str, ...],
        intent: Intent,
        policy: frozenset[str],
        tried: str = "",
    ) -> None:
        """Search from ``seeds``, rank what was reached, and answer or dead-end on ``walk``."""
        found = reach(
            self.graph,
            seeds,
            policy,
            intent.edges,
            hop_budget=self.settings.hop_budget,
            max_expand=self.settings.max_expand,
        )
        answer_types = frozenset(ANSWER_TYPES | ({"assumption"} if intent.node_type == "assumption" else set()))
        index = self._answer_index()
        ranked = rank(
            self.graph,
            index,
            found.reached,
            terms=terms,
            seeds=len(seeds) if named else 0,
            intent=intent,
            answer_types=answer_types,
            weights=self.weights,
            semantic=self._meaning.for_question(self.graph, walk.question),
        )
        walk.considered = [c.node_id for c in ranked[:CONSIDERED]]
        verdict: Verdict | None = None
        best = choose(c for c in ranked if c.fallen is None)
        strict = [e for e in intent.edges if e in STRICT_RELATIONS and e not in intent.leaning]
        if not ranked:
            verdict = no_candidate(self.graph, seeds, found.reached, found.blocked)
        elif strict:
            # The question asks across a relation: only an answer across it will do.
            best = choose(c for c in ranked if c.fallen is None and c.crossed)
            if best is None or not sure(best.confidence):
                verdict = no_relation(self.graph, strict, ranked)
        if verdict is None and (best is None or not sure(best.confidence)):
            verdict = doubt(
                self.graph, index, ranked, found, named=named, terms=terms, tried=tried, answer_types=answer_types
            )
        if verdict is not None:
            walk.dead_end = DeadEnd(verdict[0], verdict[1], rejected=verdict[2])
            return
        assert best is not None
        self._fill(walk, best)

    def _fill(self, walk: Walk, best: Candidate) -> None:
        walk.answer_id = best.node_id
        walk.answer = self.graph.node(best.node_id).label
        walk.score = round(best.score, 4)
        walk.confidence = round(best.confidence, 4)
        walk.path = self._steps(best.node_id, best.trail)
        walk.justification = self._justify(best.node_id)
        walk.notes = live_contradictions(self.graph, best.node_id)
        if best.doubt is not None:
            walk.notes.append(f"in doubt: {best.doubt}")
        walk.tokens = sum(estimate_tokens(step.label) for step in walk.path)

    def _steps(self, node_id: str, trail: Trail) -> list[Step]:
        steps = [self._step(node_id if not trail else self._origin(trail))]
        for edge_id, step_id, forward in trail:
            edge = self.graph.edge(edge_id)
            steps.append(self._step(step_id, edge.type, edge_id, forward))
        return steps

    def _origin(self, trail: Trail) -> str:
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

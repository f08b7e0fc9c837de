"""Ranking what a walk reached: lexical evidence, the question's entities, its intent, the path's length.

Every candidate is a node *and the typed path that reached it*; the score belongs to that pair,
so the path a walk shows is the path it scored. Two kinds of candidate:

* **direct** — a node the walk reached, on the cheapest path the search found to it;
* **across** — for a question that names a relation (:mod:`~contextmesh.knowledge.intent`), a node
  one edge of that relation away from a node the walk reached (the *anchor*): the path is the
  anchor's path plus that edge. The anchor is what the question describes, the answer is what
  stands across the relation from it ("what replaced X?" describes X and asks for its successor).
  A citation points at a document (a link lands on its first sentence), so across a ``cites`` edge
  to a claim every other claim of that claim's source is a candidate too, on the path
  cited claim → source → claim. A document that supersedes the anchor (a link in its status
  line, ADR 0036) answers with its first claim, on the path anchor ← source ← claim. The other
  end is judged on the question's words the anchor does not hold: those are what the question
  says about it.

The score, with the weights of :class:`Weights` (calibrated on the development questions,
``docs/adr/0013-lexical-evidence.md`` and ``0014-walk-ranking-and-confidence.md``):

* ``lexical`` × BM25F coverage (headline and body) of the question's residual stems — what it
  says beyond the entities it names and the relation cues — by the node (direct) or by the anchor
  (across; plus ``other_end`` × the answer's own coverage);
* ``entities`` × the share of the question's resolved entities within one edge of that node —
  counted at ``1 − unheld`` for a plain question naming one entity when the node holds none of
  the question's words the collection uses elsewhere (it shows the entity exists, not an answer);
* ``intent`` when the path's last edge is of a type the question asks across, ``node_type`` when
  the answer is of the type asked for ("which decision…"), ``causal`` for a *why* question
  answered by a node whose label says "because" (0 by default since ADR 0036: a why question's
  answer need not use a causal word);
* minus ``hop`` for every edge past the first;
* with a real embedding model only (:mod:`~contextmesh.knowledge.semantic`), ``semantic`` × the
  question's cosine to the node above ``semantic_floor``, rescaled to [0, 1] (ADR 0030). It adds to
  the score, not to the confidence: meaning reorders what the typed walk reached, and cannot turn
  a dead end into an answer.

Each of those terms is one named feature of the candidate (:data:`FEATURES`, kept on
:attr:`Candidate.features`) and the score is their sum weighted by :meth:`Weights.linear`, so a
ranker is a weight vector: ``bench/fit_ranking.py`` fits one on the development questions and
cross-validates it against these hand-set weights, which it did not beat (ADR 0041).

The **confidence** of a candidate is the share of the question it carries: the lexical coverage
of the node that matches the question (the anchor's for an across candidate), or, when the
question says nothing beyond its entities, the entity share.

What no longer stands is marked (:mod:`~contextmesh.knowledge.standing`): a *fallen* node ranks
after every standing one unless it was reached over the relation asked for; a claim *in doubt*
(it supported a decision resting on a rejected assumption) keeps its place, and the live claims
and evidence that contradict it become candidates on its path (ADR 0022).

Invariant: deterministic — candidates are built in reach order and ties break by fewer hops,
then the graph's insertion sequence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from contextmesh.knowledge.intent import Intent
from contextmesh.knowledge.lexical import Bm25, LexicalDocument, fold, terms_of
from contextmesh.knowledge.ranking_weights import FEATURES, SHAPE, Weights, score_of
from contextmesh.knowledge.standing import doubted, fallen

if TYPE_CHECKING:
    from contextmesh.core.graph import ContextGraph
    from contextmesh.core.model import EdgeRecord, NodeRecord

__all__ = ["FEATURES", "INDEXED_TYPES", "AnswerIndex", "Candidate", "Reach", "Trail", "Weights", "rank", "score_of"]

Trail = tuple[tuple[str, str, bool], ...]  # (edge id, node id, forward) from the seed
INDEXED_TYPES = ("claim", "decision", "assumption", "evidence", "source", "entity")
_ANCHORS = 32
_EXAMINED = 8
_ANCHOR_TYPES = frozenset({"claim", "decision", "assumption", "evidence"})
_CAUSAL = re.compile(r"\b(because|since|so|due to|as a result|caused|causes)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Reach:
    """How the walk reached a node: hops and trail of the cheapest path, and its closeness to the seeds.

    ``near_seeds`` sums, over the seeds, 1 / hops from each (raised to a calibrated power): a node
    one edge from every seed scores the number of seeds.
    """

    hops: int
    trail: Trail
    near_seeds: float


@dataclass(frozen=True)
class Candidate:
    """A node with the path that reached it, its score and its confidence."""

    node_id: str
    trail: Trail
    score: float
    confidence: float
    anchor: str | None = None
    fallen: str | None = None
    crossed: bool = False
    doubt: str | None = None
    features: tuple[float, ...] = field(default=(), compare=False)  # :data:`FEATURES`, what the score sums

    @property
    def hops(self) -> int:
        """Edges on the path."""
        return len(self.trail)


class AnswerIndex:
    """BM25F over every indexed node of a graph: label as headline, span body or rationale as body."""

    def __init__(
        self,
        graph: ContextGraph,
        bodies: Mapping[str, str],
        headline_weight: float = 2.0,
        context_weight: float = 0.3,
    ) -> None:
        self.stamp = _stamp(graph)
        documents = []
        siblings: dict[str, list[str]] = {}  # source → labels of the claims made from it
        for node in graph.by_type("claim", live_only=False):
            if node.provenance is not None:
                siblings.setdefault(node.provenance.source_id, []).append(node.label)
        for node in graph:
            if node.type not in INDEXED_TYPES:
                continue
            body, context = _body(node, bodies), ""
            source = node.provenance.source_id if node.provenance is not None else None
            if node.type == "claim" and source is not None:
                body, context = _own_words(node.label, body, siblings.get(source, ()))
            if source is not None and source in graph:
                # Where a statement comes from is part of what it says ("the growth report says…").
                body = f"{body} {graph.node(source).label}"
            documents.append(LexicalDocument(node.id, terms_of(node.label), terms_of(body), terms_of(context)))
        self.bm25 = Bm25(documents, headline_weight=headline_weight, context_weight=context_weight)
        self._folded: dict[tuple[str, ...], tuple[str, ...]] = {}

    def fresh(self, graph: ContextGraph) -> bool:
        """True while the graph holds the nodes and edges the index was built over."""
        return self.stamp == _stamp(graph)

    def terms(self, stems: tuple[str, ...]) -> tuple[str, ...]:
        """The question's stems as the index holds them (folded, :func:`~contextmesh.knowledge.lexical.fold`)."""
        folded = self._folded.get(stems)
        if folded is None:
            folded = self._folded[stems] = tuple(fold(stem) for stem in stems)
        return folded

    def coverage(self, node_id: str, stems: tuple[str, ...]) -> float:
        """BM25F coverage of the question's stems by one node (0 for an unindexed node or no stems)."""
        return self.bm25.coverage(node_id, self.terms(stems)) if stems else 0.0

    def matched(self, node_id: str, stems: tuple[str, ...]) -> int:
        """How many of the question's distinct stems the node holds."""
        return self.bm25.matched(node_id, self.terms(stems))

    def held(self, node_id: str, stems: tuple[str, ...]) -> tuple[str, ...]:
        """The question's folded terms the node holds, in question order."""
        return self.bm25.held(node_id, self.terms(stems))


def _body(node: NodeRecord, bodies: Mapping[str, str]) -> str:
    """A claim's span body (stored on it, or from the corpus), a decision's rationale; else nothing."""
    if node.type == "decision":
        return str(node.attrs.get("rationale") or "")
    if node.type != "claim":
        return ""
    stored = node.attrs.get("body")
    body = stored if isinstance(stored, str) else bodies.get(str(node.attrs.get("key")), "")
    return body[len(node.label) :] if body.startswith(node.label) else body  # a flat chunk is headline + body


def _own_words(label: str, body: str, siblings: Iterable[str]) -> tuple[str, str]:
    """Split a claim's body into its own words and context: the sentences that are other claims' headlines.

    When every sentence of a paragraph is a claim, a claim's body is its neighbours; their words are
    evidence for them first, and only context for this one.
    """
    context = []
    for other in siblings:
        if other != label and other in body:
            body = body.replace(other, " ", 1)
            context.append(other)
    return body, " ".join(context)


def _stamp(graph: ContextGraph) -> tuple[int, int, int]:
    return id(graph), len(graph.nodes), len(graph.edges)


Features = tuple[float, ...]  # one value per name of FEATURES
_Base = tuple[float, float, Features]  # a node's own score, confidence and features


@dataclass(frozen=True)
class _Question:
    terms: tuple[str, ...]
    seeds: int
    intent: Intent
    answer_types: frozenset[str]


def rank(
    graph: ContextGraph,
    index: AnswerIndex,
    reached: Mapping[str, Reach],
    *,
    terms: tuple[str, ...],
    seeds: int,
    intent: Intent,
    answer_types: frozenset[str],
    weights: Weights,
    semantic: Callable[[str], float] | None = None,
) -> list[Candidate]:
    """Every candidate, best first (see the module docstring)."""
    question = _Question(terms, seeds, intent, answer_types)
    linear = weights.linear()
    match: dict[str, _Base] = {}  # node → (base score, confidence, features)

    distinct = len(dict.fromkeys(index.terms(terms)))
    # The question's information is its residual words and its entities: each entity counts as
    # ``entity_terms`` words, so the mix says how much of the question each part carries. (Weighing
    # words by idf instead was tried and lost on the development questions: ADR 0014.)
    share_of_words = distinct / (distinct + weights.entity_terms * seeds) if distinct or seeds else 0.0

    # The question's words the collection uses somewhere (a word nobody uses says nothing: it may be
    # a paraphrase).
    known = tuple(term for term in dict.fromkeys(index.terms(terms)) if index.bm25.idf(term) > 0.0)
    plain = not intent.relational and intent.node_type is None

    def base(node_id: str) -> _Base:
        if node_id not in match:
            lexical = index.coverage(node_id, terms)
            # Meaning (a real model only): cosine above a calibrated floor, rescaled to [0, 1]. It
            # reorders what the walk reached; confidence stays the words' and the entities' (ADR 0030).
            meaning = 0.0
            if semantic is not None:
                meaning = max(0.0, semantic(node_id) - weights.semantic_floor) / (1.0 - weights.semantic_floor)
            share = reached[node_id].near_seeds / seeds if seeds and node_id in reached else 0.0
            if seeds == 1 and known and share > 0.0 and plain and not index.bm25.held(node_id, known):
                # Next to the one entity named and holding none of the question's other words that
                # the collection uses: the node shows the entity exists, not that it answers. (A
                # question that names a relation or a node type is answered by structure as well.)
                share *= 1.0 - weights.unheld
            features = _own_features(lexical, share, share_of_words, meaning, graph.node(node_id).type)
            confidence = share_of_words * lexical + (1.0 - share_of_words) * share
            match[node_id] = (score_of(features, linear), confidence, features)
        return match[node_id]

    out: list[Candidate] = []
    for node_id, reach in reached.items():
        node = graph.node(node_id)
        if node.type not in answer_types:
            continue
        _, confidence, features = base(node_id)
        last = None
        if reach.trail:
            last_type = graph.edge(reach.trail[-1][0]).type
            last = last_type if intent.direction_fits(last_type, answer_is_source=not reach.trail[-1][2]) else None
        features = _with_shape(features, _shape(graph, node_id, last, reach.hops, question))
        crossed = last is not None and last in intent.edges
        out.append(
            Candidate(node_id, reach.trail, score_of(features, linear), confidence, None, None, crossed, None, features)
        )
    if intent.relational:
        out.extend(_across(graph, index, reached, question, weights, base))
    out.sort(key=lambda c: (-c.score, c.hops, graph.seq(c.node_id)))
    if not intent.past:  # a question about what held before may be answered by what no longer stands
        out = _mark_fallen(graph, out)
        out.extend(_instead(graph, index, out, question, weights))
    out.sort(key=lambda c: (c.fallen is not None, -c.score, c.hops, graph.seq(c.node_id)))
    return out


def _instead(
    graph: ContextGraph, index: AnswerIndex, ranked: list[Candidate], question: _Question, weights: Weights
) -> Iterable[Candidate]:
    """What holds instead of a claim in doubt: the live claims and evidence that contradict it, or that it contradicts.

    The question describes the doubted claim; what stands against it is the live answer to the
    same question (ADR 0022), so it is a candidate on the doubted claim's path plus that edge,
    judged as an across candidate is.
    """
    for candidate in ranked:
        if candidate.doubt is None:
            continue
        held = set(index.held(candidate.node_id, question.terms))
        rest = tuple(t for t in index.terms(question.terms) if t not in held)
        on_path = {step[1] for step in candidate.trail} | {candidate.node_id}
        for edge in _relation_edges(graph, candidate.node_id, ("contradicts",)):
            forward = edge.src == candidate.node_id
            other = edge.dst if forward else edge.src
            if other in on_path or graph.node(other).type not in question.answer_types & {"claim", "evidence"}:
                continue
            if fallen(graph, other) is not None or doubted(graph, other) is not None:
                continue
            trail = (*candidate.trail, (edge.id, other, forward))
            own = index.bm25.coverage(other, rest) if rest else 0.0
            features = _with_shape(candidate.features, _shape(graph, other, "contradicts", len(trail), question))
            features = (*features[:2], features[2] + own, *features[3:])
            crossed = "contradicts" in question.intent.edges
            score = score_of(features, weights.linear())
            yield Candidate(other, trail, score, candidate.confidence, candidate.node_id, None, crossed, None, features)


def _mark_fallen(graph: ContextGraph, ranked: list[Candidate]) -> list[Candidate]:
    """Mark, best first, the direct candidates that no longer stand, until enough standing ones are found.

    Whether a node stands costs edge lookups; only the head of the ranking can be the answer or the
    fallen node a dead end names, so the tail is left unexamined (and ranks as it stands).
    """
    marked: list[Candidate] = []
    standing = crossed = 0
    for index, candidate in enumerate(ranked):
        if standing >= _EXAMINED and crossed >= 1:
            return marked + ranked[index:]
        # Reached over the very relation the question asks about ("which decision created X?"),
        # a node that has since been superseded is still the answer to it, as an across one is.
        why = fallen(graph, candidate.node_id) if candidate.anchor is None and not candidate.crossed else None
        if why is not None:
            marked.append(replace(candidate, fallen=why))
            continue
        doubt = doubted(graph, candidate.node_id)
        if doubt is not None:
            marked.append(replace(candidate, doubt=doubt))
            continue
        standing += 1
        crossed += candidate.crossed
        marked.append(candidate)
    return marked


def _shape(
    graph: ContextGraph, node_id: str, last_edge: str | None, hops: int, question: _Question
) -> tuple[float, float, float, float]:
    """What the path and the node's kind add: intent, node type, cause (each 0 or 1), minus the edges past the first."""
    node = graph.node(node_id)
    intent = float(last_edge is not None and last_edge in question.intent.edges)
    node_type = float(question.intent.node_type is not None and node.type == question.intent.node_type)
    causal = float(question.intent.causal and _CAUSAL.search(node.label) is not None)
    return intent, node_type, causal, -float(max(0, hops - 1))


def _own_features(lexical: float, share: float, share_of_words: float, meaning: float, node_type: str) -> Features:
    """A node's own features (:data:`FEATURES`), before the path's shape is added."""
    words, entities = share_of_words * lexical, (1.0 - share_of_words) * share
    decision, evidence = float(node_type == "decision"), float(node_type == "evidence")
    return (words, entities, 0.0, 0.0, 0.0, 0.0, 0.0, meaning, lexical, share, decision, evidence)


def _with_shape(features: tuple[float, ...], shape: tuple[float, float, float, float]) -> tuple[float, ...]:
    """``features`` with the path's and the node kind's part replaced by ``shape``."""
    return (*features[: SHAPE.start], *shape, *features[SHAPE.stop :])


def _across(
    graph: ContextGraph,
    index: AnswerIndex,
    reached: Mapping[str, Reach],
    question: _Question,
    weights: Weights,
    base: Callable[[str], _Base],
) -> Iterable[Candidate]:
    """Candidates one edge of an asked-for relation away from a reached anchor, the anchor's path extended."""
    anchors = [n for n in reached if graph.node(n).type in _ANCHOR_TYPES]
    # Only an anchor that matches the question can lift what stands across from it.
    anchors = sorted(anchors, key=lambda n: (-base(n)[0], graph.seq(n)))[:_ANCHORS]
    for anchor_id in anchors:
        reach = reached[anchor_id]
        _, confidence, anchor_features = base(anchor_id)
        held = set(index.held(anchor_id, question.terms))
        rest = tuple(t for t in index.terms(question.terms) if t not in held)
        on_path = {step[1] for step in reach.trail}
        on_path.add(anchor_id)
        for edge in _relation_edges(graph, anchor_id, question.intent.edges):
            forward = edge.src == anchor_id
            other = edge.dst if forward else edge.src
            # A document that supersedes (a revision, or a link titled so): its claims answer for it.
            document = edge.type == "supersedes" and graph.node(other).type == "source"
            if other in on_path or not (document or graph.node(other).type in question.answer_types):
                continue
            if not question.intent.direction_fits(edge.type, answer_is_source=not forward):
                continue
            trail = (*reach.trail, (edge.id, other, forward))
            ends = _lead_claim(graph, other, trail, on_path) if document else [(other, trail)]
            if edge.type == "cites" and forward and graph.node(other).type == "claim":
                ends.extend(_cited_document(graph, other, trail, on_path))
            for end, end_trail in ends:
                # The words the anchor does not hold are what the question says about the other end
                # ("which vendor guidance do the readings in Incident 219 point to?": "vendor guidance").
                own = index.bm25.coverage(end, rest) if rest else 0.0
                features = _with_shape(anchor_features, _shape(graph, end, edge.type, len(end_trail), question))
                features = (*features[:2], own, *features[3:])
                # Reached across the very relation the question asks about: a superseded or disputed
                # node is what such a question asks for by name, so it is not barred as fallen.
                # Either end may carry the question ("in the claims X rests on, how long…?" describes both).
                sure = max(confidence, base(end)[1] if end in reached else 0.0, own)
                score = score_of(features, weights.linear())
                yield Candidate(end, end_trail, score, sure, anchor_id, None, True, None, features)


def _lead_claim(graph: ContextGraph, source: str, trail: Trail, on_path: set[str]) -> list[tuple[str, Trail]]:
    """A document's first live claim, on the path … → source → claim: what the document says, as a
    link without a fragment lands on its first sentence."""
    for down in graph.in_edges(source, ("derived_from",)):  # in the order the document makes them
        claim = graph.node(down.src)
        if claim.type == "claim" and claim.live and claim.id not in on_path:
            return [(claim.id, (*trail, (down.id, claim.id, False)))]
    return []


def _cited_document(graph: ContextGraph, cited: str, trail: Trail, on_path: set[str]) -> list[tuple[str, Trail]]:
    """The other claims of a cited claim's source, each on the path cited claim → source → claim.

    A link points at a document (or its first sentence); what the question wants from that
    document may be any of its sentences, so each is a candidate on a typed path through it.
    """
    out: list[tuple[str, Trail]] = []
    for up in graph.out_edges(cited, ("derived_from",)):
        source = graph.node(up.dst)
        if source.type != "source" or not source.live:
            continue
        for down in graph.in_edges(source.id, ("derived_from",)):
            sibling = graph.node(down.src)
            if sibling.type == "claim" and sibling.live and sibling.id != cited and sibling.id not in on_path:
                out.append((sibling.id, (*trail, (up.id, source.id, True), (down.id, sibling.id, False))))
    return out


def _relation_edges(graph: ContextGraph, node_id: str, types: tuple[str, ...]) -> list[EdgeRecord]:
    """The live edges of ``types`` on either side of a node whose other end is live, in insertion order."""
    found = [e for e in graph.out_edges(node_id, types) if graph.node(e.dst).live]
    found.extend(e for e in graph.in_edges(node_id, types) if graph.node(e.src).live)
    return found

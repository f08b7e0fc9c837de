"""CHUNK → EXTRACT → RESOLVE → LINK → EMBED → PRUNE: a corpus in, a typed graph out.

Each stage reports what it admitted and what it dropped, and every drop carries its reason: a
drop is recorded, never swallowed.

* **CHUNK** takes every span of every source in; a span's paragraph (headline + body) is also a
  chunk for the flat retrieval baseline.
* **EXTRACT** keeps a span as a claim only if its headline asserts something
  (:mod:`contextmesh.knowledge.extract`).
* **RESOLVE** enters every catalogue entity, then finds entity mentions in each claim and each
  source title (:mod:`contextmesh.knowledge.resolve`); a mention that resolves nowhere is dropped.
* **LINK** writes typed edges only: claim → source ``derived_from``, claim/source → entity
  ``mentions``, entity → the first source that mentions it ``derived_from``, and the author's
  explicit claim-to-claim relations. An illegal pair is dropped and counted, never stored untyped.
* **EMBED** gives every node a vector of its label.
* **PRUNE** (build time) flags what nothing connects — a catalogue entity the corpus never
  mentions, for one. The walk-driven pass is :func:`prune_unwalked`.

Invariant: the same corpus gives the same graph bytes in any process under any hash seed
(everything iterates in corpus order; nothing iterates a set).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from contextmesh.core.errors import ContextMeshError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.core.model import Provenance
from contextmesh.knowledge.corpus import Corpus, SourceSpec, SpanSpec
from contextmesh.knowledge.embed import Embedder, HashedEmbedder
from contextmesh.knowledge.extract import drop_reason
from contextmesh.knowledge.resolve import Resolver

__all__ = ["STAGES", "BuildReport", "BuildResult", "Chunk", "Drop", "StageReport", "build", "prune_unwalked"]

STAGES = ("CHUNK", "EXTRACT", "RESOLVE", "LINK", "EMBED", "PRUNE")
_NEVER_WALK_PRUNED = frozenset({"source", "assumption", "evidence"})
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Drop:
    """One thing a stage refused, and why."""

    item: str
    reason: str


@dataclass
class StageReport:
    """What one stage admitted and dropped."""

    name: str
    admitted: int = 0
    detail: dict[str, int] = field(default_factory=dict)
    drops: list[Drop] = field(default_factory=list)

    @property
    def dropped(self) -> int:
        """How many things this stage dropped."""
        return len(self.drops)

    def to_dict(self) -> dict[str, object]:
        """Plain data for ``--json`` and the dashboard."""
        reasons: dict[str, int] = {}
        for drop in self.drops:
            reasons[drop.reason] = reasons.get(drop.reason, 0) + 1
        return {
            "name": self.name,
            "admitted": self.admitted,
            "dropped": self.dropped,
            "detail": self.detail,
            "drop_reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:20]),
        }


@dataclass
class BuildReport:
    """The six stage reports, in order."""

    stages: list[StageReport]

    def stage(self, name: str) -> StageReport:
        """One stage's report by name."""
        return next(s for s in self.stages if s.name == name)

    def to_dict(self) -> list[dict[str, object]]:
        """Plain data, stage by stage."""
        return [s.to_dict() for s in self.stages]


@dataclass(frozen=True)
class Chunk:
    """A paragraph of the corpus as flat top-k retrieval would send it."""

    key: str
    source_id: str
    text: str


@dataclass
class BuildResult:
    """What a build produced."""

    graph: ContextGraph
    resolver: Resolver
    report: BuildReport
    chunks: list[Chunk]


@dataclass
class _Build:
    """One build in progress: what the stages share, filled in stage by stage."""

    corpus: Corpus
    graph: ContextGraph
    resolver: Resolver
    reports: dict[str, StageReport]
    tick: Progress
    spans: list[tuple[SourceSpec, SpanSpec]]
    source_ids: dict[str, str] = field(default_factory=dict)  # source key -> node id
    claim_ids: dict[str, str] = field(default_factory=dict)  # span key -> claim id, admitted spans only
    title_mentions: dict[str, list[str]] = field(default_factory=dict)  # source key -> entity ids
    claim_mentions: dict[str, list[str]] = field(default_factory=dict)  # claim id -> entity ids


def build(
    corpus: Corpus,
    *,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> BuildResult:
    """Run the six stages over ``corpus`` and return the graph, resolver, report and chunks."""
    embedder = embedder or HashedEmbedder()
    graph = ContextGraph()
    graph.next_build()
    state = _Build(
        corpus,
        graph,
        Resolver(),
        {name: StageReport(name) for name in STAGES},
        progress or (lambda stage, done, total: None),
        corpus.spans(),
    )
    chunks = _chunk(state)
    _extract(state)
    _resolve(state)
    _link(state)
    _embed(state, embedder)
    _prune(state)
    return BuildResult(graph, state.resolver, BuildReport([state.reports[name] for name in STAGES]), chunks)


def _chunk(state: _Build) -> list[Chunk]:
    """CHUNK: a source node per source; every span's paragraph a chunk for the flat baseline."""
    report = state.reports["CHUNK"]
    chunks: list[Chunk] = []
    for source in state.corpus.sources:
        node = state.graph.add_node(
            "source",
            source.title,
            attrs={"origin": source.origin, "retrieved_at": source.retrieved_at, "key": source.key},
        )
        state.source_ids[source.key] = node.id
        for span in source.spans:
            chunks.append(Chunk(span.key, node.id, span.chunk))
    report.admitted = len(chunks)
    report.detail = {"sources": len(state.corpus.sources), "spans": len(chunks)}
    return chunks


def _extract(state: _Build) -> None:
    """EXTRACT: a claim per span whose headline asserts something; the rest dropped with the reason."""
    report, graph = state.reports["EXTRACT"], state.graph
    for index, (source, span) in enumerate(state.spans):
        state.tick("EXTRACT", index + 1, len(state.spans))
        reason = drop_reason(span.text)
        if reason is not None:
            report.drops.append(Drop(span.key, reason))
            continue
        offset = _offset(source.spans, span.key)
        node = graph.add_node(
            "claim",
            span.text,
            attrs={"key": span.key},
            provenance=Provenance(
                source_id=state.source_ids[source.key],
                span=(offset, offset + len(span.text)),
                extractor="extract.v1",
                checks=("asserts",),
                recorded_at_build=graph.build,
            ),
        )
        state.claim_ids[span.key] = node.id
    report.admitted = len(state.claim_ids)


def _resolve(state: _Build) -> None:
    """RESOLVE: every catalogue entity in, then the entity mentions of each source title and claim."""
    report, graph, resolver = state.reports["RESOLVE"], state.graph, state.resolver
    for entity in state.corpus.entities:
        entity_id = slug(entity.name, "entity")
        resolver.register(entity_id, entity.name, entity.aliases)
        graph.add_node(
            "entity", entity.name, id=entity_id, attrs={"canonical": entity.name, "aliases": list(entity.aliases)}
        )
    folded: set[str] = set()

    def mentions(text: str) -> list[str]:
        found, dropped = resolver.find_mentions(text)
        report.drops.extend(Drop(r.mention, r.reason or "unresolved") for r in dropped)
        folded.update(m.record.normalized for m in found)
        return list(dict.fromkeys(m.record.entity_id for m in found if m.record.entity_id))

    state.title_mentions = {source.key: mentions(source.title) for source in state.corpus.sources}
    for _, span in state.spans:
        claim_id = state.claim_ids.get(span.key)
        if claim_id is not None:
            state.claim_mentions[claim_id] = mentions(span.text)
    found = [*state.claim_mentions.values(), *state.title_mentions.values()]
    report.admitted = sum(len(ids) for ids in found)
    report.detail = {"entities": len(graph.by_type("entity")), "surface_forms_folded": len(folded)}


def _link(state: _Build) -> None:
    """LINK: typed edges only; an illegal pair is dropped with the graph's refusal as its reason."""
    report, graph, source_ids = state.reports["LINK"], state.graph, state.source_ids
    first_source: dict[str, str] = {}

    def link(src: str, edge_type: str, dst: str, item: str) -> None:
        try:
            graph.add_edge(src, edge_type, dst)
        except ContextMeshError as exc:
            report.drops.append(Drop(item, str(exc)))
            return
        report.admitted += 1

    for source in state.corpus.sources:
        for entity_id in state.title_mentions[source.key]:
            link(source_ids[source.key], "mentions", entity_id, source.key)
            first_source.setdefault(entity_id, source_ids[source.key])
    for source, span in state.spans:
        claim_id = state.claim_ids.get(span.key)
        if claim_id is None:
            continue
        source_id = source_ids[source.key]
        link(claim_id, "derived_from", source_id, span.key)
        for entity_id in state.claim_mentions[claim_id]:
            link(claim_id, "mentions", entity_id, span.key)
            if graph.find_edge(source_id, "mentions", entity_id) is None:
                link(source_id, "mentions", entity_id, source.key)
            first_source.setdefault(entity_id, source_id)
    for entity_id, source_id in first_source.items():
        link(entity_id, "derived_from", source_id, entity_id)
    document = {span.key: source_ids[source.key] for source, span in state.spans}
    for _, span in state.spans:
        for relation in span.relations:
            item = f"{span.key} -{relation.type}-> {relation.target}"
            # A sentence that is not a claim (a status line) speaks for its document: GRAPH.md lets a
            # source supersede a source or a claim; the graph refuses the pairs it does not allow.
            src = state.claim_ids.get(span.key) or document.get(span.key)
            dst = state.claim_ids.get(relation.target) or document.get(relation.target)
            if src is None or dst is None:
                report.drops.append(Drop(item, "an endpoint is in no document"))
                continue
            link(src, relation.type, dst, item)
    report.detail = {t: n for t, n in graph.edge_counts(live_only=False).items() if n}


def _embed(state: _Build, embedder: Embedder) -> None:
    """EMBED: every node a vector of its label."""
    report, graph = state.reports["EMBED"], state.graph
    for index, node in enumerate(graph):
        state.tick("EMBED", index + 1, len(graph))
        node.embedding = embedder.embed(node.label)
        report.admitted += 1
    report.detail = {"dimensions": embedder.dimensions}


def _prune(state: _Build) -> None:
    """PRUNE (build time): flag what nothing connects."""
    report, graph = state.reports["PRUNE"], state.graph
    orphans = [node.id for node in graph if graph.degree(node.id) == 0]
    graph.prune(orphans)
    report.drops.extend(Drop(node_id, "nothing connects it") for node_id in orphans)
    report.admitted = len(graph) - len(orphans)


def _offset(spans: tuple[object, ...], key: str) -> int:
    """Character offset of a span's headline in its source text (spans joined by blank lines)."""
    position = 0
    for span in spans:
        if getattr(span, "key", None) == key:
            return position
        position += len(getattr(span, "chunk", "")) + 2
    return position


def prune_unwalked(graph: ContextGraph, window_start_build: int) -> list[str]:
    """The walk-driven pass: prune live nodes no walk touched since ``window_start_build``.

    Only nodes created before the window started can be judged; sources, assumptions and
    evidence are never pruned this way; a pruned node is never revived.
    """
    doomed = [
        node.id
        for node in graph
        if node.live and node.walks == 0 and node.type not in _NEVER_WALK_PRUNED and node.build < window_start_build
    ]
    graph.prune(doomed)
    return doomed

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
from contextmesh.knowledge.corpus import Corpus
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
    resolver = Resolver()
    reports = {name: StageReport(name) for name in STAGES}
    tick = progress or (lambda stage, done, total: None)

    # CHUNK
    chunk_stage = reports["CHUNK"]
    chunks: list[Chunk] = []
    source_ids: dict[str, str] = {}
    for source in corpus.sources:
        node = graph.add_node(
            "source",
            source.title,
            attrs={"origin": source.origin, "retrieved_at": source.retrieved_at, "key": source.key},
        )
        source_ids[source.key] = node.id
        for span in source.spans:
            chunks.append(Chunk(span.key, node.id, span.chunk))
    chunk_stage.admitted = len(chunks)
    chunk_stage.detail = {"sources": len(corpus.sources), "spans": len(chunks)}

    # EXTRACT
    extract = reports["EXTRACT"]
    claim_ids: dict[str, str] = {}
    spans = corpus.spans()
    for index, (source, span) in enumerate(spans):
        tick("EXTRACT", index + 1, len(spans))
        reason = drop_reason(span.text)
        if reason is not None:
            extract.drops.append(Drop(span.key, reason))
            continue
        offset = _offset(source.spans, span.key)
        node = graph.add_node(
            "claim",
            span.text,
            attrs={"key": span.key},
            provenance=Provenance(
                source_id=source_ids[source.key],
                span=(offset, offset + len(span.text)),
                extractor="extract.v1",
                checks=("asserts",),
                recorded_at_build=graph.build,
            ),
        )
        claim_ids[span.key] = node.id
    extract.admitted = len(claim_ids)

    # RESOLVE
    resolve_stage = reports["RESOLVE"]
    for entity in corpus.entities:
        entity_id = slug(entity.name, "entity")
        resolver.register(entity_id, entity.name, entity.aliases)
        graph.add_node(
            "entity", entity.name, id=entity_id, attrs={"canonical": entity.name, "aliases": list(entity.aliases)}
        )
    folded: set[str] = set()

    def _mentions(text: str) -> list[str]:
        mentions, dropped = resolver.find_mentions(text)
        resolve_stage.drops.extend(Drop(r.mention, r.reason or "unresolved") for r in dropped)
        folded.update(m.record.normalized for m in mentions)
        return list(dict.fromkeys(m.record.entity_id for m in mentions if m.record.entity_id))

    title_mentions = {source.key: _mentions(source.title) for source in corpus.sources}
    claim_mentions: dict[str, list[str]] = {}
    for _, span in spans:
        claim_id = claim_ids.get(span.key)
        if claim_id is not None:
            claim_mentions[claim_id] = _mentions(span.text)
    resolve_stage.admitted = sum(len(v) for v in claim_mentions.values()) + sum(len(v) for v in title_mentions.values())
    resolve_stage.detail = {"entities": len(graph.by_type("entity")), "surface_forms_folded": len(folded)}

    # LINK
    link = reports["LINK"]
    first_source: dict[str, str] = {}

    def _link(src: str, edge_type: str, dst: str, item: str) -> None:
        try:
            graph.add_edge(src, edge_type, dst)
        except ContextMeshError as exc:
            link.drops.append(Drop(item, str(exc)))
            return
        link.admitted += 1

    for source in corpus.sources:
        for entity_id in title_mentions[source.key]:
            _link(source_ids[source.key], "mentions", entity_id, source.key)
            first_source.setdefault(entity_id, source_ids[source.key])
    for source, span in spans:
        claim_id = claim_ids.get(span.key)
        if claim_id is None:
            continue
        source_id = source_ids[source.key]
        _link(claim_id, "derived_from", source_id, span.key)
        for entity_id in claim_mentions[claim_id]:
            _link(claim_id, "mentions", entity_id, span.key)
            if graph.find_edge(source_id, "mentions", entity_id) is None:
                _link(source_id, "mentions", entity_id, source.key)
            first_source.setdefault(entity_id, source_id)
    for entity_id, source_id in first_source.items():
        _link(entity_id, "derived_from", source_id, entity_id)
    for _, span in spans:
        for relation in span.relations:
            src, dst = claim_ids.get(span.key), claim_ids.get(relation.target)
            if src is None or dst is None:
                link.drops.append(
                    Drop(f"{span.key} -{relation.type}-> {relation.target}", "an endpoint is not a claim")
                )
                continue
            _link(src, relation.type, dst, f"{span.key} -{relation.type}-> {relation.target}")
    link.detail = {t: n for t, n in graph.edge_counts(live_only=False).items() if n}

    # EMBED
    embed_stage = reports["EMBED"]
    for index, node in enumerate(graph):
        tick("EMBED", index + 1, len(graph))
        node.embedding = embedder.embed(node.label)
        embed_stage.admitted += 1
    embed_stage.detail = {"dimensions": embedder.dimensions}

    # PRUNE (build time): nothing connects it
    prune_stage = reports["PRUNE"]
    orphans = [node.id for node in graph if graph.degree(node.id) == 0]
    graph.prune(orphans)
    prune_stage.drops.extend(Drop(node_id, "nothing connects it") for node_id in orphans)
    prune_stage.admitted = len(graph) - len(orphans)
    return BuildResult(graph, resolver, BuildReport([reports[name] for name in STAGES]), chunks)


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

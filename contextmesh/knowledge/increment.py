"""One ingestion increment: the documents that changed, run through the pipeline's six stages onto a graph.

:func:`apply_increment` takes a :class:`~contextmesh.knowledge.survey.Survey` (which documents are
new, revised, unchanged or deleted) and writes what the changed ones add, and nothing else:

* **CHUNK** — a new *revision* ``source`` per changed document (a deleted one gets an empty
  revision), carrying its name, number, the SHA-256 of its bytes, the documents it links to and
  its entity sightings (:mod:`~contextmesh.knowledge.sightings`), so that a later increment needs
  neither to read it again;
* **EXTRACT** — the spans the pipeline's rule keeps; a span whose key the document's previous
  revision already made a claim of is that same claim (*carried*), any other is a new claim; the
  previous revision's claims whose keys are gone are *removed* — the belief layer supersedes them
  (:mod:`~contextmesh.belief.revision`), this module never touches them;
* **RESOLVE** — the folder's catalogue is entered (:mod:`~contextmesh.knowledge.catalogue`), then
  the new claims and titles are resolved; when the catalogue grew, every current claim and title it
  could reach (:class:`~contextmesh.knowledge.catalogue.Reach`) is resolved again and gains the
  mentions it now has. Resolution never teaches the resolver (``learn=False``), so what a claim
  mentions depends on its text and the catalogue only;
* **LINK** — claim → revision ``derived_from``, claim and revision → entity ``mentions``, entity →
  every revision that mentions it ``derived_from``, and the author's links: those out of the
  changed documents, and those into them from the documents that link to them (read again for
  their links alone);
* **EMBED** — the new nodes only; **PRUNE** — reports the new nodes nothing connects and flags
  none of them, because the next increment may connect them and a pruned node is never revived.

An edge is written once: a second observation is not merged into it, so a graph reached by two
paths of increments holds the same weights. Nothing here reads a clock or iterates a set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contextmesh.core.errors import ContextMeshError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.core.model import Provenance
from contextmesh.knowledge.candidates import Folded
from contextmesh.knowledge.catalogue import CatalogueChange, Reach, enter_catalogue, folder_catalogue
from contextmesh.knowledge.corpus import SpanSpec
from contextmesh.knowledge.documents import Document, ReadWarning, read_document
from contextmesh.knowledge.embed import Embedder
from contextmesh.knowledge.extract import drop_reason
from contextmesh.knowledge.links import link_target, link_targets, resolve_links
from contextmesh.knowledge.pipeline import STAGES, BuildReport, Chunk, Drop, StageReport
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.revisions import Revision, claims_of, current_revisions, revision_id
from contextmesh.knowledge.sightings import DocumentSightings, sightings, sightings_from_data, sightings_to_data
from contextmesh.knowledge.survey import Survey

__all__ = ["EXTRACTOR", "Increment", "apply_increment"]

EXTRACTOR = "extract.v1"  # the pipeline's extraction rule, unchanged


@dataclass
class Increment:
    """What one increment wrote, and what it leaves the belief layer to do."""

    survey: Survey
    report: BuildReport
    catalogue: Folded
    entities: CatalogueChange
    revisions: dict[str, str] = field(default_factory=dict)  # document -> the revision written now
    previous: dict[str, str] = field(default_factory=dict)  # document -> the revision it follows
    removed: dict[str, list[str]] = field(default_factory=dict)  # document -> claims no longer made
    new_claims: list[str] = field(default_factory=list)
    carried_claims: list[str] = field(default_factory=list)
    reresolved: int = 0
    neighbours_read: int = 0  # unchanged documents parsed again for their links into or out of a changed one
    divergences: list[str] = field(default_factory=list)
    warnings: list[ReadWarning] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def wrote(self) -> bool:
        """True when the increment changed the graph or the resolver."""
        return bool(self.revisions or self.entities.new_entities or self.entities.new_aliases or self.reresolved)


class _Step:
    """The state the stages of one increment share."""

    def __init__(self, graph: ContextGraph, resolver: Resolver, survey: Survey, index: dict[str, Revision]) -> None:
        self.graph, self.resolver, self.survey, self.index = graph, resolver, survey, index
        self.reports = {name: StageReport(name) for name in STAGES}
        self.changed = list(survey.changed)
        self.docs: dict[str, Document] = {
            c.name: read_document(c.name, c.data) for c in self.changed if c.data is not None
        }
        self.neighbours = self._neighbours()
        self.claim_of: dict[str, str] = {}  # span key of a changed document -> its claim now
        self.mentions: dict[str, list[str]] = {}  # claim or revision id -> entity ids it mentions
        self.owner: dict[str, str] = {}  # claim id -> the revision that makes it now
        self.added_nodes: list[str] = []
        self.added_edges: list[str] = []
        self.edge_counts: dict[str, int] = {}

    def _neighbours(self) -> dict[str, Document]:
        """Unchanged documents whose links must be read again: those linking to a changed document,
        and those a changed document links to."""
        changed = {c.name for c in self.changed}
        wanted = {name for doc in self.docs.values() for name in link_targets(doc)}
        for name, revision in self.index.items():
            links = self.graph.nodes[revision.id].attrs.get("links_to")
            if isinstance(links, list) and changed.intersection(x for x in links if isinstance(x, str)):
                wanted.add(name)
        by_name = {c.name: c for c in self.survey.changes if c.status == "unchanged" and c.data is not None}
        return {n: read_document(n, by_name[n].data) for n in sorted(wanted - changed) if n in by_name}  # type: ignore[arg-type]

    def link(self, src: str, edge_type: str, dst: str, item: str) -> bool:
        """Write the edge unless it exists; an illegal pair is a LINK drop with the graph's reason."""
        if self.graph.find_edge(src, edge_type, dst) is not None:
            return False
        try:
            edge = self.graph.add_edge(src, edge_type, dst)
        except ContextMeshError as exc:
            self.reports["LINK"].drops.append(Drop(item, str(exc)))
            return False
        self.added_edges.append(edge.id)
        self.reports["LINK"].admitted += 1
        self.edge_counts[edge_type] = self.edge_counts.get(edge_type, 0) + 1
        return True


def apply_increment(
    graph: ContextGraph,
    resolver: Resolver,
    survey: Survey,
    embedder: Embedder,
    *,
    index: dict[str, Revision] | None = None,
) -> Increment:
    """Write what the changed documents of ``survey`` add to ``graph`` (see the module docstring).

    Every document is read before anything is written, so a refused file changes nothing; a write
    that fails after that is taken back (nodes and edges this increment added, and the resolver).
    """
    current = current_revisions(graph) if index is None else index
    step = _Step(graph, resolver, survey, current)
    catalogue = folder_catalogue(_folder_sightings(step), survey.registered)
    saved = (dict(resolver.canonical), dict(resolver.aliases), {k: list(v) for k, v in resolver.blocks.items()})
    try:
        return _run(step, catalogue, embedder)
    except BaseException:
        graph._undo(step.added_nodes, step.added_edges)
        restored = Resolver.restore(
            resolver.threshold, saved[0].items(), saved[1].items(), saved[2].items(), resolver.log
        )
        resolver.canonical, resolver.aliases, resolver.blocks = restored.canonical, restored.aliases, restored.blocks
        resolver._by_entity, resolver._squashed = restored._by_entity, restored._squashed
        raise


def _folder_sightings(step: _Step) -> list[DocumentSightings]:
    """The sightings of every current document once the changes are in: read now, or as recorded."""
    found = {name: sightings(doc) for name, doc in step.docs.items()}
    gone = {c.name for c in step.changed if c.status == "deleted"}
    for name, revision in step.index.items():
        if name in found or name in gone or revision.deleted:
            continue
        raw = step.graph.nodes[revision.id].attrs.get("sightings")
        found[name] = sightings_from_data(name, raw, f"node '{revision.id}'.attrs.sightings")
    return [found[name] for name in sorted(found)]


def _run(step: _Step, catalogue: Folded, embedder: Embedder) -> Increment:
    increment = Increment(step.survey, BuildReport([]), catalogue, CatalogueChange())
    increment.neighbours_read = len(step.neighbours)
    _chunk(step, increment)
    _extract(step, increment)
    increment.entities = enter_catalogue(step.graph, step.resolver, catalogue.entities)
    step.added_nodes.extend(increment.entities.new_entities)
    _resolve(step, increment)
    _link(step, increment)
    _embed(step, embedder)
    _prune(step)
    increment.divergences = [*increment.entities.divergences, *increment.divergences]
    increment.report = BuildReport([step.reports[name] for name in STAGES])
    increment.warnings = _warnings(step)
    return increment


# -- CHUNK ----------------------------------------------------------------------------------


def _chunk(step: _Step, increment: Increment) -> None:
    report, graph = step.reports["CHUNK"], step.graph
    spans = 0
    for change in step.changed:
        previous = change.previous
        number = previous.number + 1 if previous is not None else 1
        node_id = revision_id(change.name, number, change.digest)
        document = step.docs.get(change.name)
        if document is None:  # deleted: an empty revision, under the last one's title
            assert previous is not None
            before = graph.nodes[previous.id].attrs
            label = previous.title
            attrs = {
                "origin": before.get("origin"),
                "retrieved_at": before.get("retrieved_at"),
                "deleted": True,
                "links_to": [],
            }
        else:
            source = document.source
            label = source.title
            attrs = {
                "origin": source.origin,
                "retrieved_at": source.retrieved_at,
                "links_to": list(link_targets(document)),
                "sightings": sightings_to_data(sightings(document)),
            }
            for span in source.spans:
                increment.chunks.append(Chunk(span.key, node_id, span.chunk))
            spans += len(source.spans)
        attrs.update({"key": change.name, "document": change.name, "revision": number, "digest": change.digest})
        attrs["channel"] = step.survey.channel
        graph.add_node("source", label, id=node_id, attrs=attrs)
        step.added_nodes.append(node_id)
        increment.revisions[change.name] = node_id
        if previous is not None:
            increment.previous[change.name] = previous.id
    report.admitted = spans
    report.detail = {
        "revisions": len(increment.revisions),
        "spans": spans,
        **{status: step.survey.count(status) for status in ("new", "revised", "deleted", "unchanged")},
    }


# -- EXTRACT ---------------------------------------------------------------------------------


def _claim_id(step: _Step, key: str) -> str:
    """``claim:<key>``, or, when a superseded claim holds it (the sentence came back), the next free one."""
    candidate, n = slug(key, "claim"), 1
    while candidate in step.graph.nodes:
        n += 1
        candidate = slug(f"{key}|{n}", "claim")
    return candidate


def _offset(spans: tuple[SpanSpec, ...], key: str) -> int:
    """Character offset of a span's headline in its source text (spans joined by blank lines)."""
    position = 0
    for span in spans:
        if span.key == key:
            return position
        position += len(span.chunk) + 2
    return position


def _extract(step: _Step, increment: Increment) -> None:
    report, graph = step.reports["EXTRACT"], step.graph
    for change in step.changed:
        previous = change.previous
        before = claims_of(graph, previous.id) if previous is not None and not previous.deleted else {}
        document = step.docs.get(change.name)
        kept: set[str] = set()
        for span in document.source.spans if document is not None else ():
            reason = drop_reason(span.text)
            if reason is not None:
                report.drops.append(Drop(span.key, reason))
                continue
            kept.add(span.key)
            if span.key in before:
                step.claim_of[span.key] = before[span.key]
                increment.carried_claims.append(before[span.key])
                continue
            assert document is not None
            offset = _offset(document.source.spans, span.key)
            node = graph.add_node(
                "claim",
                span.text,
                id=_claim_id(step, span.key),
                attrs={"key": span.key},
                provenance=Provenance(
                    source_id=increment.revisions[change.name],
                    span=(offset, offset + len(span.text)),
                    extractor=EXTRACTOR,
                    checks=("asserts",),
                    recorded_at_build=graph.build,
                ),
            )
            step.added_nodes.append(node.id)
            step.claim_of[span.key] = node.id
            increment.new_claims.append(node.id)
        gone = [claim for key, claim in before.items() if key not in kept]
        if gone:
            increment.removed[change.name] = gone
    report.admitted = len(increment.new_claims) + len(increment.carried_claims)
    report.detail = {"new": len(increment.new_claims), "carried": len(increment.carried_claims)}


# -- RESOLVE ---------------------------------------------------------------------------------


def _read(step: _Step, text: str, *, report: bool) -> list[str]:
    found, dropped = step.resolver.find_mentions(text, learn=False)
    if report:
        step.reports["RESOLVE"].drops.extend(Drop(r.mention, r.reason or "unresolved") for r in dropped)
    return list(dict.fromkeys(m.record.entity_id for m in found if m.record.entity_id))


def _held(step: _Step, node_id: str) -> list[str]:
    return [edge.dst for edge in step.graph.out_edges(node_id, ("mentions",), live_only=False)]


def _resolve(step: _Step, increment: Increment) -> None:
    report, graph = step.reports["RESOLVE"], step.graph
    reach = Reach(increment.entities) if increment.entities.grew else None
    new = set(increment.new_claims)
    for change in step.changed:
        document = step.docs.get(change.name)
        if document is None:
            continue
        written = increment.revisions[change.name]
        step.mentions[written] = _read(step, graph.nodes[written].label, report=True)
        for span in document.source.spans:
            claim = step.claim_of.get(span.key)
            if claim is None or claim in step.owner:
                continue
            step.owner[claim] = written
            step.mentions[claim] = (
                _read(step, span.text, report=True) if claim in new else _again(step, increment, claim, reach)
            )
    if reach is not None:
        for name, current in step.index.items():
            if name in increment.revisions or current.deleted:
                continue
            if reach.touches(current.title):
                step.mentions[current.id] = _again(step, increment, current.id, reach)
            for claim in claims_of(graph, current.id).values():
                if reach.touches(graph.nodes[claim].label):
                    step.owner[claim] = current.id
                    step.mentions[claim] = _again(step, increment, claim, reach)
    report.admitted = sum(len(ids) for ids in step.mentions.values())
    report.detail = {
        "entities": len(increment.catalogue.entities),
        "new_entities": len(increment.entities.new_entities),
        "new_aliases": sum(len(a) for a in increment.entities.new_aliases.values()),
        "resolved_again": increment.reresolved,
    }


def _again(step: _Step, increment: Increment, node_id: str, reach: Reach | None) -> list[str]:
    """A carried or unchanged node's mentions: as held, plus what the grown catalogue now finds."""
    held = _held(step, node_id)
    node = step.graph.nodes[node_id]
    if reach is None or not reach.touches(node.label):
        return held
    increment.reresolved += 1
    now = _read(step, node.label, report=False)
    lost = [entity for entity in held if entity not in now]
    if lost:
        increment.divergences.append(
            f"'{node.label[:60]}' keeps its mentions of {lost}, which a fresh reading would no longer make"
        )
    return list(dict.fromkeys([*held, *now]))


# -- LINK ------------------------------------------------------------------------------------


def _link(step: _Step, increment: Increment) -> None:
    graph = step.graph
    changed = set(increment.revisions.values())
    for node_id, entities in step.mentions.items():
        revision = step.owner.get(node_id, node_id)
        if revision != node_id and revision in changed:
            step.link(node_id, "derived_from", revision, str(graph.nodes[node_id].attrs.get("key", node_id)))
        for entity in entities:
            step.link(node_id, "mentions", entity, node_id)
            if revision != node_id:
                step.link(revision, "mentions", entity, revision)
            step.link(entity, "derived_from", revision, entity)
    _relations(step, increment)
    step.reports["LINK"].detail = dict(sorted(step.edge_counts.items()))


def _relations(step: _Step, increment: Increment) -> None:
    """The author's links out of the changed documents and into them, as typed edges (as a full build's LINK)."""
    read = {**step.neighbours, **step.docs}
    relations, _ = resolve_links([read[name] for name in sorted(read)])
    changed = set(step.docs)
    claims: dict[str, str] = dict(step.claim_of)
    for name in step.neighbours:
        claims.update(claims_of(step.graph, step.index[name].id))
    doc_of = {span.key: name for name, doc in read.items() for span in doc.source.spans}
    report = step.reports["LINK"]
    for name in sorted(read):
        for span in read[name].source.spans:
            for relation in relations.get(span.key, ()):
                if name not in changed and doc_of.get(relation.target) not in changed:
                    continue  # a link between two unchanged documents is already in the graph
                item = f"{span.key} -{relation.type}-> {relation.target}"
                # A sentence that is not a claim speaks for its document, as in a full build.
                src = claims.get(span.key) or _revision(step, increment, doc_of.get(span.key))
                dst = claims.get(relation.target) or _revision(step, increment, doc_of.get(relation.target))
                if src is None or dst is None:
                    report.drops.append(Drop(item, "an endpoint is in no document"))
                    continue
                step.link(src, relation.type, dst, item)


def _revision(step: _Step, increment: Increment, document: str | None) -> str | None:
    """The revision a document has now: the one written by this increment, else the indexed one."""
    if document is None:
        return None
    if document in increment.revisions:
        return increment.revisions[document]
    known = step.index.get(document)
    return known.id if known is not None else None


# -- EMBED, PRUNE, warnings -------------------------------------------------------------------


def _embed(step: _Step, embedder: Embedder) -> None:
    report = step.reports["EMBED"]
    for node_id in step.added_nodes:
        node = step.graph.nodes[node_id]
        if node.embedding is None:
            node.embedding = embedder.embed(node.label)
            report.admitted += 1
    report.detail = {"dimensions": embedder.dimensions}


def _prune(step: _Step) -> None:
    report = step.reports["PRUNE"]
    alone = [node_id for node_id in step.added_nodes if step.graph.degree(node_id) == 0]
    report.drops.extend(Drop(node_id, "nothing connects it yet (an increment prunes nothing)") for node_id in alone)
    report.admitted = len(step.added_nodes) - len(alone)


def _warnings(step: _Step) -> list[ReadWarning]:
    """The folder's warnings, the changed documents' own, and every link warning about a changed document."""
    read = {**step.neighbours, **step.docs}
    _, link_warnings = resolve_links([read[name] for name in sorted(read)])
    changed = {c.name for c in step.changed}
    into_changed = {
        (name, link.line)
        for name, doc in step.neighbours.items()
        for link in doc.links
        if link_target(name, link.destination) in changed
    }
    notes = [note for name in sorted(step.docs) for note in step.docs[name].notes]
    kept = [w for w in link_warnings if w.file in changed or (w.file, w.line) in into_changed]
    return sorted([*step.survey.warnings, *notes, *kept], key=lambda w: (w.file, w.line))

"""Two clocks, never merged, and the graph as it stood on a date.

**Source time** is when the world said something: a source's ``retrieved_at`` date. **Processing
time** is when the graph learned it: the build counter. There is no wall clock anywhere. A question
asked "as of" a date is answered on source time only:

* a source is *known then* if it was retrieved on or before the date, *later* if after, *undated*
  if it carries no date;
* a claim, decision or evidence node takes the date of the source its provenance names; an
  entity the date of the earliest source that mentions it; an assumption the date of the earliest
  decision or claim that depends on it;
* a rejection happened on the date of the evidence that rejected it.

``as_of_graph`` builds the projection: everything dated after the date is dropped, undated nodes
are kept (nothing says they came later) and reported as such, and only the rejections whose
evidence is dated on or before the date are replayed — so nothing learned or invalidated later
leaks in. ``explain_as_of`` walks that projection.

Invariant: the projection is built from a copy; the live graph is never touched.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from contextmesh.belief.invalidation import apply_invalidation, blast_radius
from contextmesh.core.errors import InputError
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.corpus import parse_date
from contextmesh.knowledge.embed import Embedder
from contextmesh.knowledge.flat_baseline import FlatBaseline
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.traverse import Walk, Walker

__all__ = ["AsOf", "TemporalError", "as_of_graph", "date_of", "explain_as_of", "node_dates", "rejection_date"]


_ISO = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


class TemporalError(InputError):
    """A date that cannot be used for an as-of question."""


def _date(text: object) -> dt.date | None:
    # Only YYYY-MM-DD dates a node; "20260315" or a week date is treated as undated, as date_of refuses them.
    if isinstance(text, str) and _ISO.match(text):
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            return None
    return None


def node_dates(graph: ContextGraph) -> dict[str, dt.date | None]:
    """The source-time date of every node (``None`` when undated)."""
    dates: dict[str, dt.date | None] = {}
    for node in graph:
        if node.type == "source":
            dates[node.id] = _date(node.attrs.get("retrieved_at"))
    for node in graph:
        if node.type in {"claim", "decision", "evidence"}:
            dates[node.id] = dates.get(node.provenance.source_id) if node.provenance else None
    for node in graph:
        if node.type == "entity":
            found = [
                dates.get(edge.src)
                for edge in graph.in_edges(node.id, ("mentions",), live_only=False)
                if dates.get(edge.src) is not None
            ]
            dates[node.id] = min(d for d in found if d is not None) if found else None
    for node in graph:
        if node.type != "assumption":
            continue
        record = graph.assumptions.get(node.id)
        predecessor = record.supersedes if record is not None else None
        fell = rejection_date(graph, predecessor, dates) if predecessor else None
        if fell is not None:
            # A replacement is minted by its predecessor's rejection: it cannot predate it.
            dates[node.id] = fell
            continue
        found = [
            dates.get(edge.src)
            for edge in graph.in_edges(node.id, ("depends_on",), live_only=False)
            if dates.get(edge.src) is not None
        ]
        dates[node.id] = min(d for d in found if d is not None) if found else None
    return dates


def rejection_date(graph: ContextGraph, assumption_id: str, dates: dict[str, dt.date | None]) -> dt.date | None:
    """The date of the evidence that rejected an assumption (its ``contradicts`` in-edges), if dated."""
    record = graph.assumptions.get(assumption_id)
    if record is None or record.status != "rejected":
        return None
    found = [
        dates.get(edge.src)
        for edge in graph.in_edges(assumption_id, ("contradicts",), live_only=False)
        if graph.node(edge.src).type == "evidence" and dates.get(edge.src) is not None
    ]
    return min(d for d in found if d is not None) if found else None


def date_of(value: str, where: str = "as_of") -> dt.date:
    """A strict ISO date for an as-of question, or a :class:`TemporalError`."""
    try:
        return parse_date(value, where)
    except InputError as exc:
        raise TemporalError(exc.path, exc.found, exc.rule) from None


def as_of_graph(graph: ContextGraph, when: dt.date) -> tuple[ContextGraph, dict[str, str]]:
    """The graph as it stood on ``when`` (a copy), and each node's class: known / later / undated."""
    dates = node_dates(graph)
    classes: dict[str, str] = {}
    for nid in graph.nodes:
        day = dates.get(nid)
        classes[nid] = "undated" if day is None else ("known" if day <= when else "later")
    projection = graph.subgraph(nid for nid, cls in classes.items() if cls != "later")
    for node in projection:
        node.invalidated = False
    for edge in projection.edges.values():
        edge.invalidated = False
    replay: list[str] = []
    for assumption_id, record in list(projection.assumptions.items()):
        evidence = tuple(e for e in record.evidence_ids if e in projection.nodes)
        update: dict[str, object] = {"evidence_ids": evidence}
        if record.status == "rejected":
            # Only the evidence that contradicts it rejected it; evidence that justified it did not.
            rejecting = [
                e.src
                for e in graph.in_edges(assumption_id, ("contradicts",), live_only=False)
                if graph.node(e.src).type == "evidence"
            ]
            fell_then = any(src in projection.nodes for src in rejecting)
            if fell_then:
                replay.append(assumption_id)
            else:
                update.update(status="active", rejected_at_build=None)
        if record.superseded_by is not None and record.superseded_by not in projection.nodes:
            update["superseded_by"] = None
            if record.status == "superseded":
                update["status"] = "active"
        if record.supersedes is not None and record.supersedes not in projection.nodes:
            update["supersedes"] = None
        projection.sync_assumption(record.model_copy(update=update))
    for assumption_id in replay:
        report = blast_radius(projection, assumption_id)
        apply_invalidation(projection, assumption_id, report)
    return projection, classes


@dataclass
class AsOf:
    """An answer from the graph as it stood on a date, with every path node's temporal class."""

    as_of: str
    walk: Walk
    classes: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """Plain data."""
        return {
            "as_of": self.as_of,
            "walk": self.walk.to_dict(),
            "path_classes": {s.node_id: self.classes.get(s.node_id, "known") for s in self.walk.path},
            "counts": self.counts,
        }


def explain_as_of(
    graph: ContextGraph,
    resolver: Resolver,
    question: str,
    as_of: str,
    *,
    flat: FlatBaseline | None = None,
    embedder: Embedder | None = None,
) -> AsOf:
    """Answer ``question`` from the graph as it stood on ``as_of`` (YYYY-MM-DD). Moves no telemetry."""
    when = date_of(as_of)
    if not isinstance(question, str) or not question.strip():
        raise TemporalError("question", repr(question), "a question is non-empty text")
    projection, classes = as_of_graph(graph, when)
    scratch = Resolver(resolver.threshold)
    for entity_id, name in resolver.canonical.items():
        scratch.canonical[entity_id] = name
    for surface, entity_id in resolver.aliases.items():
        scratch.add_alias(surface, entity_id)
    scratch.blocks = {key: list(ids) for key, ids in resolver.blocks.items()}
    walk = Walker(projection, scratch, embedder=embedder, flat=flat).ask(question)
    counts = {"known": 0, "later": 0, "undated": 0}
    for cls in classes.values():
        counts[cls] += 1
    return AsOf(as_of, walk, classes, counts)

"""An observation from a source named by where it lives: the source found or recorded, then the evidence.

``contextmesh evidence add TEXT --source ORIGIN [--title T]`` (and an agent naming a new source) is
one call here. A live source whose ``origin`` is ``ORIGIN`` is reused; otherwise a new source node
is recorded with that origin and title (the title defaults to the origin; the source is undated, as
nothing says when it was written). The evidence itself goes through
:func:`contextmesh.belief.evidence.submit`: a raw observation, no edge, no verdict — the project's
auditors decide what it means at the next recheck.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contextmesh.belief.evidence import EvidenceIntakeError, Submission, submit
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.core.model import NodeRecord

__all__ = ["SourcedEvidence", "add_evidence", "source_for"]


@dataclass(frozen=True)
class SourcedEvidence:
    """The source the observation is attributed to, whether it was new, and the evidence."""

    source: NodeRecord
    source_created: bool
    submission: Submission

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json`` and agents."""
        node = self.submission.node
        return {
            "evidence_id": node.id,
            "evidence_created": self.submission.created,
            "text": node.label,
            "source_id": self.source.id,
            "source_created": self.source_created,
            "origin": self.source.attrs.get("origin"),
            "title": self.source.label,
        }


def source_for(graph: ContextGraph, origin: str, title: str | None = None) -> tuple[NodeRecord, bool]:
    """The live source whose origin is ``origin`` (or whose id it is), or a new one (``(node, created)``)."""
    if not isinstance(origin, str) or not origin.strip():
        raise EvidenceIntakeError("a source's origin is non-empty text (where the observation lives: a URL, a path)")
    for node in graph.by_type("source"):
        if node.attrs.get("origin") == origin:
            return node, False
    # A source node's own id names it as well as its origin does (`--source source:…` on the CLI).
    named = graph.nodes.get(origin) if origin.startswith("source:") else None
    if named is not None and named.type == "source" and named.live:
        return named, False
    label = title if title is not None and title.strip() else origin
    node = graph.add_node(
        "source", label, id=slug(f"evidence-source|{origin}", "source"), attrs={"origin": origin, "retrieved_at": None}
    )
    return node, True


def add_evidence(
    graph: ContextGraph,
    text: str,
    *,
    origin: str,
    title: str | None = None,
    external_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> SourcedEvidence:
    """Record ``text`` as evidence from the source at ``origin`` (found, or recorded with ``title``).

    The text is checked before a source is recorded. Run it inside ``Session.apply`` (the CLI does),
    so a refusal commits nothing at all.
    """
    if not isinstance(text, str) or not text.strip():
        raise EvidenceIntakeError("evidence text must be non-empty text")
    source, created = source_for(graph, origin, title)
    submission = submit(graph, text, source.id, external_id=external_id, metadata=metadata)
    return SourcedEvidence(source, created, submission)

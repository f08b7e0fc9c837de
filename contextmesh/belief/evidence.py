"""Evidence intake: store a raw observation, express no verdict.

``submit`` records what was observed and where: an ``evidence`` node whose id is the SHA-256 of
the canonical payload, no edge, no target, no rejection. Deciding what the observation means is an
auditor's job (the execution engine), never the submitter's.

Limits: text and serialised metadata at most 64 KiB each; metadata is strict JSON (an object),
nested at most 8 deep with at most 1,000 items in all. Replaying the same payload returns the same
node; a payload whose id is taken by different content is refused.

Invariant: a refused submission changes nothing.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from contextmesh.core.canonical import canonical_bytes, digest, ensure_canonical
from contextmesh.core.errors import BeliefError, CanonicalError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import NodeRecord, Provenance

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_ITEMS", "EvidenceIntakeError", "Submission", "submit"]

MAX_BYTES = 64 * 1024
MAX_DEPTH = 8
MAX_ITEMS = 1000


class EvidenceIntakeError(BeliefError):
    """A submitted observation was refused; nothing was stored."""


@dataclass(frozen=True)
class Submission:
    """The evidence node and whether this call created it (False on an idempotent replay)."""

    node: NodeRecord
    created: bool


def _shape(value: Any, depth: int, counter: list[int]) -> None:
    # Only containers make depth; a scalar leaf at the deepest allowed level is fine.
    if isinstance(value, dict):
        items: list[Any] = list(value.values())
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return
    if depth > MAX_DEPTH:
        raise EvidenceIntakeError(f"metadata is nested deeper than {MAX_DEPTH} levels")
    for child in items:
        counter[0] += 1
        if counter[0] > MAX_ITEMS:
            raise EvidenceIntakeError(f"metadata holds more than {MAX_ITEMS} items")
        _shape(child, depth + 1, counter)


def submit(
    graph: ContextGraph,
    text: str,
    source_id: str,
    external_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Submission:
    """Store a raw observation attributed to ``source_id``."""
    if not isinstance(text, str) or not text.strip():
        raise EvidenceIntakeError("evidence text must be non-empty text")
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise EvidenceIntakeError(f"evidence text is {len(text.encode('utf-8'))} bytes; the limit is {MAX_BYTES}")
    if external_id is not None and (not isinstance(external_id, str) or not external_id.strip()):
        raise EvidenceIntakeError("external_id, when given, must be non-empty text")
    meta = {} if metadata is None else metadata
    if not isinstance(meta, dict):
        raise EvidenceIntakeError(f"metadata must be a JSON object, not {type(meta).__name__}")
    _shape(meta, 1, [0])
    try:
        ensure_canonical(meta, "metadata")
    except CanonicalError as exc:
        raise EvidenceIntakeError(f"metadata refused: {exc}") from None
    if len(canonical_bytes(meta)) > MAX_BYTES:
        raise EvidenceIntakeError(f"metadata is larger than {MAX_BYTES} bytes")
    source = graph.nodes.get(source_id)
    if source is None or source.type != "source":
        found = "missing" if source is None else f"a {source.type}"
        raise EvidenceIntakeError(f"source_id '{source_id}' must name a source node (it is {found})")
    payload = {"text": text, "source_id": source_id, "external_id": external_id, "metadata": meta}
    payload_digest = digest(payload)
    evidence_id = f"evidence:{payload_digest}"
    existing = graph.nodes.get(evidence_id)
    if existing is not None:
        if existing.type != "evidence" or existing.attrs.get("payload_digest") != payload_digest:
            raise EvidenceIntakeError(f"'{evidence_id}' already names different content; refusing to merge")
        return Submission(existing, False)
    node = graph.add_node(
        "evidence",
        text,
        id=evidence_id,
        # A deep copy: the caller's object must not be able to change what was stored.
        attrs={
            "kind": "observation",
            "external_id": external_id,
            "metadata": copy.deepcopy(meta),
            "payload_digest": payload_digest,
        },
        provenance=Provenance(source_id=source_id, extractor="evidence.submit", recorded_at_build=graph.build),
    )
    return Submission(node, True)

"""Saying "I don't know": when a walk's best candidate is not good enough, and which dead end that is.

A walk answers only when its best live candidate's confidence (:mod:`~contextmesh.knowledge.ranking`)
is at least :data:`THRESHOLD`. Below it, the walk dead-ends with the one of the four named dead
ends that fits, tried in this order (``docs/adr/0009-walk-ranking-and-confidence.md``):

1. ``pruned_too_early`` — something that would have answered (confidence at or above the
   threshold) has fallen: pruned, invalidated, superseded, contradicted by live evidence or
   resting on a rejected assumption; the detail names it and why;
2. ``entity_unresolved`` — the question named no entity the resolver knows (the walk started
   from entities that merely share a word with it), so nothing anchors an answer;
3. ``wrong_node_type`` — everything else: the walk reached claims and decisions, but none
   carries what the question asks (when a source or an entity matches the question better, the
   detail names it: the graph holds the topic, not an answer about it).

``no_typed_edge`` keeps its structural meaning (no edge the policy allows leaves the seeds), and
one more: a question that asks across a relation (``supersedes``, ``contradicts``, ``cites``)
whose best candidate is not across that relation — the edge it asks for is not there.

Every low-confidence dead end names the best candidate it rejected, with its confidence.

An **ambiguous mention** is an acronym that could mean two or more entities: their initials, or
the initials of their name without its first word (the generic part people abbreviate:
"Eastfield Sewage Treatment Plant" is an "STP"), or an alias. :func:`ambiguous_acronyms` finds
them; the walk tries each reading and dead-ends as ``entity_unresolved`` naming the candidates
unless the context makes one reading clearly better (:data:`READING_MARGIN`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from contextmesh.knowledge.resolve import Mention, ResolutionRecord
from contextmesh.knowledge.text import normalize, words

__all__ = ["READING_MARGIN", "STRICT_RELATIONS", "THRESHOLD", "ambiguous_acronyms", "low_confidence"]

THRESHOLD = 0.25
READING_MARGIN = 0.15
STRICT_RELATIONS = frozenset({"supersedes", "contradicts", "cites", "produces", "depends_on"})


def _is_acronym(surface: str) -> bool:
    return len(words(surface)) == 1 and 2 <= len(surface) <= 6 and surface.isupper() and surface.isalnum()


def _initials(name: str) -> tuple[str, str | None]:
    tokens = normalize(name).split()
    whole = "".join(token[0] for token in tokens if token)
    tail = "".join(token[0] for token in tokens[1:] if token) if len(tokens) >= 3 else None
    return whole, tail


def ambiguous_acronyms(
    canonical: Mapping[str, str],
    aliases: Mapping[str, str],
    mentions: Sequence[Mention],
    dropped: Sequence[ResolutionRecord],
    holds: Iterable[str],
) -> list[tuple[str, list[str]]]:
    """(surface, entity ids) for every acronym in the question that could mean two or more held entities."""
    held = set(holds)
    surfaces = [(m.record.mention, m.record.entity_id) for m in mentions]
    surfaces.extend((r.mention, None) for r in dropped)
    found: list[tuple[str, list[str]]] = []
    for surface, resolved in surfaces:
        if not _is_acronym(surface):
            continue
        letters = surface.lower()
        meanings: list[str] = [resolved] if resolved else []
        owner = aliases.get(normalize(surface))
        if owner is not None and owner not in meanings:
            meanings.append(owner)
        for entity_id, name in canonical.items():
            if entity_id not in meanings and letters in _initials(name):
                meanings.append(entity_id)
        meanings = [m for m in meanings if m in held]
        if len(meanings) > 1:
            found.append((surface, meanings))
    return found


def low_confidence(
    *,
    best: tuple[str, float] | None,
    fallen: tuple[str, float, str] | None,
    named_entities: bool,
    tried: str = "",
    off_type: tuple[str, float] | None,
    reached: int,
) -> tuple[str, str]:
    """The dead end (reason, detail) for a walk whose best candidate fell below :data:`THRESHOLD`.

    ``best`` is the best live candidate's (description, confidence); ``fallen`` the most confident
    fallen one's (description, confidence, why); ``off_type`` the best source or entity match.
    """
    rejected = "nothing" if best is None else f"{best[0]} (confidence {best[1]:.2f} < {THRESHOLD:.2f})"
    if fallen is not None and fallen[1] >= THRESHOLD:
        return "pruned_too_early", f"the walk needed {fallen[0]}, which is no longer walkable: {fallen[2]}"
    if not named_entities:
        return (
            "entity_unresolved",
            f"no mention resolved to a canonical entity: {tried or 'nothing'}; starting from what shares its "
            f"words, the best candidate was {rejected}",
        )
    if off_type is not None and off_type[1] >= THRESHOLD and (best is None or off_type[1] > best[1]):
        return (
            "wrong_node_type",
            f"the question matches {off_type[0]}, which cannot answer; best candidate rejected: {rejected}",
        )
    return "wrong_node_type", f"none of the {reached} claims and decisions reached answers it; best rejected: {rejected}"

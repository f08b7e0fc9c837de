"""Saying "I don't know": when a walk's best candidate is not good enough, and which dead end that is.

A walk answers only when its best live candidate's confidence (:mod:`~contextmesh.knowledge.ranking`)
is at least :data:`THRESHOLD`. Below it, the walk dead-ends with the one of the four named dead
ends that fits, tried in this order (``docs/adr/0014-walk-ranking-and-confidence.md``):

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
unless the context makes one reading clearly better (:data:`READING_MARGIN`) or every reading finds
the same answer, and that answer holds two or more of the question's other words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from contextmesh.knowledge.ranking import AnswerIndex, Candidate, Reach
from contextmesh.knowledge.search import Reached
from contextmesh.knowledge.text import normalize, words

if TYPE_CHECKING:
    from contextmesh.core.graph import ContextGraph
    from contextmesh.knowledge.resolve import Mention, ResolutionRecord

__all__ = [
    "READING_MARGIN",
    "STRICT_RELATIONS",
    "THRESHOLD",
    "Verdict",
    "ambiguous_acronyms",
    "choose",
    "doubt",
    "initials_index",
    "low_confidence",
    "no_candidate",
    "no_relation",
    "sure",
]

Verdict = tuple[str, str, str | None]  # reason, detail, the label of the best candidate rejected

THRESHOLD = 0.20
READING_MARGIN = 0.15
STRICT_RELATIONS = frozenset({"supersedes", "contradicts", "cites", "produces", "depends_on"})


def sure(confidence: float) -> bool:
    """True when a confidence reaches :data:`THRESHOLD` (compared at six decimals: sums of shares are not exact)."""
    return round(confidence, 6) >= THRESHOLD


def choose(candidates: Iterable[Candidate]) -> Candidate | None:
    """The first candidate in doubt of none (:func:`~contextmesh.knowledge.standing.doubted`) when it is
    confident, else the first confident one in doubt, else the first: what yields to what (ADR 0022)."""
    pool = list(candidates)
    clear = next((c for c in pool if c.doubt is None), None)
    if clear is not None and sure(clear.confidence):
        return clear
    return next((c for c in pool if c.doubt is not None and sure(c.confidence)), clear or (pool[0] if pool else None))


def _describe(graph: ContextGraph, node_id: str) -> str:
    node = graph.node(node_id)
    return f"{node.type} '{node.label}'"


def _is_acronym(surface: str) -> bool:
    return len(words(surface)) == 1 and 2 <= len(surface) <= 6 and surface.isupper() and surface.isalnum()


def _initials(name: str) -> tuple[str, str]:
    tokens = normalize(name).split()
    whole = "".join(token[0] for token in tokens if token)
    tail = "".join(token[0] for token in tokens[1:] if token) if len(tokens) >= 3 else ""
    return whole, tail


def initials_index(canonical: Mapping[str, str]) -> dict[str, list[str]]:
    """Initials (of the whole name, and of the name without its first word) → entity ids, in registration order."""
    index: dict[str, list[str]] = {}
    for entity_id, name in canonical.items():
        for letters in dict.fromkeys(_initials(name)):
            if letters:
                index.setdefault(letters, []).append(entity_id)
    return index


def ambiguous_acronyms(
    by_initials: Mapping[str, list[str]],
    aliases: Mapping[str, str],
    mentions: Sequence[Mention],
    dropped: Sequence[ResolutionRecord],
    holds: Callable[[str], bool],
) -> list[tuple[str, list[str]]]:
    """(surface, entity ids) for every acronym in the question that could mean two or more entities ``holds``.

    ``by_initials`` is :func:`initials_index` of the resolver's canonical names.
    """
    surfaces = [(m.record.mention, m.record.entity_id) for m in mentions]
    surfaces.extend((r.mention, None) for r in dropped)
    found: list[tuple[str, list[str]]] = []
    for surface, resolved in surfaces:
        if not _is_acronym(surface):
            continue
        meanings: list[str] = [resolved] if resolved else []
        owner = aliases.get(normalize(surface))
        if owner is not None and owner not in meanings:
            meanings.append(owner)
        meanings.extend(e for e in by_initials.get(surface.lower(), ()) if e not in meanings)
        meanings = [m for m in meanings if holds(m)]
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
    if fallen is not None and sure(fallen[1]):
        return "pruned_too_early", f"the walk needed {fallen[0]}, which is no longer walkable: {fallen[2]}"
    if not named_entities:
        return (
            "entity_unresolved",
            f"no mention resolved to a canonical entity: {tried or 'nothing'}; starting from what shares its "
            f"words, the best candidate was {rejected}",
        )
    if off_type is not None and sure(off_type[1]) and (best is None or off_type[1] > best[1]):
        return (
            "wrong_node_type",
            f"the question matches {off_type[0]}, which cannot answer; best candidate rejected: {rejected}",
        )
    return (
        "wrong_node_type",
        f"none of the {reached} claims and decisions reached answers it; best rejected: {rejected}",
    )


def doubt(
    graph: ContextGraph,
    index: AnswerIndex,
    ranked: Sequence[Candidate],
    found: Reached,
    *,
    named: bool,
    terms: tuple[str, ...],
    tried: str,
    answer_types: frozenset[str],
) -> Verdict:
    """The dead end of a walk whose best live candidate is below the threshold (or that has none)."""
    best = next((c for c in ranked if c.fallen is None), None)
    fallen = [(_describe(graph, c.node_id), c.confidence, c.fallen or "") for c in ranked if c.fallen is not None]
    fallen += [(why, index.coverage(n, terms), "pruned or invalidated") for n, why in found.blocked.items()]
    top_fallen = max(fallen, key=lambda f: f[1]) if fallen else None
    off = [
        (_describe(graph, n), index.coverage(n, terms))
        for n in found.reached
        if graph.node(n).type in {"source", "entity"} and n not in found.seeds
    ]
    top_off = max(off, key=lambda f: f[1]) if off and terms else None
    reason, detail = low_confidence(
        best=None if best is None else (_describe(graph, best.node_id), best.confidence),
        fallen=top_fallen,
        named_entities=named,
        tried=tried,
        off_type=top_off,
        reached=sum(1 for n in found.reached if graph.node(n).type in answer_types),
    )
    return reason, detail, None if best is None else graph.node(best.node_id).label


def no_relation(graph: ContextGraph, strict: Sequence[str], ranked: Sequence[Candidate]) -> Verdict:
    """The dead end of a question asking across a relation that nothing it describes has."""
    crossing = [c for c in ranked if c.fallen is None and c.crossed]
    edges = "/".join(strict)
    described = next((c for c in ranked if c.fallen is None), ranked[0])
    detail = f"the question asks across {edges}; no live {edges} edge leaves what it describes"
    detail += f" (best match: {_describe(graph, described.anchor or described.node_id)}"
    if crossing:
        detail += f"; best across {edges}: {_describe(graph, crossing[0].node_id)}, confidence "
        detail += f"{crossing[0].confidence:.2f} < {THRESHOLD:.2f}"
    return "no_typed_edge", detail + ")", graph.node(described.node_id).label


def no_candidate(
    graph: ContextGraph, seeds: Sequence[str], reached: Mapping[str, Reach], blocked: Mapping[str, str]
) -> Verdict:
    """The dead end of a walk that reached no node of an answering type."""
    labels = ", ".join(f"'{graph.node(s).label}'" for s in seeds)
    if blocked:
        first = next(iter(blocked.values()))
        detail = f"from {labels} the walk needed {first}, which is no longer walkable ({len(blocked)} such node(s))"
        return "pruned_too_early", detail, None
    if set(reached) <= set(seeds):
        return "no_typed_edge", f"no live edge of the policy's types leaves {labels}", None
    kinds = Counter(graph.node(n).type for n in reached)
    found = ", ".join(f"{n} {t}" for t, n in sorted(kinds.items()))
    return "wrong_node_type", f"from {labels} the walk reached only {found}; none is a claim or decision", None

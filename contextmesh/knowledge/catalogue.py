"""The entity catalogue of an ingested folder, entered into a graph and its resolver, and what it reaches.

The catalogue is a function of the folder alone: the entities file's entities, then what
:func:`~contextmesh.knowledge.candidates.fold_entities` admits from the sightings of every current
document added together (:mod:`~contextmesh.knowledge.sightings`). :func:`enter_catalogue` brings a
graph and its resolver up to it: a new entity is registered and gets its node (marked
``catalogue``), an entity with new aliases gets them. Nothing is ever taken back — an entity keeps
its id for as long as the graph lives (GRAPH.md) — so an entity the folder no longer admits, or an
alias it no longer gives, is *kept* and reported as a divergence: from then on the graph is not
what a fresh ingestion of the same files would build. So is a catalogue entity the resolver
refuses because a kept one holds its surface.

:class:`Reach` answers which texts an entry could change the reading of, so that only those are
resolved again: a text is reached when one of its word n-grams (the resolver looks at four words at
most) shares a blocking key or a squashed form with a new surface, or when one of its words is an
acronym of a new entity's initials. Those are the only ways :class:`~contextmesh.knowledge.resolve.Resolver`
ever compares a mention with an entity, so a text the reach misses resolves exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from contextmesh.core.errors import IdentityError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.knowledge.candidates import Folded, fold_entities
from contextmesh.knowledge.corpus import EntitySpec
from contextmesh.knowledge.entities_file import EntitiesFile
from contextmesh.knowledge.resolve import Resolver, block_keys
from contextmesh.knowledge.sightings import DocumentSightings, combine
from contextmesh.knowledge.text import normalize, words

__all__ = ["CATALOGUE_ATTR", "CatalogueChange", "Reach", "enter_catalogue", "folder_catalogue"]

CATALOGUE_ATTR = "catalogue"  # on an entity node: a folder's catalogue named it
_MAX_GRAM = 4  # the resolver's longest n-gram


def folder_catalogue(documents: Sequence[DocumentSightings], registered: EntitiesFile | None) -> Folded:
    """The entities of the folder whose current documents have these sightings."""
    return fold_entities(combine(documents), registered)


@dataclass
class CatalogueChange:
    """What entering a catalogue did: new entities, new aliases, and what it could not take back."""

    new_entities: list[str] = field(default_factory=list)  # entity ids, in catalogue order
    new_aliases: dict[str, list[str]] = field(default_factory=dict)  # entity id -> aliases added
    divergences: list[str] = field(default_factory=list)
    new_surfaces: list[str] = field(default_factory=list)  # normalised, for the reach
    new_initials: set[str] = field(default_factory=set)

    @property
    def grew(self) -> bool:
        """True when the resolver can now read something it could not before."""
        return bool(self.new_surfaces)


def _initials(name: str) -> str:
    return "".join(token[0] for token in normalize(name).split() if token)


def enter_catalogue(graph: ContextGraph, resolver: Resolver, entities: Sequence[EntitySpec]) -> CatalogueChange:
    """Register what ``entities`` adds to ``resolver`` and ``graph`` (see the module docstring)."""
    change = CatalogueChange()
    named: set[str] = set()
    for entity in entities:
        entity_id = slug(entity.name, "entity")
        named.add(entity_id)
        surfaces = [normalize(s) for s in (entity.name, *entity.aliases)]
        fresh = [s for s in dict.fromkeys(surfaces) if s and resolver.aliases.get(s) != entity_id]
        known = resolver.canonical.get(entity_id) == entity.name
        if known and not fresh and entity_id in graph:
            _keep_aliases(graph, entity_id, entity, change)
            continue
        try:
            resolver.register(entity_id, entity.name, entity.aliases)
        except IdentityError as exc:
            change.divergences.append(f"entity '{entity.name}' is not entered: {exc}")
            continue
        node = graph.nodes.get(entity_id)
        if node is None:
            attrs = {"canonical": entity.name, "aliases": list(entity.aliases), CATALOGUE_ATTR: True}
            graph.add_node("entity", entity.name, id=entity_id, attrs=attrs)  # type: ignore[arg-type]
            change.new_entities.append(entity_id)
            change.new_initials.add(_initials(entity.name))
        else:
            _merge_aliases(graph, entity_id, entity, change)
        change.new_surfaces.extend(fresh)
    for node in graph.nodes.values():
        if node.type == "entity" and node.attrs.get(CATALOGUE_ATTR) is True and node.id not in named:
            change.divergences.append(f"entity '{node.label}' is kept although the folder no longer names it")
    return change


def _aliases(graph: ContextGraph, entity_id: str) -> list[str]:
    held = graph.nodes[entity_id].attrs.get("aliases")
    return [a for a in held if isinstance(a, str)] if isinstance(held, list) else []


def _merge_aliases(graph: ContextGraph, entity_id: str, entity: EntitySpec, change: CatalogueChange) -> None:
    held = _aliases(graph, entity_id)
    added = [a for a in entity.aliases if a not in held]
    node = graph.nodes[entity_id]
    if added or node.attrs.get(CATALOGUE_ATTR) is not True:
        graph.add_node(
            "entity",
            node.label,
            id=entity_id,
            attrs={"aliases": [*held, *added], CATALOGUE_ATTR: True},
        )
    if added:
        change.new_aliases[entity_id] = added
    _keep_aliases(graph, entity_id, entity, change)


def _keep_aliases(graph: ContextGraph, entity_id: str, entity: EntitySpec, change: CatalogueChange) -> None:
    dropped = [a for a in _aliases(graph, entity_id) if a not in entity.aliases]
    if dropped:
        change.divergences.append(
            f"entity '{entity.name}' keeps the aliases {dropped}, which the folder no longer gives it"
        )


class Reach:
    """Which texts new surfaces could change the reading of (see the module docstring)."""

    def __init__(self, change: CatalogueChange) -> None:
        self.keys = {key for surface in change.new_surfaces for key in block_keys(surface)}
        self.squashed = {surface.replace(" ", "") for surface in change.new_surfaces}
        self.initials = {initials for initials in change.new_initials if initials}

    def touches(self, text: str) -> bool:
        """True when resolving ``text`` again could find something it did not before."""
        if self.initials:
            for word in words(text):
                if 2 <= len(word) <= 6 and word.isupper() and word.isalnum() and word.lower() in self.initials:
                    return True
        tokens = normalize(text).split()
        for start in range(len(tokens)):
            for size in range(1, min(_MAX_GRAM, len(tokens) - start) + 1):
                gram = " ".join(tokens[start : start + size])
                if gram.replace(" ", "") in self.squashed or not self.keys.isdisjoint(block_keys(gram)):
                    return True
        return False

"""The resolver file format ``contextmesh.resolver`` v2: a writer and a strict loader.

``docs/formats/resolver-v2.md`` specifies the format for an independent reader. In short: one JSON
object with ``schema``, ``version`` (2), ``threshold``, and the lists ``canonical`` (``[entity id,
name]`` pairs), ``aliases`` (``[normalised surface, entity id]`` pairs), ``blocks`` (``[key, [entity
ids]]`` pairs) and ``log`` (resolution records), each in insertion order. Object keys are sorted;
the file ends with a newline.

The resolver cannot be rebuilt from the graph: learned aliases exist only here, and blocks record
how each alias arrived (a registered name brings block keys, a learned alias brings none), so the
file persists blocks instead of deriving them. Only the reverse and squashed alias indexes are
derived; the loader rebuilds them by replaying the aliases, in order, through the resolver's own
:meth:`Resolver.add_alias` (via :meth:`Resolver.restore`).

Invariants of the loader (``tests/test_resolver_file.py`` pins each one):

1. Every field is required; ``null`` is accepted only where the writer writes it; values are
   type-checked, never coerced (a score of ``1`` is not the float ``1.0``); unknown fields and
   duplicate keys are refused; the original project's v1 is refused as such.
2. The tables agree with each other: no duplicate entity id, alias surface or block key; every
   entity id an alias, a block or a log record names is canonical; alias surfaces are stored
   normalised; each canonical name's normal form is an alias of its entity; a block holds an entity
   only under a key of one of that entity's own aliases, and lists it once.
3. Every log record has the shape :meth:`Resolver.resolve` gives it: ``normalized`` is the mention
   normalised; a resolved record names a canonical entity, carries that entity's canonical name as
   its label and no reason; a dropped one has method ``dropped``, no entity, no label, a reason and
   score ``0.0``; an ``alias`` hit names the entity the alias table holds for its surface.
4. With a graph given, every canonical entity is an ``entity`` node of that graph whose label is the
   canonical name (the name is scored against mentions, so a disagreement changes what resolves).
5. A refused file raises :class:`SnapshotError` (or :class:`CanonicalError` for text that is not
   strict JSON) with a path, and no resolver is returned.
6. ``dump_resolver(load_resolver(b)) == b`` for every file this module wrote (a longer log from
   an earlier writer is read, and restored to its most recent ``LOG_LIMIT`` records), and the restored
   resolver resolves every mention as the written one would; the writer checks its own output
   with the loader, so it never writes a file the loader would refuse.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.formats.records import check_header, exact_keys, expect_dict, expect_list
from contextmesh.knowledge.resolve import ResolutionRecord, Resolver, block_keys
from contextmesh.knowledge.text import normalize

__all__ = [
    "METHODS",
    "RESOLVER_SCHEMA",
    "RESOLVER_VERSION",
    "dump_resolver",
    "load_resolver",
    "resolver_from_dict",
    "resolver_to_dict",
]

RESOLVER_SCHEMA = "contextmesh.resolver"
RESOLVER_VERSION = 2
# How a record was decided: the five methods of ``Resolver.resolve`` in the order it tries them, and a miss.
METHODS = ("alias", "squashed", "acronym", "containment", "near_miss", "dropped")
_CERTAIN = frozenset({"alias", "squashed", "acronym", "containment"})  # always scored 1.0
_TOP_FIELDS = ("schema", "version", "threshold", "canonical", "aliases", "blocks", "log")
_RECORD_FIELDS = tuple(f.name for f in fields(ResolutionRecord))


def resolver_to_dict(resolver: Resolver) -> dict[str, Any]:
    """The resolver as plain data, every table in insertion order."""
    return {
        "schema": RESOLVER_SCHEMA,
        "version": RESOLVER_VERSION,
        "threshold": resolver.threshold,
        "canonical": [[entity_id, name] for entity_id, name in resolver.canonical.items()],
        "aliases": [[surface, entity_id] for surface, entity_id in resolver.aliases.items()],
        "blocks": [[key, list(members)] for key, members in resolver.blocks.items()],
        "log": [{name: getattr(record, name) for name in _RECORD_FIELDS} for record in resolver.log],
    }


def dump_resolver(resolver: Resolver) -> bytes:
    """The file bytes of a resolver; refuses (like the loader would) a resolver it could not restore."""
    document = resolver_to_dict(resolver)
    _read_document(document)  # every rule the loader applies, without building a second resolver
    return file_bytes(document)


def load_resolver(data: bytes, graph: ContextGraph | None = None) -> Resolver:
    """Parse and restore a resolver file; with ``graph``, also check it names that graph's entities."""
    return resolver_from_dict(loads(data), graph)


def resolver_from_dict(data: Any, graph: ContextGraph | None = None) -> Resolver:
    """Restore a resolver from plain data (see the module's invariants)."""
    threshold, canonical, aliases, blocks, log = _read_document(data)
    if graph is not None:
        _check_against_graph(canonical, graph)
    return Resolver.restore(threshold, canonical.items(), aliases.items(), blocks.items(), log)


def _read_document(
    data: Any,
) -> tuple[float, dict[str, str], dict[str, str], dict[str, list[str]], list[ResolutionRecord]]:
    """The document's tables, each checked by R5-R26 in order."""
    top = expect_dict(data, "$")
    check_header(top, RESOLVER_SCHEMA, RESOLVER_VERSION, original_versions=(1,))
    exact_keys(top, _TOP_FIELDS, "$")
    threshold = top["threshold"]
    if type(threshold) is not float or not 0.0 < threshold <= 1.0:
        raise SnapshotError(
            "threshold", _found(threshold), "the threshold is a float in (0, 1]; near misses scoring below it drop"
        )
    canonical = _read_canonical(top["canonical"])
    aliases = _read_aliases(top["aliases"], canonical)
    blocks = _read_blocks(top["blocks"], canonical, aliases)
    log = _read_log(top["log"], canonical, aliases)
    return threshold, canonical, aliases, blocks, log


# -- small checks ---------------------------------------------------------------------------------


def _found(value: Any) -> str:
    if value is None:
        return "null"
    return f"{type(value).__name__} {repr(value)[:60]}"


def _pair(value: Any, path: str, shape: str) -> list[Any]:
    items = expect_list(value, path)
    if len(items) != 2:
        raise SnapshotError(path, f"a list of {len(items)} items", f"each entry is a pair {shape}")
    return items


def _text(value: Any, path: str, *, non_empty: bool = False) -> str:
    if type(value) is not str:
        rule = "a non-empty string is required here" if non_empty else "a string is required here"
        raise SnapshotError(path, _found(value), rule)
    if non_empty and not value:
        raise SnapshotError(path, "an empty string", "a non-empty string is required here")
    return value


def _entity(value: Any, path: str, canonical: dict[str, str]) -> str:
    entity_id = _text(value, path, non_empty=True)
    if entity_id not in canonical:
        raise SnapshotError(path, repr(entity_id), "every entity id the resolver uses is listed in 'canonical'")
    return entity_id


# -- the tables -----------------------------------------------------------------------------------


def _read_canonical(raw: Any) -> dict[str, str]:
    canonical: dict[str, str] = {}
    first: dict[str, int] = {}
    for index, entry in enumerate(expect_list(raw, "canonical")):
        path = f"canonical[{index}]"
        raw_id, raw_name = _pair(entry, path, "[entity_id, name]")
        entity_id = _text(raw_id, f"{path}[0]", non_empty=True)
        name = _text(raw_name, f"{path}[1]")
        if entity_id in canonical:
            raise SnapshotError(
                f"{path}[0]", repr(entity_id), f"each entity is listed once (already at canonical[{first[entity_id]}])"
            )
        canonical[entity_id] = name
        first[entity_id] = index
    return canonical


def _read_aliases(raw: Any, canonical: dict[str, str]) -> dict[str, str]:
    aliases: dict[str, str] = {}
    first: dict[str, int] = {}
    for index, entry in enumerate(expect_list(raw, "aliases")):
        path = f"aliases[{index}]"
        raw_surface, raw_id = _pair(entry, path, "[normalized_surface, entity_id]")
        surface = _text(raw_surface, f"{path}[0]", non_empty=True)
        if normalize(surface) != surface:
            raise SnapshotError(
                f"{path}[0]",
                repr(surface),
                f"alias surfaces are stored normalised; this one normalises to {normalize(surface)!r}",
            )
        if surface in aliases:
            raise SnapshotError(
                f"{path}[0]",
                repr(surface),
                f"a surface form means one entity (already {aliases[surface]!r} at aliases[{first[surface]}])",
            )
        aliases[surface] = _entity(raw_id, f"{path}[1]", canonical)
        first[surface] = index
    for index, (entity_id, name) in enumerate(canonical.items()):
        normal = normalize(name)
        if normal and aliases.get(normal) != entity_id:
            found = "no alias" if normal not in aliases else f"an alias for {aliases[normal]!r}"
            raise SnapshotError(
                f"canonical[{index}][1]",
                f"{name!r}, whose normal form {normal!r} has {found}",
                "registering an entity makes its name's normal form an alias of that entity",
            )
    return aliases


def _read_blocks(raw: Any, canonical: dict[str, str], aliases: dict[str, str]) -> dict[str, list[str]]:
    own_keys: dict[str, set[str]] = {entity_id: set() for entity_id in canonical}
    for surface, entity_id in aliases.items():
        own_keys[entity_id].update(block_keys(surface))
    blocks: dict[str, list[str]] = {}
    first: dict[str, int] = {}
    for index, entry in enumerate(expect_list(raw, "blocks")):
        path = f"blocks[{index}]"
        raw_key, raw_members = _pair(entry, path, "[key, [entity_id, ...]]")
        key = _text(raw_key, f"{path}[0]", non_empty=True)
        if key in blocks:
            raise SnapshotError(
                f"{path}[0]", repr(key), f"each block key is listed once (already at blocks[{first[key]}])"
            )
        members = expect_list(raw_members, f"{path}[1]")
        if not members:
            raise SnapshotError(f"{path}[1]", "an empty list", "a block holds at least one entity")
        # A set beside the list: a block of a large graph holds thousands of entities, and a
        # membership test on the list made every dump quadratic in the size of its blocks.
        seen: dict[str, None] = {}
        for position, raw_member in enumerate(members):
            where = f"{path}[1][{position}]"
            entity_id = _entity(raw_member, where, canonical)
            if entity_id in seen:
                raise SnapshotError(where, repr(entity_id), f"a block lists each entity once (block {key!r})")
            if key not in own_keys[entity_id]:
                raise SnapshotError(
                    where,
                    f"{entity_id!r} under the key {key!r}",
                    "an entity is blocked only under keys of its own aliases (block_keys of a registered surface)",
                )
            seen[entity_id] = None
        blocks[key] = list(seen)
        first[key] = index
    return blocks


def _read_log(raw: Any, canonical: dict[str, str], aliases: dict[str, str]) -> list[ResolutionRecord]:
    return [_read_record(entry, f"log[{i}]", canonical, aliases) for i, entry in enumerate(expect_list(raw, "log"))]


def _read_record(raw: Any, path: str, canonical: dict[str, str], aliases: dict[str, str]) -> ResolutionRecord:
    record = expect_dict(raw, path)
    exact_keys(record, _RECORD_FIELDS, path)
    mention = _text(record["mention"], f"{path}.mention")
    normalized = _text(record["normalized"], f"{path}.normalized")
    entity_id = record["entity_id"]
    if entity_id is not None:
        entity_id = _text(entity_id, f"{path}.entity_id", non_empty=True)
    label = record["label"]
    if label is not None:
        label = _text(label, f"{path}.label")
    method = record["method"]
    if method not in METHODS:
        raise SnapshotError(f"{path}.method", _found(method), f"the method is one of {', '.join(METHODS)}")
    score = record["score"]
    if type(score) is not float or not 0.0 <= score <= 1.0:
        raise SnapshotError(f"{path}.score", _found(score), "the score is a float in [0, 1]")
    reason = record["reason"]
    if reason is not None:
        reason = _text(reason, f"{path}.reason")

    if normalize(mention) != normalized:
        raise SnapshotError(
            f"{path}.normalized", repr(normalized), f"the mention {mention!r} normalises to {normalize(mention)!r}"
        )
    if method == "dropped":
        if entity_id is not None:
            raise SnapshotError(f"{path}.entity_id", repr(entity_id), "a dropped record names no entity")
        if label is not None:
            raise SnapshotError(f"{path}.label", repr(label), "a dropped record carries no label")
        if not reason:
            raise SnapshotError(f"{path}.reason", _found(reason), "a dropped record says why, in a non-empty reason")
        if score != 0.0:
            raise SnapshotError(f"{path}.score", repr(score), "a dropped record scores 0.0")
        return ResolutionRecord(mention, normalized, None, None, method, score, reason)
    if entity_id is None:
        raise SnapshotError(
            f"{path}.entity_id", "null", f"a record resolved by {method!r} names its entity; a miss is 'dropped'"
        )
    if entity_id not in canonical:
        raise SnapshotError(
            f"{path}.entity_id", repr(entity_id), "every entity id the resolver uses is listed in 'canonical'"
        )
    if label is None:
        raise SnapshotError(
            f"{path}.label", "null", f"a resolved record carries its entity's label {canonical[entity_id]!r}"
        )
    if label != canonical[entity_id]:
        raise SnapshotError(
            f"{path}.label",
            repr(label),
            f"a resolved record carries its entity's canonical name: {entity_id!r} is {canonical[entity_id]!r}",
        )
    if reason is not None:
        raise SnapshotError(f"{path}.reason", repr(reason), "only a dropped record has a reason")
    if method in _CERTAIN and score != 1.0:
        raise SnapshotError(f"{path}.score", repr(score), f"a record resolved by {method!r} scores 1.0")
    if method == "near_miss" and score == 0.0:
        raise SnapshotError(f"{path}.score", repr(score), "a near miss that resolved scored above 0")
    if method == "alias" and aliases.get(normalized) != entity_id:
        held = "no entry" if normalized not in aliases else repr(aliases[normalized])
        raise SnapshotError(
            f"{path}.entity_id",
            f"{entity_id!r} by alias {normalized!r}, but the alias table holds {held} for it",
            "an alias hit names the entity the alias table maps its surface to",
        )
    return ResolutionRecord(mention, normalized, entity_id, label, method, score, None)


# -- against the graph ----------------------------------------------------------------------------


def _check_against_graph(canonical: dict[str, str], graph: ContextGraph) -> None:
    for index, (entity_id, name) in enumerate(canonical.items()):
        path = f"canonical[{index}]"
        node = graph.nodes.get(entity_id)
        if node is None:
            raise SnapshotError(
                f"{path}[0]", f"{entity_id!r}, which the graph has no node for", "every resolver entity is a graph node"
            )
        if node.type != "entity":
            raise SnapshotError(
                f"{path}[0]",
                f"{entity_id!r}, which the graph holds as a {node.type!r} node",
                "every resolver entity is an 'entity' node of the graph",
            )
        if node.label != name:
            raise SnapshotError(
                f"{path}[1]",
                f"{name!r} for {entity_id!r}, but the graph's node is labelled {node.label!r}",
                "the canonical name equals the graph's label: near-miss matching scores mentions against the "
                "name, so a resolver and graph that disagree would resolve differently while each file looks valid",
            )

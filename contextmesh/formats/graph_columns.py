"""The graph loader's fast pass: every node and edge rule of ``docs/formats/graph-v3.md`` checked
column by column over the parsed records, then the records built once, without re-validation.

A 500,000-edge file spent most of its load in per-record Python: a pydantic validation, then the
live write path checking the same values again, then an edge id recomputed from its slug. Here each
field of a list is taken out as one column and checked with C-level passes (``map``, ``set``, list
equality) — types, ranges, uniqueness, endpoints, legal pairs, and each edge id against the one
derived from its endpoints (the body derived once per source node, the SHA-1 tails in one pass) —
and the records are then constructed directly into the graph, adjacency appended in bulk.

The pass only *decides*: it returns ``False``, having stored nothing, at the first column that is
not exactly what the format allows, and the loader then runs the per-record pass of
:mod:`contextmesh.formats.graph_file`, which applies the same rules record by record in the page's
order and reports the first problem with its path. So the fast pass accepts a subset of what the
per-record pass accepts (exact JSON types only, no tuples or subclasses from a caller's Python
data), and builds the same graph for it.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Sequence
from itertools import compress, repeat
from typing import Any

from contextmesh.core.canonical import MAX_SAFE_INTEGER, text_hashes, unshared_copy
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import EDGE_ID, NODE_TAIL, edge_body, fold, long_body
from contextmesh.core.model import EdgeRecord, EdgeSchema, NodeRecord, NodeSchema, Provenance, construct_record
from contextmesh.core.vectors import checked_bytes

__all__ = ["INFINITY", "counts", "fast_edges", "fast_nodes", "only"]

_NODE_FIELDS = tuple(NodeSchema.model_fields)
_EDGE_FIELDS = tuple(EdgeSchema.model_fields)
_PROVENANCE_KEYS = frozenset(Provenance.model_fields)
INFINITY = float("inf")
_RECORD_FIELDS = frozenset(NodeSchema.model_fields)


def only(column: Sequence[Any], *kinds: type) -> bool:
    """Every value's exact type is one of ``kinds`` (``bool`` is not ``int`` here)."""
    return set(map(type, column)) <= set(kinds)


def counts(column: Sequence[Any], ceiling: int = MAX_SAFE_INTEGER) -> bool:
    """Every value an exact ``int`` in ``0..ceiling``."""
    return only(column, int) and (not column or (min(column) >= 0 and max(column) <= ceiling))


def _json_only(values: list[Any]) -> bool:
    """Plain JSON data as the strict schema takes it: lists (no tuples), string keys, exact types,
    finite floats, integers within ±(2**53 - 1)."""
    stack = list(values)
    pop, extend = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is dict:
            if not only(list(item), str):
                return False
            extend(item.values())
        elif kind is list:
            extend(item)
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                return False
        elif kind is not float or item - item != 0.0:
            return False
    return True


def _provenances(graph: ContextGraph, column: Sequence[Any], ids: dict[str, str]) -> list[Provenance | None] | None:
    """Each provenance checked (G13, G14, G18) and built, or ``None`` when any is not exactly right.

    A source id naming a node of the file takes that node's id string (``ids``: the file's id to it).
    """
    shared: dict[str, str] = {}  # one string object per extractor name
    out: list[Provenance | None] = []
    for value in column:
        if value is None:
            out.append(None)
            continue
        if type(value) is not dict or value.keys() != _PROVENANCE_KEYS:
            return None
        source_id, span, extractor, checks, recorded = (
            value["source_id"],
            value["span"],
            value["extractor"],
            value["checks"],
            value["recorded_at_build"],
        )
        if type(source_id) is not str or not source_id or type(extractor) is not str:
            return None
        if span is not None and not (type(span) is list and len(span) == 2 and counts(span) and span[0] <= span[1]):
            return None
        if type(checks) is not list or not only(checks, str) or len(set(checks)) != len(checks):
            return None
        if type(recorded) is not int or not 0 <= recorded <= graph.build:
            return None
        out.append(
            construct_record(
                Provenance,
                source_id=ids.get(source_id, source_id),
                span=None if span is None else (span[0] + 0, span[1] + 0),  # not the parsed file's ints
                extractor=shared.setdefault(extractor, extractor),
                checks=tuple(checks),
                recorded_at_build=recorded,
            )
        )
    return out


def _must_carry(
    graph: ContextGraph,
    types: Sequence[str],
    attrs: Sequence[dict[str, Any]],
    provenance: Sequence[Any],
    embeddings: Sequence[Any],
) -> bool:
    """G20 for every node, as the live write checks it (an assumption's provenance and a decision's
    embedding are not what its write is given, so they satisfy nothing)."""
    needs = {}
    for node_type, required in graph.ontology.must_carry.items():
        names = tuple(n for n in required if n not in _RECORD_FIELDS)
        needs[node_type] = (
            names,
            "provenance" in required,
            "embedding" in required,
        )
    for node_type, node_attrs, prov, emb in zip(types, attrs, provenance, embeddings, strict=True):
        names, wants_provenance, wants_embedding = needs[node_type]
        if wants_provenance and (prov is None or node_type == "assumption"):
            return False
        if wants_embedding and (emb is None or node_type == "decision"):
            return False
        for name in names:
            if name not in node_attrs:
                return False
    return True


def _columns(raw: list[Any], fields: tuple[str, ...]) -> tuple[tuple[Any, ...], ...] | None:
    """The records' fields as columns, in ``fields`` order, when every record is a plain ``dict``
    with exactly those keys (G11/G12, G37/G38); else ``None``."""
    if not only(raw, dict) or not all(map(operator.eq, map(len, raw), repeat(len(fields)))):
        return None
    try:
        rows = list(map(operator.itemgetter(*fields), raw))  # a missing key raises; the count rules out others
    except KeyError:
        return None
    return tuple(zip(*rows, strict=True)) if rows else tuple(() for _ in fields)


def fast_nodes(graph: ContextGraph, raw: list[Any]) -> bool:
    """Check and store every node (G11-G20), or store nothing and return ``False``."""
    columns = _columns(raw, _NODE_FIELDS)
    if columns is None:
        return False
    ids, types, labels, attrs, provenance, texts, builds, walks, pruned, invalidated = columns
    if not (only(ids, str) and all(ids) and len(set(ids)) == len(ids) and not set(ids) & graph.nodes.keys()):
        return False
    if not (only(types, str) and set(types) <= graph.ontology.must_carry.keys() and only(labels, str)):
        return False
    if not (only(attrs, dict) and _json_only(list(attrs))):
        return False
    if not (counts(builds, graph.build) and counts(walks) and only(pruned, bool) and only(invalidated, bool)):
        return False
    if not only(texts, str, type(None)):
        return False
    vectors = [None if text is None else checked_bytes(text) for text in texts]
    if vectors.count(None) != texts.count(None):
        return False
    if not _must_carry(graph, types, attrs, provenance, texts):
        return False
    kept = unshared_copy([ids, labels, attrs])  # see unshared_copy: the parsed file's memory goes back
    if kept is None:
        return False
    checked = _provenances(graph, provenance, dict(zip(ids, kept[0], strict=True)))
    if checked is None:
        return False
    start = graph._next_seq
    records = map(
        NodeRecord,
        kept[0],
        map(graph._names.__getitem__, types),
        kept[1],
        kept[2],
        checked,
        graph._vectors.add_many(vectors),
        builds,
        walks,
        pruned,
        invalidated,
        repeat(graph._vectors),
        range(start, start + len(ids)),
    )
    graph.nodes.update(zip(kept[0], records, strict=True))
    graph._next_seq = start + len(ids)
    return True


# What ``_endpoints`` keeps per node, so the passes over 500,000 edges read one tuple per endpoint
# and never the node records scattered through memory.
_RECORD, _FOLD, _PREFIX, _TAIL, _TYPE, _ID, _OUT, _IN = range(8)


def _endpoints(
    graph: ContextGraph, ids: tuple[str, ...], srcs: tuple[str, ...], types: list[str], dsts: tuple[str, ...]
) -> tuple[list[str], list[Any], list[Any]] | None:
    """G43's endpoint checks and G44 for every edge: each endpoint names a node, each id is the one
    derived from its source, type and target. Returns the derived ids (equal to the file's, and
    not the parsed file's objects) and each edge's source and target parts (see ``_RECORD``...).

    Every part of an edge id is a function of one node id or one type (ADR 0021), so each node id
    is folded and hashed once (one SHA-1 pass over the node ids); an edge's id is then its
    source's prefix (``edge:<body>-<S>``, when the source alone decides the body), the type's tail
    and the target's tail joined: no hash and no call of ours per edge.
    """
    nodes = list(graph.nodes.values())
    node_ids = [node.id for node in nodes]
    folds = list(map(fold, node_ids))
    tails = text_hashes(node_ids, NODE_TAIL)
    folded: dict[str, tuple[Any, ...]] = {}
    for node, node_fold, tail in zip(nodes, folds, tails, strict=True):
        body = long_body(node_fold)
        prefix = None if body is None else EDGE_ID.format(body, tail, "", "")
        folded[node.id] = (node, node_fold, prefix, tail, node.type, node.id, node._out, node._in)
    try:  # an endpoint that names no node looks up None, and taking a part of None raises
        sources: list[Any] = list(map(folded.get, srcs))
        targets: list[Any] = list(map(folded.get, dsts))
        prefixes = list(map(operator.itemgetter(_PREFIX), sources))
        dst_tails = list(map(operator.itemgetter(_TAIL), targets))
    except TypeError:  # also an unhashable endpoint (a list where an id belongs)
        return None
    if any(map(operator.is_, sources, targets)):  # G43: no self edge
        return None
    if None in prefixes:  # short sources: the type and target decide the rest of the body
        for index in [i for i, prefix in enumerate(prefixes) if prefix is None]:
            source, type_fold = sources[index], graph._ids.type_parts[types[index]][0]
            body = edge_body(source[_FOLD], type_fold, targets[index][_FOLD])
            prefixes[index] = EDGE_ID.format(body, source[_TAIL], "", "")
    type_tails = {t: part[1] for t, part in graph._ids.type_parts.items()}
    derived = list(map("{}{}{}".format, prefixes, map(type_tails.__getitem__, types), dst_tails))
    if list(ids) != derived:
        return None
    return derived, sources, targets


def fast_edges(graph: ContextGraph, raw: list[Any]) -> bool:
    """Check and store every edge (G37-G47), or store nothing and return ``False``."""
    columns = _columns(raw, _EDGE_FIELDS)
    if columns is None:
        return False
    ids, srcs, dsts, raw_types, evidence, weights, builds, bound, traversals, invalidated = columns
    # Ids, endpoints and types need no type pass of their own: an id is compared with a derived
    # string, an endpoint and a type are looked up, and nothing but the right string matches.
    # Each type becomes the graph's own string at once, so no later pass reads the file's.
    try:
        types: list[Any] = list(map(graph._names.get, raw_types))
    except TypeError:  # an unhashable type
        return False
    if not set(types) <= graph._legal.keys():  # an unknown type looked up None
        return False
    if not (only(weights, float) and all(map(operator.lt, repeat(0.0), weights))):
        return False
    if not all(map(operator.gt, repeat(INFINITY), weights)):
        return False
    if not (counts(builds, graph.build) and counts(traversals)):
        return False
    if not (only(invalidated, bool) and only(evidence, list) and only(bound, str, type(None))):
        return False
    endpoints = _endpoints(graph, ids, srcs, types, dsts)
    if endpoints is None:
        return False
    derived, sources, targets = endpoints
    legal = {(t, a, b) for t, pairs in graph._legal.items() for a, b in pairs}
    node_type = operator.itemgetter(_TYPE)
    if not all(map(legal.__contains__, zip(types, map(node_type, sources), map(node_type, targets), strict=True))):
        return False
    evidence_ids = _evidence(graph, evidence)
    if evidence_ids is None or not set(bound) - {None} <= graph.assumptions.keys():
        return False
    return _store(graph, (derived, srcs, dsts, types, *columns[4:]), sources, targets, evidence_ids)


def _evidence(graph: ContextGraph, column: Sequence[list[Any]]) -> list[tuple[str, ...]] | None:
    """G45, G46: each list names nodes, each once; as tuples of the nodes' own id strings."""
    out: list[tuple[str, ...]] = [()] * len(column)
    for index in compress(range(len(column)), column):  # only the lists that name something
        ids = column[index]
        if not only(ids, str) or len(set(ids)) != len(ids):
            return None
        named = [graph.nodes.get(i) for i in ids]
        if any(node is None for node in named):
            return None
        out[index] = tuple(node.id for node in named if node is not None)
    return out


def _store(
    graph: ContextGraph,
    columns: tuple[Sequence[Any], ...],
    sources: list[Any],
    targets: list[Any],
    evidence_ids: list[tuple[str, ...]],
) -> bool:
    """Build every checked edge's record in one pass and store them, adjacency in bulk; ``False``,
    storing nothing, when two edges derive one id (G40: a repeated triple derives one too)."""
    ids, _, _, types, _, weights, builds, bound, traversals, invalidated = columns
    assumption_of: dict[str | None, str | None] = {aid: graph.nodes[aid].id for aid in graph.assumptions}
    assumption_of[None] = None
    node_id = operator.itemgetter(_ID)
    start = graph._next_seq
    # Numbers as new objects (``x + 0``): the parsed file's own would pin its memory once it is freed.
    records = list(
        map(
            EdgeRecord,
            ids,
            map(node_id, sources),  # the nodes' own id strings, not the file's copies
            map(node_id, targets),
            types,
            evidence_ids,
            map(operator.add, weights, repeat(0.0)),
            map(operator.add, builds, repeat(0)),
            map(assumption_of.__getitem__, bound),
            map(operator.add, traversals, repeat(0)),
            invalidated,
            range(start, start + len(ids)),
        )
    )
    by_id = dict(zip(ids, records, strict=True))
    if len(by_id) != len(records) or not by_id.keys().isdisjoint(graph.edges):
        return False
    graph.edges.update(by_id)
    graph._next_seq = start + len(records)
    deque(map(list.append, map(operator.itemgetter(_OUT), sources), records), maxlen=0)
    deque(map(list.append, map(operator.itemgetter(_IN), targets), records), maxlen=0)
    for edge_id, assumption_id in compress(zip(ids, bound, strict=True), map(operator.is_not, bound, repeat(None))):
        graph._bound.setdefault(assumption_of[assumption_id], []).append(edge_id)  # type: ignore[arg-type]
    return True

"""Many new edges written at once, through the same rules as ``ContextGraph.add_edge``.

A generator or an importer that adds millions of edges spent most of its time in the per-edge
Python of the write path: five calls an edge, each checking one thing. :func:`add_new_edges`
checks the same rules over whole columns (known endpoints, no self edge, a legal pair, a finite
positive weight, evidence ids naming nodes, no digest-covered edge out of an explicit decision,
no id taken) and stores the edges in the order given, exactly as that many ``add_edge`` calls
would have. When any edge breaks a rule, repeats another or is already stored, nothing has been
stored yet and the batch is written edge by edge through ``add_edge``, which merges a repeat and
raises, naming the rule, at the first edge that breaks one — so the outcome is always that of the
calls one by one.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Sequence
from itertools import compress, repeat
from typing import Any

from contextmesh.core.edge_ids import node_part
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import EDGE_ID, edge_body
from contextmesh.core.model import EdgeRecord, NodeRecord

__all__ = ["add_new_edges"]

_INFINITY = float("inf")


def add_new_edges(
    graph: ContextGraph,
    srcs: Sequence[str],
    types: Sequence[str],
    dsts: Sequence[str],
    evidence: Sequence[tuple[str, ...]],
    weights: Sequence[float],
) -> None:
    """``graph.add_edge(srcs[i], types[i], dsts[i], evidence_ids=evidence[i], weight=weights[i])`` for
    every ``i`` in order, checked and stored column by column when the whole batch is new and legal."""
    records = _checked_records(graph, srcs, types, dsts, evidence, weights)
    if records is None:
        for src, edge_type, dst, ids, weight in zip(srcs, types, dsts, evidence, weights, strict=True):
            graph.add_edge(src, edge_type, dst, evidence_ids=ids, weight=weight)
        return
    edges, sources, targets = records
    graph.edges.update(zip(map(operator.attrgetter("id"), edges), edges, strict=True))
    graph._next_seq += len(edges)
    # A loaded graph's nodes gather their loaded edges first (ADR 0038); a built one's lists are there.
    gathered = graph.edges.has_columns
    outs = map(graph._outs, sources) if gathered else map(operator.attrgetter("_out"), sources)
    ins = map(graph._ins, targets) if gathered else map(operator.attrgetter("_in"), targets)
    deque(map(list.append, outs, edges), maxlen=0)
    deque(map(list.append, ins, edges), maxlen=0)


def _checked_records(
    graph: ContextGraph,
    srcs: Sequence[str],
    types: Sequence[str],
    dsts: Sequence[str],
    evidence: Sequence[tuple[str, ...]],
    weights: Sequence[float],
) -> tuple[list[EdgeRecord], list[NodeRecord], list[NodeRecord]] | None:
    """The batch's records, or ``None`` when the write must go edge by edge (see the module)."""
    if graph._changes is not None or graph._nx is not None or not len(srcs) == len(types) == len(dsts):
        return None  # a tracked graph journals each write; a built nx view mirrors each
    nodes = graph.nodes
    sources: list[NodeRecord | None] = list(map(nodes.get, srcs))
    targets: list[NodeRecord | None] = list(map(nodes.get, dsts))
    # ``all``, not ``None in``: a record's own ``__eq__`` is Python, called once an element.
    if not (all(sources) and all(targets)) or any(map(operator.is_, sources, targets)):
        return None
    kinds = operator.attrgetter("type")
    legal = {(t, a, b) for t, pairs in graph._legal.items() for a, b in pairs}
    if not all(map(legal.__contains__, zip(types, map(kinds, sources), map(kinds, targets), strict=True))):
        return None
    if set(map(type, weights)) - {float} or not all(map(operator.lt, repeat(0.0), weights)):
        return None
    if not all(map(operator.gt, repeat(_INFINITY), weights)) or len(weights) != len(srcs):
        return None
    decisions = compress(sources, map(operator.eq, map(kinds, sources), repeat("decision")))
    if any(d.attrs.get("decision_identity") == "explicit" for d in decisions):  # type: ignore[union-attr]
        return None  # its digest-covered edges are frozen: add_edge says which
    if not all(nodes.keys() >= set(ids) and len(set(ids)) == len(ids) for ids in evidence if ids):
        return None
    ids = _ids(graph, sources, types, targets)  # type: ignore[arg-type]
    if len(set(ids)) != len(ids) or not graph.edges.keys().isdisjoint(ids):
        return None  # a repeat merges, a taken id is refused: add_edge does either
    names = graph._names
    node_id = operator.attrgetter("id")
    start = graph._next_seq
    edges = list(
        map(
            EdgeRecord,
            ids,
            map(node_id, sources),
            map(node_id, targets),
            map(names.__getitem__, types),
            [tuple(map(operator.attrgetter("id"), map(nodes.__getitem__, e))) if e else () for e in evidence],
            weights,
            repeat(graph.build),
            repeat(None),
            repeat(0),
            repeat(False),
            range(start, start + len(ids)),
        )
    )
    return edges, sources, targets  # type: ignore[return-value]


def _ids(graph: ContextGraph, sources: list[NodeRecord], types: Sequence[str], targets: list[NodeRecord]) -> list[str]:
    """Each edge's id (``EdgeIds.of``): a long source's head, else the body its type and target reach."""
    type_parts = graph._ids.type_parts
    src_parts = _parts(sources)
    dst_parts = _parts(targets)
    heads: list[str | None] = list(map(operator.itemgetter(2), src_parts))
    for index in [i for i, head in enumerate(heads) if head is None]:
        src_fold, src_tail, _ = src_parts[index]
        body = edge_body(src_fold, type_parts[types[index]][0], dst_parts[index][0])
        heads[index] = EDGE_ID.format(body, src_tail, "", "")
    tails = map(operator.itemgetter(1), map(type_parts.__getitem__, types))
    return list(map(operator.add, map(operator.add, heads, tails), map(operator.itemgetter(1), dst_parts)))


def _parts(nodes: list[NodeRecord]) -> list[tuple[str, str, str | None]]:
    """Each node's ``node_part``: read from the record, computed (once) only where it is missing."""
    parts: list[Any] = list(map(operator.attrgetter("_part"), nodes))
    if None in parts:  # tuples and None: compared in C
        for index in [i for i, part in enumerate(parts) if part is None]:
            parts[index] = node_part(nodes[index])
    return parts

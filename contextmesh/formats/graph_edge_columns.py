"""The loader's pass over a parted file's edge columns (ADR 0034): every edge rule of
``docs/formats/graph-v3.md`` checked column by column, then the checked columns handed to the
graph's edge table, which builds a record when it is first asked for (ADR 0038).

The columns were checked as they were parsed (G58-G60: ten arrays of one length, endpoints,
evidence and bound assumption as node indices within the node list), so an endpoint is a list
index, not a look-up of a parsed id string. Like :mod:`contextmesh.formats.graph_columns`, the pass
only decides: it returns ``False``, having stored nothing, at the first column that is not exactly
what the format allows, and the loader then runs the per-record pass over the records the columns
stand for, which names the first problem in the page's order.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from itertools import compress, repeat
from typing import Any

from contextmesh.core.canonical import text_hashes
from contextmesh.core.edge_table import EdgeColumnsKept
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import EDGE_ID, NODE_TAIL, TYPE_TAIL, fold, long_body
from contextmesh.core.model import EdgeSchema
from contextmesh.formats.graph_columns import INFINITY, counts, only
from contextmesh.formats.graph_edge_parts import EdgeColumns

__all__ = ["fast_edge_columns"]

_EDGE_FIELDS = tuple(EdgeSchema.model_fields)
_BODY_LIMIT = 40  # ids._BODY_LIMIT: an edge id's readable body is cut to 40 characters


def fast_edge_columns(graph: ContextGraph, columns: EdgeColumns) -> bool:
    """Check and store every edge of a parted file's edge columns (G37-G47), or store nothing and
    return ``False``. Endpoints are node indices, already checked to lie within the node list (G59)."""
    nodes = list(graph.nodes.values())  # in file order: the graph was empty, and nodes came first
    if len(nodes) != columns.nodes:
        return False
    ids, srcs, dsts, raw_types, evidence, weights, builds, bound, traversals, invalidated = map(
        columns.column, _EDGE_FIELDS
    )
    try:
        types: list[Any] = list(map(graph._names.get, raw_types))
    except TypeError:  # an unhashable type
        return False
    if not set(types) <= graph._legal.keys():
        return False
    if not (only(weights, float) and all(map(operator.lt, repeat(0.0), weights))):
        return False
    if not all(map(operator.gt, repeat(INFINITY), weights)):
        return False
    if not (counts(builds, graph.build) and counts(traversals) and only(invalidated, bool) and only(ids, str)):
        return False
    if not _legal_pairs(graph, nodes, srcs, types, dsts):
        return False
    node_ids = [node.id for node in nodes]
    tails = _ids_derived(graph, ids, node_ids, srcs, types, dsts)
    if tails is None or not _unique(graph, ids, srcs, types, dsts, tails):
        return False
    evidence_ids = _indexed_evidence(node_ids, evidence)
    assumption_of: dict[int | None, str | None] = {None: None}
    assumption_of.update((i, node_ids[i]) for i in set(bound) - {None})
    if evidence_ids is None or not set(assumption_of.values()) - {None} <= graph.assumptions.keys():
        return False
    if graph.edges:  # the columns are adopted only by an empty table
        return False
    assumptions = None if len(assumption_of) == 1 else list(map(assumption_of.__getitem__, bound))
    kept = EdgeColumnsKept(
        node_ids, ids, srcs, dsts, types, evidence_ids, weights, builds, assumptions, traversals, invalidated,
        graph._next_seq,
    )  # fmt: skip
    graph.edges.adopt(kept)  # records are built when asked for (ADR 0038)
    graph._next_seq += len(ids)
    for node in nodes:  # each node gathers its loaded edges from the table when first asked
        node._out = node._in = None
    if assumptions is not None:
        for row in compress(range(len(ids)), map(operator.is_not, bound, repeat(None))):
            graph._bound.setdefault(assumptions[row], []).append(ids[row])  # type: ignore[arg-type]
    return True


def _legal_pairs(graph: ContextGraph, nodes: list[Any], srcs: list[int], types: list[str], dsts: list[int]) -> bool:
    """G43 (no self edge: two equal indices) and G42 (a pair the type allows) for every edge, each
    edge's type and endpoint types one integer, so no tuple is built and no record read an edge."""
    if any(map(operator.eq, srcs, dsts)):
        return False
    kinds = {t: i for i, t in enumerate(dict.fromkeys([*graph.ontology.node_types, *(n.type for n in nodes)]))}
    width = len(kinds)
    number = {edge_type: index for index, edge_type in enumerate(graph._legal)}
    allowed = {(number[t] * width + kinds[a]) * width + kinds[b] for t, pairs in graph._legal.items() for a, b in pairs}
    node_kind = list(map(kinds.__getitem__, map(operator.attrgetter("type"), nodes)))
    typed = map(operator.mul, map(number.__getitem__, types), repeat(width))
    with_source = map(operator.mul, map(operator.add, typed, map(node_kind.__getitem__, srcs)), repeat(width))
    codes = map(operator.add, with_source, map(node_kind.__getitem__, dsts))
    return all(map(allowed.__contains__, codes))


def _unique(
    graph: ContextGraph, ids: list[str], srcs: list[int], types: list[str], dsts: list[int], tails: list[str]
) -> bool:
    """G40 without hashing 500,000 id strings: every id is the one its triple derives (G44) and ends
    in its source's, type's and target's fixed-length tails, so when no two nodes share a tail, ids
    are unique exactly when triples are, and a triple is one integer (ADR 0038)."""
    if len(set(tails)) != len(tails):
        return len(set(ids)) == len(ids)
    kinds = {edge_type: index for index, edge_type in enumerate(graph._ids.type_parts)}
    pairs = map(operator.add, map(operator.mul, srcs, repeat(len(tails))), dsts)
    keys = map(operator.add, map(operator.mul, pairs, repeat(len(kinds))), map(kinds.__getitem__, types))
    return len(set(keys)) == len(ids)


def _ids_derived(
    graph: ContextGraph,
    ids: list[str],
    node_ids: list[str],
    srcs: list[int],
    types: list[str],
    dsts: list[int],
) -> list[str] | None:
    """G44 for every edge: its id is ``<source's head><type's tail><target's tail>`` (ADR 0021),
    tested with ``startswith``/``endswith`` and lengths, so no id is built to be compared. Returns
    each node's tail (``None`` when an id is not the derived one)."""
    folds = list(map(fold, node_ids))
    tails = text_hashes(node_ids, NODE_TAIL)
    heads = [
        None if body is None else EDGE_ID.format(body, tail, "", "")
        for body, tail in zip(map(long_body, folds), tails, strict=True)
    ]
    src_heads: list[Any] = list(map(heads.__getitem__, srcs))
    short = [i for i, head in enumerate(src_heads) if head is None]  # the type and target reach the body
    short_heads = _short_heads(graph, folds, tails, [(srcs[i], types[i], dsts[i]) for i in short])
    for index, head in zip(short, short_heads, strict=True):
        src_heads[index] = head
    type_tails = {t: part[1] for t, part in graph._ids.type_parts.items()}
    lengths = map(operator.add, map(len, src_heads), repeat(TYPE_TAIL + NODE_TAIL))
    derived = (
        all(map(operator.eq, map(len, ids), lengths))
        and all(map(str.startswith, ids, src_heads))
        and all(map(str.startswith, ids, map(type_tails.__getitem__, types), map(len, src_heads)))
        and all(map(str.endswith, ids, map(tails.__getitem__, dsts)))
    )
    return tails if derived else None


def _short_heads(
    graph: ContextGraph, folds: list[str], tails: list[str], triples: list[tuple[int, str, int]]
) -> list[str]:
    """``edge:<body>-<S>`` of edges whose source is too short to decide the body alone: ``ids.edge_body``
    over every such edge in C-level passes (the source's fold, the type's, the target's, joined and cut)."""
    if not triples:
        return []
    srcs, types, dsts = (list(column) for column in zip(*triples, strict=True))
    middles = {
        t: ("-" + part[0].strip("-") if part[0].strip("-") else "") + "-" for t, part in graph._ids.type_parts.items()
    }
    lefts = list(map(str.rstrip, map(folds.__getitem__, srcs), repeat("-")))
    rights = list(map(str.lstrip, map(folds.__getitem__, dsts), repeat("-")))
    joined = map(operator.add, map(operator.add, lefts, map(middles.__getitem__, types)), rights)
    cut: Iterator[Any] = map(operator.getitem, map(str.lstrip, joined, repeat("-")), repeat(slice(0, _BODY_LIMIT)))
    bodies = [body or "x" for body in map(str.rstrip, cut, repeat("-"))]
    return list(map(EDGE_ID.format, bodies, map(tails.__getitem__, srcs), repeat(""), repeat("")))


def _indexed_evidence(node_ids: list[str], column: Sequence[list[int]]) -> list[tuple[str, ...]] | None:
    """G45: each list names each node once (indices checked by G60); as tuples of node id strings."""
    out: list[tuple[str, ...]] = [()] * len(column)
    for index in compress(range(len(column)), column):
        named = column[index]
        if len(set(named)) != len(named):
            return None
        out[index] = tuple(map(node_ids.__getitem__, named))
    return out

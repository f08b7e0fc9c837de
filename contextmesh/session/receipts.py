"""A disproof receipt checked against the session's graph: every id it cites must exist there.

The run ledger's own format checks only that a receipt is an object without floats; its content is
covered by the entry's digest, so it cannot change unseen, but a digest says nothing about whether
the ids it names exist. A session holds the graph the receipt was computed against (or a later one:
nodes and edges are never deleted, so every id cited then still exists), so :func:`check_receipt`
refuses a receipt that cites a node, an edge or an assumption the graph does not hold, or whose
preserved list disagrees with its count or digest. The rules, in the order they are checked, are
``docs/formats/session-v4.md`` §8.3 (rules S31-S40).

Not checked: ``task``, ``auditor``, ``reason``, ``blast_radius`` and ``ground.statement`` cite no
graph id. Beyond :data:`~contextmesh.belief.invalidation.PRESERVED_LIST_LIMIT` ids the receipt carries
only the count and digest of its preserved list; the ids themselves are not in the file and cannot
be recovered from a later graph, so only the digest's form is checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from contextmesh.belief.invalidation import PRESERVED_LIST_LIMIT
from contextmesh.core.canonical import digest
from contextmesh.core.errors import SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.formats.graph_upgrade import EdgesAnyVersion

__all__ = ["check_receipt"]

_HEX = re.compile(r"^[0-9a-f]{64}$")
_MISSING = object()


def _field(receipt: dict[str, Any], name: str, path: str) -> Any:
    value = receipt.get(name, _MISSING)
    if value is _MISSING:
        raise SnapshotError(f"{path}.{name}", "nothing", f"a disproof receipt carries {name!r}")
    return value


def _found(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {repr(value)[:60]}"


def _assumption(value: Any, path: str, graph: ContextGraph, *, rejected: bool) -> None:
    if type(value) is not str or value not in graph.assumptions:
        raise SnapshotError(path, _found(value), "a receipt's assumption id names an assumption record of the graph")
    status = graph.assumptions[value].status
    if rejected and status != "rejected":
        raise SnapshotError(path, f"{value!r}, which the graph holds as {status!r}", "a disproved ground is rejected")


def _ids(value: Any, path: str, known: Mapping[str, Any], what: str) -> list[str]:
    if type(value) is not list:
        raise SnapshotError(path, _found(value), f"a list of {what} ids")
    for index, item in enumerate(value):
        if type(item) is not str or item not in known:
            raise SnapshotError(f"{path}[{index}]", _found(item), f"a receipt cites {what}s of the graph")
    return value


def _check_invalidated(value: Any, path: str, graph: ContextGraph) -> None:
    if type(value) is not list:
        raise SnapshotError(path, _found(value), "a list of {id, chain} objects, one per fallen node")
    for index, item in enumerate(value):
        where = f"{path}[{index}]"
        if type(item) is not dict:
            raise SnapshotError(where, _found(item), "an {id, chain} object")
        node_id = _field(item, "id", where)
        if type(node_id) is not str or node_id not in graph.nodes:
            raise SnapshotError(f"{where}.id", _found(node_id), "a receipt cites nodes of the graph")


def _check_preserved(receipt: dict[str, Any], path: str, graph: ContextGraph) -> None:
    count = _field(receipt, "preserved_count", path)
    if type(count) is not int or count < 0:
        raise SnapshotError(f"{path}.preserved_count", _found(count), "a count of at least 0")
    preserved = _field(receipt, "preserved", path)
    if preserved is None:
        if count <= PRESERVED_LIST_LIMIT:
            raise SnapshotError(
                f"{path}.preserved",
                f"null with preserved_count {count}",
                f"the preserved ids are listed when there are at most {PRESERVED_LIST_LIMIT}",
            )
    else:
        if type(preserved) is list and len(preserved) > PRESERVED_LIST_LIMIT:
            raise SnapshotError(
                f"{path}.preserved",
                f"a list of {len(preserved)} ids",
                f"beyond {PRESERVED_LIST_LIMIT} ids a receipt keeps only their count and digest (null here)",
            )
        ids = _ids(preserved, f"{path}.preserved", graph.nodes, "node")
        for index in range(1, len(ids)):
            if not ids[index - 1] < ids[index]:
                raise SnapshotError(
                    f"{path}.preserved[{index}]", repr(ids[index]), "preserved ids in code-point order, once each"
                )
        if len(ids) != count:
            raise SnapshotError(f"{path}.preserved_count", str(count), f"the preserved list holds {len(ids)} ids")
    recorded = _field(receipt, "preserved_digest", path)
    if type(recorded) is not str or not _HEX.match(recorded):
        raise SnapshotError(f"{path}.preserved_digest", _found(recorded), "64 lower-case hex digits")
    if preserved is not None and recorded != digest(preserved):
        raise SnapshotError(
            f"{path}.preserved_digest",
            repr(recorded),
            "the SHA-256 of the RFC 8785 bytes of the preserved list",
        )


def check_receipt(receipt: dict[str, Any], path: str, graph: ContextGraph) -> None:
    """Refuse a receipt (at ``path``, e.g. ``entries[10].receipt``) citing what ``graph`` lacks."""
    ground = _field(receipt, "ground", path)
    if type(ground) is not dict:
        raise SnapshotError(f"{path}.ground", _found(ground), "an {assumption_id, statement} object")
    _assumption(_field(ground, "assumption_id", f"{path}.ground"), f"{path}.ground.assumption_id", graph, rejected=True)
    evidence = _field(receipt, "evidence_id", path)
    node = graph.nodes.get(evidence) if type(evidence) is str else None
    if node is None or node.type != "evidence":
        raise SnapshotError(f"{path}.evidence_id", _found(evidence), "an evidence node of the graph")
    _check_invalidated(_field(receipt, "invalidated", path), f"{path}.invalidated", graph)
    # A receipt written before graph v3 names edges by their v2 ids; the ledger is never rewritten (ADR 0021).
    _ids(_field(receipt, "invalidated_edges", path), f"{path}.invalidated_edges", EdgesAnyVersion(graph), "edge")
    _check_preserved(receipt, path, graph)
    replacement = _field(receipt, "replacement_id", path)
    if replacement is not None:
        _assumption(replacement, f"{path}.replacement_id", graph, rejected=False)

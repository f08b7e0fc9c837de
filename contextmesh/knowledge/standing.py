"""What still stands: whether a live node may be an answer about the present, and the contradictions to note.

A node can be live (neither pruned nor invalidated) and still not be what holds now:

* **superseded** — a live node ``supersedes`` it over a live edge;
* **contradicted by live evidence** — a live ``evidence`` node ``contradicts`` it;
* **resting on a rejected assumption** — it ``depends_on`` an assumption whose record is rejected
  (a rejection invalidates its closure, so this catches what the closure did not reach: a node
  written after the rejection, or a graph loaded without its invalidations replayed).

:func:`fallen` says which, naming the node that makes it so; the walk never answers with such a
node unless the question asks across that very relation ("what did X replace?") — asking about
the past by date is ``--as-of``, whose projection leaves out what came later.
:func:`live_contradictions` lists the live claims and evidence that contradict a node or that it
contradicts, for the answer to mention.

Invariant: reads the graph only, in edge insertion order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextmesh.core.graph import ContextGraph

__all__ = ["fallen", "live_contradictions"]


def fallen(graph: ContextGraph, node_id: str) -> str | None:
    """Why a live node no longer holds (see the module docstring), or ``None`` when it stands."""
    for edge in graph.in_edges(node_id, ("supersedes",)):
        newer = graph.node(edge.src)
        if newer.live:
            return f"superseded by {newer.type} '{newer.label}'"
    for edge in graph.in_edges(node_id, ("contradicts",)):
        against = graph.node(edge.src)
        if against.live and against.type == "evidence":
            return f"contradicted by evidence '{against.label}'"
    for edge in graph.out_edges(node_id, ("depends_on",)):
        record = graph.assumptions.get(edge.dst)
        if record is not None and record.status == "rejected":
            return f"rests on the rejected assumption '{record.statement}'"
    return None


def live_contradictions(graph: ContextGraph, node_id: str) -> list[str]:
    """Labels of the live claims and evidence on either end of a live ``contradicts`` edge with the node."""
    found: list[str] = []
    for edge in graph.in_edges(node_id, ("contradicts",)):
        other = graph.node(edge.src)
        if other.live and other.type in {"claim", "evidence"}:
            found.append(f"contradicted by {other.type} '{other.label}'")
    for edge in graph.out_edges(node_id, ("contradicts",)):
        other = graph.node(edge.dst)
        if other.live and other.type in {"claim", "evidence"}:
            found.append(f"contradicts {other.type} '{other.label}'")
    return found

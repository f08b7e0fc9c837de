"""What still stands: whether a live node may be an answer about the present, and the contradictions to note.

A node can be live (neither pruned nor invalidated) and still not be what holds now:

* **superseded** — a live node ``supersedes`` it over a live edge;
* **contradicted by live evidence** — a live ``evidence`` node ``contradicts`` it;
* **resting on a rejected assumption** — it ``depends_on`` an assumption whose record is rejected
  (a rejection invalidates its closure, so this catches what the closure did not reach: a node
  written after the rejection, or a graph loaded without its invalidations replayed).

A claim that *supported* a decision resting on a since-rejected assumption has not fallen, but is
*in doubt* (:func:`doubted`): the ranking puts it after every confident standing answer, and an
answer from it carries the reason as a note.

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

__all__ = ["doubted", "fallen", "live_contradictions"]


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


def doubted(graph: ContextGraph, node_id: str) -> str | None:
    """Why a standing claim is in doubt: it supported a decision that rested on an assumption since rejected.

    The claim itself stands — a rejected assumption does not make every sentence offered for it
    false (a task may rest on a whole document) — but it was ground for what evidence disproved,
    so it yields to any confident standing answer and, when it still answers, says so
    (``docs/adr/0022-answers-and-rejected-assumptions.md``). A claim that also supports a live
    decision whose assumptions all stand (a repair that rests on it again) is not in doubt.
    """
    if graph.node(node_id).type != "claim":
        return None
    found: str | None = None
    for edge in graph.out_edges(node_id, ("supports",), live_only=False):
        decision = graph.node(edge.dst)
        if decision.type != "decision":
            continue
        rejected = _rejected_ground(graph, decision.id)
        if rejected is None:
            if decision.live:
                return None
            continue
        if found is None:
            found = f"it supported decision '{decision.label}', which rested on {rejected}"
    return found


def _rejected_ground(graph: ContextGraph, decision_id: str) -> str | None:
    """The first rejected assumption a decision depends on, with the evidence that rejected it."""
    for edge in graph.out_edges(decision_id, ("depends_on",), live_only=False):
        record = graph.assumptions.get(edge.dst)
        if record is None or record.status != "rejected":
            continue
        against = [
            graph.node(e.src).label
            for e in graph.in_edges(edge.dst, ("contradicts",), live_only=False)
            if graph.node(e.src).type == "evidence"
        ]
        by = f", rejected by evidence '{against[0]}'" if against else ", since rejected"
        return f"the assumption '{record.statement}'{by}"
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

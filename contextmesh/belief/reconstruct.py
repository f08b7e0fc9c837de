"""Walk back from a decision to the reasons it stood on, apart from what came later.

``reconstruct_decision`` follows a decision's grounds — the assumptions it depends on, the claims
it derives from (and their sources), the sources it cites, the decisions it needs — up to
``depth`` steps, and classes each reason by source time against the decision's own date: *stood
on* (dated on or before the decision, or undated), or *came later* (dated after it: it cannot have
been a reason). With ``as_of`` it reconstructs from the graph as it stood on that date.

Invariant: nothing is written; the walk only reads.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from contextmesh.belief.temporal import as_of_graph, date_of, node_dates
from contextmesh.core.errors import NotFoundError
from contextmesh.core.graph import ContextGraph

__all__ = ["Reason", "Reconstruction", "reconstruct_decision"]

_GROUNDS = ("depends_on", "derived_from", "cites")


@dataclass(frozen=True)
class Reason:
    """One node a decision stood on, how it was reached, and its date."""

    node_id: str
    node_type: str
    label: str
    via: str
    depth: int
    date: str | None
    live: bool

    def to_dict(self) -> dict[str, object]:
        """Plain data."""
        return {
            "node_id": self.node_id,
            "type": self.node_type,
            "label": self.label,
            "via": self.via,
            "depth": self.depth,
            "date": self.date,
            "live": self.live,
        }


@dataclass
class Reconstruction:
    """A decision's reasons, split by whether they existed when it was made."""

    decision_id: str
    title: str
    rationale: str
    date: str | None
    stood_on: list[Reason] = field(default_factory=list)
    came_later: list[Reason] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """Plain data."""
        return {
            "decision_id": self.decision_id,
            "title": self.title,
            "rationale": self.rationale,
            "date": self.date,
            "stood_on": [r.to_dict() for r in self.stood_on],
            "came_later": [r.to_dict() for r in self.came_later],
        }

    def of_type(self, node_type: str) -> list[Reason]:
        """The reasons it stood on of one node type."""
        return [r for r in self.stood_on if r.node_type == node_type]


def reconstruct_decision(
    graph: ContextGraph, decision_id: str, *, as_of: str | None = None, depth: int = 3
) -> Reconstruction:
    """The reasons ``decision_id`` stood on, breadth first up to ``depth`` steps."""
    if depth < 1:
        raise ValueError(f"depth is at least 1, not {depth}")
    if as_of is not None:
        graph, _ = as_of_graph(graph, date_of(as_of))
    node = graph.nodes.get(decision_id)
    if node is None or node.type != "decision":
        found = "nothing" if node is None else f"a {node.type}"
        raise NotFoundError(f"no decision '{decision_id}' in this graph (found {found})")
    dates = node_dates(graph)
    made = dates.get(decision_id)
    result = Reconstruction(
        decision_id, node.label, str(node.attrs.get("rationale", "")), None if made is None else made.isoformat()
    )
    seen = {decision_id}
    queue: deque[tuple[str, int]] = deque([(decision_id, 0)])
    while queue:
        current, level = queue.popleft()
        if level >= depth:
            continue
        for edge in graph.out_edges(current, _GROUNDS, live_only=False):
            if edge.dst in seen:
                continue
            seen.add(edge.dst)
            target = graph.node(edge.dst)
            day = dates.get(edge.dst)
            reason = Reason(
                edge.dst,
                target.type,
                target.label,
                edge.type,
                level + 1,
                None if day is None else day.isoformat(),
                target.live,
            )
            later = made is not None and day is not None and day > made
            (result.came_later if later else result.stood_on).append(reason)
            queue.append((edge.dst, level + 1))
    return result

"""The plan drawn as a plan: its tasks' nodes pinned in a band along the graph panel's foot.

A session's plan writes a decision node per task attempt (``attrs["plan"]``, ``attrs["task"]``)
grounded on an assumption node (``depends_on``). Laid out by the force layout with the rest of the
graph, those few nodes were pushed against the panel's edge in a row; here they get a band of
their own instead, one column per plan layer (the execution panel's layers, left to right), one
slot per task holding its ground assumptions above its decisions (oldest attempt first) and the
task's name below. The rest of the graph is laid out above the band.

Invariants (``tests/dashboard``):

1. Pinned marks keep :data:`MARK_GAP` units between centres (no two circles overlap at the largest
   radius the page draws) and lie inside the box; a label is cut to its slot's width.
2. A plan whose band would break invariant 1 (too many layers or tasks side by side) gets no band:
   its nodes are laid out with the rest, as before. A task whose attempts do not all fit keeps its
   newest ones pinned.
3. Pure function of the graph and plan (lists in declaration and insertion order, ``+ - * /``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contextmesh.core.graph import ContextGraph
from contextmesh.dashboard.marks import HEIGHT, MARGIN, WIDTH

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = ["BAND_GAP", "BAND_SHARE", "MARK_GAP", "PlanBand", "band_for"]

BAND_SHARE = 0.36  # of the box's height, at its foot
BAND_GAP = 12.0  # between the band's top and the lowest mark laid out above it
MARK_GAP = 22.0  # between pinned centres: two marks of the largest radius (9) and a little air
# A task's slot, top to bottom: its grounds, its newest decision, its older attempts, its name.
_ROWS = (16.0, 42.0, 66.0)
_LABEL_FOOT = 88.0
_MIN_SLOT_HEIGHT = 96.0
_CHAR_WIDTH = 7.2  # a 12-unit monospace label's advance per character
_LABEL_SIZE = 12


@dataclass
class PlanBand:
    """Where the plan's nodes are pinned, the band's top edge, and the task labels to draw."""

    plan: str
    top: float
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    tasks: dict[str, str] = field(default_factory=dict)  # pinned node id -> its task
    labels: list[dict[str, Any]] = field(default_factory=list)

    @property
    def free_height(self) -> float:
        """How much of the box, from its top, the rest of the graph is laid out in."""
        return self.top - BAND_GAP

    def to_dict(self) -> dict[str, Any]:
        """The band as the payload carries it (positions travel on the nodes themselves)."""
        return {"plan": self.plan, "top": round(self.top), "label_size": _LABEL_SIZE, "labels": self.labels}


def _attempt(graph: ContextGraph, node_id: str) -> tuple[int, int]:
    attempt = (graph.nodes[node_id].attrs or {}).get("attempt")
    return (attempt if isinstance(attempt, int) else 0, graph.seq(node_id))


def _task_nodes(graph: ContextGraph, runner: Plan) -> dict[str, tuple[list[str], list[str]]]:
    """Per task, its drawable decision nodes (oldest attempt first) and the assumptions they rest on."""
    found: dict[str, tuple[list[str], list[str]]] = {name: ([], []) for name in runner.tasks}
    for node in graph:
        attrs = node.attrs or {}
        task = attrs.get("task")
        ours = node.type == "decision" and not node.pruned and attrs.get("plan") == runner.name
        if ours and isinstance(task, str) and task in found:
            found[task][0].append(node.id)
    claimed: set[str] = set()  # an assumption two tasks share is drawn in the first one's slot
    for name, (decisions, grounds) in found.items():
        decisions.sort(key=lambda node_id: _attempt(graph, node_id))
        wanted = [e.dst for d in decisions for e in graph.out_edges(d, ("depends_on",), live_only=False)]
        wanted.append(runner.tasks[name].assumption_id)
        for node_id in wanted:
            ground = graph.nodes.get(node_id)
            if ground is not None and ground.type == "assumption" and not ground.pruned and node_id not in claimed:
                claimed.add(node_id)
                grounds.append(node_id)
    return found


def _row(ids: list[str], x0: float, width: float, y: float) -> dict[str, tuple[int, int]]:
    fits = max(0, int(width / MARK_GAP) - 1)
    kept = ids[len(ids) - fits :] if fits else []  # the newest, when not all fit
    step = width / (len(kept) + 1)
    return {node_id: (round(x0 + step * (i + 1)), round(y)) for i, node_id in enumerate(kept)}


def _label(name: str, width: float) -> str:
    room = int((width - 4) / _CHAR_WIDTH)
    return name if len(name) <= room else name[: max(room - 1, 1)] + "…"


def band_for(graph: ContextGraph, runner: Plan, layers: list[list[str]]) -> PlanBand | None:
    """The band for ``runner``'s nodes in ``graph`` (its tasks in ``layers``), or None when there is
    none to draw (the plan stamps another graph, or has run nothing here) or it does not fit."""
    if runner.graph is not graph or not layers:
        return None
    nodes = _task_nodes(graph, runner)
    if not any(decisions or grounds for decisions, grounds in nodes.values()):
        return None
    band_height = HEIGHT * BAND_SHARE
    top = HEIGHT - MARGIN - band_height
    rows_fit = max(1, int(band_height / _MIN_SLOT_HEIGHT))
    column = (WIDTH - 2 * MARGIN) / len(layers)
    band = PlanBand(runner.name, top)
    for level, names in enumerate(layers):
        across = -(-len(names) // rows_fit)  # ceiling: slots side by side in the column
        down = -(-len(names) // across)
        slot_w, slot_h = column / across, band_height / down
        if slot_w < 2 * MARK_GAP:
            return None
        for i, name in enumerate(names):
            x0 = MARGIN + level * column + (i % across) * slot_w
            y0 = top + (i // across) * slot_h + (slot_h - _MIN_SLOT_HEIGHT) / 2  # the block centred in its slot
            decisions, grounds = nodes[name]
            rows = (grounds, decisions[-1:], decisions[:-1])
            for ids, offset in zip(rows, _ROWS, strict=True):
                y = y0 + offset
                for node_id, at in _row(ids, x0, slot_w, y).items():
                    band.positions[node_id] = at
                    band.tasks[node_id] = name
            centre, foot = round(x0 + slot_w / 2), round(y0 + _LABEL_FOOT)
            band.labels.append({"task": name, "text": _label(name, slot_w), "layer": level + 1, "x": centre, "y": foot})
    return band

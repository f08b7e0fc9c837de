"""The graph panel's marks: a deterministic sample of the graph and fixed coordinates for it.

The page never lays anything out: coordinates are computed here, once, so the browser only draws
and the payload is the same bytes in every process.

Invariants (``tests/dashboard/test_dashboard_payload.py``):

1. At most :data:`NODE_CAP` node marks and :data:`EDGE_CAP` edge marks; a graph over a cap is
   sampled, and the sample says ``k`` of ``n``.
2. The sample and the coordinates are pure functions of the graph: every loop runs over lists in
   insertion order, the only random draws come from a ``random.Random`` seeded with a constant,
   and the arithmetic is ``+ - * /`` and ``sqrt`` (correctly rounded in IEEE 754), never a
   transcendental function whose last bit depends on the platform's libm (the spiral's angles
   come from rotating by written-out constants).
3. Pruned nodes are not drawn (they left the graph's walks for good); invalidated nodes are, and
   say so.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import sqrt

from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import EdgeRecord, NodeRecord

__all__ = ["EDGE_CAP", "FORCE_LIMIT", "HEIGHT", "MARGIN", "NODE_CAP", "WIDTH", "Marks", "layout", "sample"]

NODE_CAP = 1500
EDGE_CAP = 3000
WIDTH = 1000
HEIGHT = 640
MARGIN = 18.0
_ITERATIONS = 60
_SEED = 20_240_601
# Where each type is gently pulled, as fractions of the box: colours group, so the panel reads.
_ANCHORS = {
    "entity": (0.50, 0.50),
    "claim": (0.24, 0.42),
    "source": (0.76, 0.26),
    "decision": (0.70, 0.76),
    "assumption": (0.90, 0.60),
    "evidence": (0.30, 0.80),
}
_PULL = 1.0
_SPREAD = 0.7
FORCE_LIMIT = 300
# cos and sin of the golden angle (π(3 - √5)), written out so no libm call decides a last bit.
_GOLDEN_COS = -0.7373688780783197
_GOLDEN_SIN = 0.6754902942615238


@dataclass
class Marks:
    """What the graph panel draws: nodes and edges chosen, with live degrees and positions."""

    nodes: list[NodeRecord]
    edges: list[EdgeRecord]
    degree: dict[str, int]
    drawable: int
    edges_among: int
    positions: list[tuple[int, int]]


def _live_degrees(graph: ContextGraph) -> dict[str, int]:
    degree = dict.fromkeys(graph.nodes, 0)
    for edge in graph.edges.values():
        if graph.edge_is_live(edge):
            degree[edge.src] += 1
            degree[edge.dst] += 1
    return degree


def _quotas(counts: dict[str, int], total: int, cap: int) -> dict[str, int]:
    """Marks per type in proportion to the type's share (largest remainder, ties in type order)."""
    exact = {t: cap * n / total for t, n in counts.items()}
    quota = {t: int(v) for t, v in exact.items()}
    spare = cap - sum(quota.values())
    order = sorted(counts, key=lambda t: (-(exact[t] - quota[t]), list(counts).index(t)))
    for node_type in order[:spare]:
        quota[node_type] += 1
    return quota


def sample(
    graph: ContextGraph,
    *,
    node_cap: int = NODE_CAP,
    edge_cap: int = EDGE_CAP,
    pinned: Mapping[str, tuple[int, int]] | None = None,
    free_height: float = HEIGHT,
) -> Marks:
    """The nodes and edges to draw: everything not pruned, or a stratified sample of it.

    Over the cap, each type keeps marks in proportion to its count; within a type pinned nodes
    come first, then invalidated ones (they are what a reader looks for), then the best connected,
    ties by insertion order. Drawn edges are those between drawn nodes, in insertion order, up to
    the edge cap. ``pinned`` nodes keep their given positions (the plan's band,
    :mod:`contextmesh.dashboard.plan_band`); the others are laid out in the box's top
    ``free_height`` units.
    """
    pinned = pinned or {}
    degree = _live_degrees(graph)
    drawable = [n for n in graph if not n.pruned]
    if len(drawable) > node_cap:
        by_type: dict[str, list[NodeRecord]] = {t: [] for t in graph.ontology.node_types}
        for node in drawable:
            by_type[node.type].append(node)
        counts = {t: len(nodes) for t, nodes in by_type.items() if nodes}
        quota = _quotas(counts, len(drawable), node_cap)
        chosen: set[str] = set()
        for node_type, nodes in by_type.items():
            ranked = sorted(
                nodes, key=lambda n: (n.id not in pinned, not n.invalidated, -degree[n.id], graph.seq(n.id))
            )
            chosen.update(n.id for n in ranked[: quota.get(node_type, 0)])
        nodes = [n for n in drawable if n.id in chosen]
    else:
        nodes = drawable
    keep = {n.id for n in nodes}
    among = [e for e in graph.edges.values() if e.src in keep and e.dst in keep]
    free = [n for n in nodes if n.id not in pinned]
    free_ids = {n.id for n in free}
    free_edges = [e for e in among if e.src in free_ids and e.dst in free_ids]
    laid = iter(layout(free, free_edges, graph.ontology.node_types, height=free_height))
    positions = [pinned[n.id] if n.id in pinned else next(laid) for n in nodes]
    return Marks(nodes, among[:edge_cap], degree, len(drawable), len(among), positions)


def layout(
    nodes: list[NodeRecord], edges: list[EdgeRecord], types: Sequence[str] = (), *, height: float = HEIGHT
) -> list[tuple[int, int]]:
    """Whole-number coordinates in the WIDTH × ``height`` box, one per node, in the nodes' order.

    Up to :data:`FORCE_LIMIT` nodes: a force layout (Fruchterman–Reingold, every pair repelling,
    a fixed number of rounds). Above it the quadratic cost would not fit an export, and a sample
    is read for its types rather than its shape: one ring per type, in ``types`` order from the
    centre out, the best connected nodes of each ring first.
    """
    if not nodes:
        return []
    if len(nodes) <= FORCE_LIMIT:
        return _force(nodes, edges, height)
    return _rings(nodes, edges, types, height)


def _force(nodes: list[NodeRecord], edges: list[EdgeRecord], height: float) -> list[tuple[int, int]]:
    count = len(nodes)
    index = {n.id: i for i, n in enumerate(nodes)}
    pairs = [(index[e.src], index[e.dst]) for e in edges]
    rng = random.Random(_SEED)  # noqa: S311 - a layout wants a reproducible draw, not a secret
    anchors = [(ax * WIDTH, ay * height) for ax, ay in (_ANCHORS.get(n.type, (0.5, 0.5)) for n in nodes)]
    xs = [ax + (rng.random() - 0.5) * WIDTH * 0.3 for ax, _ in anchors]
    ys = [ay + (rng.random() - 0.5) * height * 0.3 for _, ay in anchors]
    k = _SPREAD * sqrt(WIDTH * height / count)
    k2 = k * k
    pull = _PULL
    temperature = WIDTH / 10.0
    cooling = temperature / (_ITERATIONS + 1)
    for _ in range(_ITERATIONS):
        dx = [0.0] * count
        dy = [0.0] * count
        for i in range(count):
            xi, yi = xs[i], ys[i]
            fx = fy = 0.0
            for j in range(i + 1, count):
                ddx, ddy = xi - xs[j], yi - ys[j]
                d2 = ddx * ddx + ddy * ddy
                if d2 == 0.0:
                    ddx, ddy, d2 = 1.0, 0.0, 1.0
                force = k2 / d2  # k²/d along the unit vector: (k²/d) · (Δ/d)
                ddx *= force
                ddy *= force
                fx += ddx
                fy += ddy
                dx[j] -= ddx
                dy[j] -= ddy
            dx[i] += fx
            dy[i] += fy
        for a, b in pairs:
            ddx, ddy = xs[a] - xs[b], ys[a] - ys[b]
            pull_ab = sqrt(ddx * ddx + ddy * ddy) / k  # d²/k along the unit vector: (d²/k) · (Δ/d)
            dx[a] -= ddx * pull_ab
            dy[a] -= ddy * pull_ab
            dx[b] += ddx * pull_ab
            dy[b] += ddy * pull_ab
        for i in range(count):
            ax, ay = anchors[i]
            fx = dx[i] + (ax - xs[i]) * pull
            fy = dy[i] + (ay - ys[i]) * pull
            size = sqrt(fx * fx + fy * fy)
            if size > 0.0:
                step = min(size, temperature) / size
                # No wall: a node clamped to the box's edge stays there, and the few a small graph
                # has pile up in a row along it. The anchors hold the drawing; _fit scales it in.
                xs[i] += fx * step
                ys[i] += fy * step
        temperature -= cooling
    return _fit(xs, ys, height)


def _rings(
    nodes: list[NodeRecord], edges: list[EdgeRecord], types: Sequence[str], height: float
) -> list[tuple[int, int]]:
    """A sunflower (Vogel) spiral, nodes ordered by type then degree: one ring per type, hubs inward."""
    degree = dict.fromkeys((n.id for n in nodes), 0)
    for edge in edges:
        degree[edge.src] += 1
        degree[edge.dst] += 1
    rank_of = {t: i for i, t in enumerate([*types, *(n.type for n in nodes if n.type not in types)])}
    order = sorted(range(len(nodes)), key=lambda i: (rank_of[nodes[i].type], -degree[nodes[i].id], i))
    count = len(nodes)
    cos_step, sin_step = _GOLDEN_COS, _GOLDEN_SIN
    cos_a, sin_a = 1.0, 0.0
    xs = [0.0] * count
    ys = [0.0] * count
    for rank, i in enumerate(order):
        radius = sqrt((rank + 0.5) / count)
        xs[i] = radius * cos_a
        ys[i] = radius * sin_a
        # The next angle by rotation: cos/sin of a multiple of the golden angle from + and * only.
        cos_a, sin_a = cos_a * cos_step - sin_a * sin_step, sin_a * cos_step + cos_a * sin_step
    return _fit(xs, ys, height)


def _fit(xs: list[float], ys: list[float], height: float) -> list[tuple[int, int]]:
    """Stretch the drawing to fill the WIDTH × ``height`` box (each axis on its own), round to whole units."""
    low_x, high_x, low_y, high_y = min(xs), max(xs), min(ys), max(ys)
    scale_x = (WIDTH - 2 * MARGIN) / max(high_x - low_x, 1.0)
    scale_y = (height - 2 * MARGIN) / max(high_y - low_y, 1.0)
    return [
        (round(MARGIN + (x - low_x) * scale_x), round(MARGIN + (y - low_y) * scale_y))
        for x, y in zip(xs, ys, strict=True)
    ]

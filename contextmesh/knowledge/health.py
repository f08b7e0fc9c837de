"""Health: the signals that make a graph quietly useless, each with a count, a detail and a remedy.

``check`` returns one :class:`Signal` per kind, always in the same order, zero counts included, so a
dashboard or a monitor can diff two reports. ``status`` is ``error`` when any error-severity signal
has a count, ``warn`` when any warning does, ``ok`` otherwise.

Assumption staleness is measured on the plan's clock. A plan's audit stamps the ground it looked at
with ``checked_round``, the plan round it ran in, so ``plan_round`` (the plan's current round) minus
that stamp is how many plan rounds have passed since an auditor last looked at the world for it; a
ground never audited counts from round 0. Walk rounds (how many rounds of questions trained the
walker) are another clock and play no part: subtracting a plan round from a walk-round count made a
ground audited a moment earlier look stale once the session had been asked enough.

Invariant: ``untyped_edges`` is always present and always 0 (GRAPH.md rule 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import NodeRecord
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.traverse import Walker

__all__ = ["SIGNAL_KINDS", "HealthReport", "Signal", "check"]

SIGNAL_KINDS = (
    "untyped_edges",
    "orphans",
    "provenance_gap",
    "unresolved_entities",
    "missing_relationships",
    "stale_assumptions",
    "open_contradictions",
    "dead_ends",
    "invalidated_nodes",
)
_MAX_ITEMS = 12


@dataclass(frozen=True)
class Signal:
    """One health signal."""

    kind: str
    severity: str
    count: int
    detail: str
    remedy: str
    items: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """Plain data."""
        return {
            "kind": self.kind,
            "severity": self.severity,
            "count": self.count,
            "detail": self.detail,
            "remedy": self.remedy,
            "items": list(self.items),
        }


@dataclass
class HealthReport:
    """Every signal plus the graph's size."""

    signals: list[Signal]
    nodes_live: int
    nodes_total: int
    edges_live: int
    edge_types_used: int
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """``error``, ``warn`` or ``ok``."""
        if any(s.severity == "error" and s.count for s in self.signals):
            return "error"
        if any(s.severity == "warn" and s.count for s in self.signals):
            return "warn"
        return "ok"

    def signal(self, kind: str) -> Signal:
        """One signal by kind."""
        return next(s for s in self.signals if s.kind == kind)

    def to_dict(self) -> dict[str, object]:
        """Plain data."""
        return {
            "status": self.status,
            "nodes_live": self.nodes_live,
            "nodes_total": self.nodes_total,
            "edges_live": self.edges_live,
            "edge_types_used": self.edge_types_used,
            "signals": [s.to_dict() for s in self.signals],
        }


def _items(ids: list[str]) -> tuple[str, ...]:
    return tuple(ids[:_MAX_ITEMS])


def check(
    graph: ContextGraph,
    resolver: Resolver | None = None,
    walker: Walker | None = None,
    *,
    plan_round: int = 0,
    stale_after_rounds: int = 25,
) -> HealthReport:
    """Compute every signal over the live graph; ``plan_round`` is the round of the plan that audits
    its grounds (0 when no plan runs on this graph)."""
    live = [n for n in graph if n.live]
    signals = [
        _untyped_edges(graph),
        _orphans(graph, live),
        _provenance_gaps(graph, live),
        _unresolved_entities(resolver),
        _missing_relationships(graph, live),
        _stale_assumptions(graph, plan_round, stale_after_rounds),
        _open_contradictions(graph),
        _dead_ends(walker),
        _invalidated_nodes(graph),
    ]
    edges_live = sum(1 for e in graph.edges.values() if graph.edge_is_live(e))
    used = sum(1 for n in graph.edge_counts().values() if n)
    return HealthReport(signals, len(live), len(graph), edges_live, used)


def _untyped_edges(graph: ContextGraph) -> Signal:
    return Signal(
        "untyped_edges",
        "error" if graph.untyped_edges else "info",
        graph.untyped_edges,
        "edges stored without a GRAPH.md type",
        "none needed: no code path can store one",
    )


def _orphans(graph: ContextGraph, live: list[NodeRecord]) -> Signal:
    orphans = [n.id for n in live if not graph.out_edges(n.id) and not graph.in_edges(n.id)]
    return Signal(
        "orphans",
        "warn",
        len(orphans),
        f"{len(orphans)} live node(s) with no live edge",
        "link them to what they came from, or let PRUNE drop them",
        _items(orphans),
    )


def _provenance_gaps(graph: ContextGraph, live: list[NodeRecord]) -> Signal:
    gaps = []
    for node in live:
        if node.type not in {"claim", "decision"}:
            continue
        to_source = any(graph.node(e.dst).type == "source" for e in graph.out_edges(node.id, ("derived_from", "cites")))
        if node.provenance is None and not to_source:
            gaps.append(node.id)
    return Signal(
        "provenance_gap",
        "error",
        len(gaps),
        f"{len(gaps)} claim(s)/decision(s) with no way back to a source",
        "record provenance or a derived_from/cites edge to the source",
        _items(gaps),
    )


def _unresolved_entities(resolver: Resolver | None) -> Signal:
    log = resolver.log if resolver else []
    unresolved = [r.mention for r in log if not r.resolved]
    near = [r.mention for r in log if r.reason and r.reason.startswith("best candidate")]
    return Signal(
        "unresolved_entities",
        "warn",
        len(near),
        f"{len(near)} near miss(es) below the threshold; {len(unresolved)} mention(s) unresolved in all",
        "register the missing alias, or accept the drop",
        _items(list(dict.fromkeys(near))),
    )


def _missing_relationships(graph: ContextGraph, live: list[NodeRecord]) -> Signal:
    missing = [
        n.id
        for n in live
        if n.type == "entity"
        and not any(graph.node(e.src).type == "claim" for e in graph.in_edges(n.id, ("mentions",)))
    ]
    return Signal(
        "missing_relationships",
        "warn",
        len(missing),
        f"{len(missing)} live entit(y/ies) no live claim mentions",
        "add the claims that relate them, or let them age out",
        _items(missing),
    )


def _stale_assumptions(graph: ContextGraph, plan_round: int, stale_after_rounds: int) -> Signal:
    # Both sides are plan rounds: ``checked_round`` is the plan round of the ground's last audit.
    stale = [
        a.id
        for a in graph.assumptions.values()
        if a.status == "active"
        and graph.is_live(a.id)
        and plan_round - _int(graph.node(a.id).attrs.get("checked_round")) > stale_after_rounds
    ]
    return Signal(
        "stale_assumptions",
        "warn",
        len(stale),
        f"{len(stale)} active assumption(s) not rechecked for more than {stale_after_rounds} plan rounds",
        "run a recheck so an auditor looks at the world again",
        _items(stale),
    )


def _open_contradictions(graph: ContextGraph) -> Signal:
    contradicting = list(
        dict.fromkeys(e.src for e in graph.edges.values() if e.type == "contradicts" and graph.edge_is_live(e))
    )
    return Signal(
        "open_contradictions",
        "warn",
        len(contradicting),
        f"{len(contradicting)} live node(s) contradict another live node",
        "settle each with evidence, or reject the assumption behind one side",
        _items(contradicting),
    )


def _dead_ends(walker: Walker | None) -> Signal:
    ledger = walker.dead_end_ledger() if walker else {}
    total = sum(ledger.values())
    detail = "; ".join(f"{reason}={count}" for reason, count in ledger.items() if count) or "no dead ends"
    return Signal("dead_ends", "warn", total, detail, "read each dead end's detail: it names what the walk tried")


def _invalidated_nodes(graph: ContextGraph) -> Signal:
    fallen = [n.id for n in graph if n.invalidated]
    return Signal(
        "invalidated_nodes",
        "info",
        len(fallen),
        f"{len(fallen)} node(s) invalidated",
        "repair the work that stood on the rejected ground",
        _items(fallen),
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0

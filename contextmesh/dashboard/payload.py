"""The dashboard's one payload: every panel is a query against the engine, none is typed in.

``build_payload`` returns plain data for ``canonical.file_bytes``. For the bundled demo it is
produced in-process with a fixed number of walk rounds, so it is the same bytes every time: no
timestamps, no run ids, no paths, no session ids; lists keep insertion or ontology order (object
keys are sorted by the serialiser, so anything whose order matters is a list).

Panels and the engine calls behind them (``dashboard/README.md`` says the same for readers):

* ``header`` — ``ContextGraph.type_counts`` / ``edge_counts`` (live and total), ``health.check``;
* ``build`` — ``BuildReport.to_dict`` (stage counts, admitted / dropped, top drop reasons);
* ``graph`` — :func:`contextmesh.dashboard.marks.sample` over the graph's records;
* ``hops`` — ``Walker.hop_histogram``; ``traffic`` — ``EdgeRecord.traversals`` summed by type;
* ``tokens`` — ``Walk.tokens`` / ``Walk.flat_tokens`` and ``Walker.token_ratios``;
* ``dead_ends`` — ``Walker.dead_end_ledger`` (and the first walk per reason);
* ``execution`` — the ``Plan``'s tasks and its ``RunLedger``: entries, ``receipts``, ``head``,
  ``verify``.

Invariant: the demo payload is a pure function of ``rounds`` (``tests/dashboard`` regenerates it
and compares bytes with the committed ``dashboard/data/mesh.json``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Any

from contextmesh.core.errors import ContextMeshError
from contextmesh.core.graph import ContextGraph
from contextmesh.dashboard import plan_band, round_runs
from contextmesh.dashboard.marks import EDGE_CAP, HEIGHT, NODE_CAP, WIDTH, sample
from contextmesh.execution.plan import Plan, Task
from contextmesh.formats.run_ledger import EVENTS
from contextmesh.knowledge.health import check
from contextmesh.knowledge.pipeline import BuildReport
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.traverse import Walker
from contextmesh.project.bundled import bundled_project, extension_of

if TYPE_CHECKING:
    from contextmesh.session.session import Session

__all__ = ["DEFAULT_ROUNDS", "PAYLOAD_SCHEMA", "PAYLOAD_VERSION", "assemble", "build_payload"]

PAYLOAD_SCHEMA = "contextmesh.dashboard"
PAYLOAD_VERSION = 1
DEFAULT_ROUNDS = 8
RECENT_ENTRIES = 40
# A task's state in a round, when the ledger holds several events for it: the first that applies.
_STATE_ORDER = ("failed", "blocked", "executed", "cached", "disproved", "invalidated", "repaired", "audit_error")
_RUN_EVENTS = frozenset({"executed", "cached", "blocked", "failed"})
_DIGITS = 6


def build_payload(
    *,
    session_dir: Path | None = None,
    rounds: int = DEFAULT_ROUNDS,
    feed: Path | None = None,
    session: Session | None = None,
) -> dict[str, Any]:
    """The demo's payload, or a saved session's when ``session_dir`` (or an opened ``session``) is given."""
    if session is not None:
        return session_payload(session.directory or Path(), rounds=rounds, session=session)
    if session_dir is None:
        return demo_payload(rounds, feed=feed)
    return session_payload(session_dir, rounds=rounds, feed=feed)


def demo_payload(rounds: int = DEFAULT_ROUNDS, *, feed: Path | None = None) -> dict[str, Any]:
    """The bundled demo: build, ``rounds`` walk rounds, the sizing assumption broken, and the
    execute walk-through (round 1, advisory, recheck, repair, round 3) for the execution panel."""
    # The bundled example project's story, through its extension (ADR 0023): the graph walked and
    # broken, and its plan's walk-through run in memory.
    world, runner = _bundled("showcase")(rounds, _settings(feed))
    source = {"kind": "demo", "walk_rounds": world.walk_rounds, "plan": runner.name}
    return assemble(
        world.graph,
        resolver=world.result.resolver,
        walker=world.walker,
        walk_rounds=world.walk_rounds,
        build=world.result.report,
        runner=runner,
        source=source,
    )


def _settings(feed: Path | None) -> dict[str, Path]:
    """The bundled project's settings this export was given (its auditor's file)."""
    return {} if feed is None else {"feed": feed}


def _bundled(part: str) -> Any:
    found = getattr(extension_of(bundled_project()), part, None)
    if not callable(found):
        raise ContextMeshError(f"the bundled example project's extension has no {part!r}")
    return found


def session_payload(
    directory: Path, *, rounds: int = DEFAULT_ROUNDS, feed: Path | None = None, session: Session | None = None
) -> dict[str, Any]:
    """A saved session, read-only: loaded with policy ``never`` (or ``session``, opened by the caller
    through its project, read-only); the walk panels come from ``rounds`` rounds of the demo's
    question mix asked in memory (a session keeps walk telemetry, not the walks), and nothing is
    committed."""
    if session is None:
        session = bundled_project(_settings(feed)).open_session(directory, policy="never")
    questions = _bundled("questions")()
    for _ in range(rounds):
        for question in questions:
            session.walker.ask(question)
    source = {
        "kind": "session",
        "generation": session.generation,
        "corpus": session.corpus,
        "session_rounds": session.walk_rounds,
        "walk_rounds": rounds,
        "plan": None if session.runner is None else session.runner.name,
    }
    return assemble(
        session.graph,
        resolver=session.resolver,
        walker=session.walker,
        walk_rounds=session.walk_rounds + rounds,
        build=None,
        runner=session.runner,
        source=source,
    )


def assemble(
    graph: ContextGraph,
    *,
    resolver: Resolver | None,
    walker: Walker,
    walk_rounds: int,
    build: BuildReport | None,
    runner: Plan | None,
    source: dict[str, Any],
) -> dict[str, Any]:
    """Every panel of one graph, its walks and (optionally) its plan."""
    return {
        "schema": PAYLOAD_SCHEMA,
        "version": PAYLOAD_VERSION,
        "source": source,
        "header": _header(graph, resolver, walker, walk_rounds, _plan_round(graph, runner)),
        "build": None if build is None else {"stages": build.to_dict()},
        "graph": _graph(graph, runner),
        "hops": _hops(walker),
        "traffic": _traffic(graph),
        "tokens": _tokens(walker),
        "dead_ends": _dead_ends(walker),
        "execution": None if runner is None else _execution(runner),
    }


def _plan_round(graph: ContextGraph, runner: Plan | None) -> int:
    # A plan's clock counts only for the graph it stamps: the demo's walk-through runs on a graph of its own.
    return runner.round if runner is not None and runner.graph is graph else 0


def _header(
    graph: ContextGraph, resolver: Resolver | None, walker: Walker, walk_rounds: int, plan_round: int
) -> dict[str, Any]:
    nodes_live, nodes_total = graph.type_counts(), graph.type_counts(live_only=False)
    edges_live, edges_total = graph.edge_counts(), graph.edge_counts(live_only=False)
    health = check(graph, resolver, walker, plan_round=plan_round)
    statuses = Counter(record.status for record in graph.assumptions.values())
    return {
        "nodes": [{"type": t, "live": nodes_live[t], "total": nodes_total[t]} for t in graph.ontology.node_types],
        "edges": [{"type": t, "live": edges_live[t], "total": edges_total[t]} for t in graph.ontology.edge_types],
        "nodes_live": sum(nodes_live.values()),
        "nodes_total": sum(nodes_total.values()),
        "edges_live": sum(edges_live.values()),
        "edges_total": sum(edges_total.values()),
        "invalidated": sum(1 for n in graph if n.invalidated),
        "pruned": sum(1 for n in graph if n.pruned),
        "assumptions": [{"status": s, "count": n} for s, n in sorted(statuses.items())],
        "walks": len(walker.walks),
        "rounds": walk_rounds,
        "resolved_rate": round(walker.resolved_rate, _DIGITS),
        "health": {
            "status": health.status,
            "signals": [{"kind": s.kind, "severity": s.severity, "count": s.count} for s in health.signals],
        },
    }


def _graph(graph: ContextGraph, runner: Plan | None) -> dict[str, Any]:
    band = None if runner is None else plan_band.band_for(graph, runner, _layers(runner.tasks))
    marks = sample(graph) if band is None else sample(graph, pinned=band.positions, free_height=band.free_height)
    index = {node.id: i for i, node in enumerate(marks.nodes)}
    return {
        "plan_band": None if band is None else band.to_dict(),
        "cap": NODE_CAP,
        "edge_cap": EDGE_CAP,
        "width": WIDTH,
        "height": HEIGHT,
        "drawable": marks.drawable,
        "drawn": len(marks.nodes),
        "sampled": len(marks.nodes) < marks.drawable,
        "edges_among": marks.edges_among,
        "edges_drawn": len(marks.edges),
        "types": list(graph.ontology.node_types),
        "nodes": [
            {
                "id": node.id,
                "type": node.type,
                "label": node.label,
                "x": x,
                "y": y,
                "live": node.live,
                "invalidated": node.invalidated,
                "degree": marks.degree[node.id],
                "task": None if band is None else band.tasks.get(node.id),
            }
            for node, (x, y) in zip(marks.nodes, marks.positions, strict=True)
        ],
        "edges": [
            {
                "s": index[edge.src],
                "t": index[edge.dst],
                "type": edge.type,
                "live": graph.edge_is_live(edge),
                "invalidated": edge.invalidated,
            }
            for edge in marks.edges
        ],
    }


def _hops(walker: Walker) -> dict[str, Any]:
    histogram = walker.hop_histogram()
    low, high = min([1, *histogram]), max(histogram, default=0)
    return {
        "bins": [{"hops": h, "walks": histogram.get(h, 0)} for h in range(low, high + 1)],
        "answered": sum(histogram.values()),
        "walks": len(walker.walks),
        "hop_budget": walker.settings.hop_budget,
    }


def _traffic(graph: ContextGraph) -> dict[str, Any]:
    traversals = dict.fromkeys(graph.ontology.edge_types, 0)
    for edge in graph.edges.values():
        traversals[edge.type] += edge.traversals
    counts = graph.edge_counts(live_only=False)
    return {
        "types": [{"type": t, "traversals": n, "edges": counts[t]} for t, n in traversals.items()],
        "total": sum(traversals.values()),
    }


def _tokens(walker: Walker) -> dict[str, Any]:
    groups: dict[tuple[str, str, int, int, int], int] = {}
    for walk in walker.walks:
        if walk.dead_end is None and walk.flat_tokens:
            key = (walk.question, walk.answer or "", walk.hops, walk.tokens, walk.flat_tokens)
            groups[key] = groups.get(key, 0) + 1
    answered = [w for w in walker.walks if w.dead_end is None and w.flat_tokens]
    ratios = walker.token_ratios()
    return {
        "baseline": walker.flat is not None,
        "flat_k": walker.settings.flat_k,
        "answered": len(ratios),
        "median_ratio": round(median(ratios), _DIGITS) if ratios else None,
        "median_tokens": median(w.tokens for w in answered) if answered else None,
        "median_flat_tokens": median(w.flat_tokens for w in answered) if answered else None,
        "walks": [
            {
                "question": question,
                "answer": answer,
                "hops": hops,
                "tokens": tokens,
                "flat_tokens": flat,
                "ratio": round(tokens / flat, _DIGITS),
                "count": count,
            }
            for (question, answer, hops, tokens, flat), count in groups.items()
        ],
    }


def _dead_ends(walker: Walker) -> dict[str, Any]:
    ledger = walker.dead_end_ledger()
    first: dict[str, dict[str, str]] = {}
    for walk in walker.walks:
        if walk.dead_end is not None and walk.dead_end.reason not in first:
            first[walk.dead_end.reason] = {"question": walk.question, "detail": walk.dead_end.detail}
    return {
        "reasons": [{"reason": r, "count": n, "example": first.get(r)} for r, n in ledger.items()],
        "total": sum(ledger.values()),
        "walks": len(walker.walks),
    }


def _layers(tasks: dict[str, Task]) -> list[list[str]]:
    """The plan's layers: a task sits one layer after the deepest task it needs."""
    depth: dict[str, int] = {}
    for task in tasks.values():  # declaration order is a topological order (Plan.task)
        depth[task.name] = 1 + max((depth[n] for n in task.needs), default=-1)
    layers: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for name, level in depth.items():
        layers[level].append(name)
    return layers


def _execution(runner: Plan) -> dict[str, Any]:
    ledger = runner.ledger
    entries = ledger.entries
    names = list(runner.tasks)
    blocked_now = runner.blocked()
    rounds: dict[int, dict[str, list[str]]] = {}
    notes: dict[int, list[str]] = {}
    for entry in entries:
        events = rounds.setdefault(entry.round, {name: [] for name in names})
        if entry.task in events:
            if entry.event not in events[entry.task]:
                events[entry.task].append(entry.event)
        elif entry.task is None:
            notes.setdefault(entry.round, []).append(f"{entry.event}: {entry.detail}")
    table = []
    for number, events in rounds.items():
        seen = {event for task_events in events.values() for event in task_events}
        table.append(
            {
                "round": number,
                "kind": "run" if seen & _RUN_EVENTS else "recheck",
                "cells": [
                    {
                        "task": name,
                        "state": next((s for s in _STATE_ORDER if s in events[name]), events[name][0])
                        if events[name]
                        else None,
                        "events": events[name],
                    }
                    for name in names
                ],
                "notes": notes.get(number, []),
            }
        )
    counts = Counter(entry.event for entry in entries)
    prefect = round_runs.add_round_runs(table, entries)
    return {
        "plan": runner.name,
        "prefect": prefect,
        "round": runner.round,
        "layers": _layers(runner.tasks),
        "tasks": [
            {
                "name": task.name,
                "worker_key": task.worker_key,
                "auditor_key": task.auditor_key,
                "assumes": task.assumes,
                "needs": list(task.needs),
                "produces": list(task.produces),
                "state": task.state.value,
                "blocked": blocked_now.get(task.name),
                "attempt": task.attempt,
            }
            for task in runner.tasks.values()
        ],
        "rounds": table,
        "receipt": _last_receipt(runner),
        "ledger": {
            "entries": len(entries),
            "head": ledger.head,
            "verified": ledger.verify(),
            "events": [{"event": e, "count": counts[e]} for e in EVENTS if counts[e]],
            "recent": [
                {
                    "seq": e.seq,
                    "round": e.round,
                    "event": e.event,
                    "task": e.task,
                    "key": e.key,
                    "detail": e.detail,
                    "digest": e.digest,
                }
                for e in entries[-RECENT_ENTRIES:]
            ],
        },
    }


def _last_receipt(runner: Plan) -> dict[str, Any] | None:
    disproofs = [e for e in runner.ledger.entries if e.event == "disproved" and e.receipt is not None]
    if not disproofs:
        return None
    entry = disproofs[-1]
    receipt = runner.ledger.receipts()[-1]
    fallen = []
    for item in receipt["invalidated"]:
        node = runner.graph.nodes.get(item["id"])
        fallen.append(
            {
                "id": item["id"],
                "type": None if node is None else node.type,
                "label": None if node is None else node.label,
                "chain": item["chain"],
            }
        )
    return {
        "seq": entry.seq,
        "round": entry.round,
        "task": receipt["task"],
        "auditor": receipt["auditor"],
        "reason": receipt["reason"],
        "ground": receipt["ground"],
        "evidence_id": receipt["evidence_id"],
        "blast_radius": receipt["blast_radius"],
        "fallen": fallen,
        "fallen_edges": len(receipt["invalidated_edges"]),
        "preserved_count": receipt["preserved_count"],
        "preserved_digest": receipt["preserved_digest"],
        "replacement_id": receipt["replacement_id"],
    }

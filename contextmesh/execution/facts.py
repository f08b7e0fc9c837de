"""Tracked reads: the world facts a decision read through ``ctx.read``, and what falls when one changes.

A worker's ``ctx.read(source, name)`` is recorded as a :class:`~contextmesh.execution.context.FactRead`
(ADR 0018). When its task commits, each read becomes a **claim** of the graph —
``<source>:<name> read as <16 hex> (round <n>)``, ``derived_from`` the ``source`` node
``fact <source>:<name>`` (:func:`reading_claims`) — and the decision rests on it (``derived_from``;
the claim ``supports`` it), so the graph itself says what the decision rests on.

At the start of every round :func:`check_facts` re-reads every fact a standing decision of the plan
read, once per fact however many tasks read it, and supersedes each claim whose digest differs:
the fact's source node ``supersedes`` the claim, and what rested on it falls through the closure a
document revision uses, with a reason chain that begins at the fact and passes through the claim::

    fact world:c03.b1 now reads 5d1e0f2a3b4c5d6e -supersedes-> claim(world:c03.b1 read as 9a0b…)
        <-derived_from- t04-02 (bench)

A fact whose source raises, or is no longer registered, counts as changed (nothing can vouch for
the old reading). Reads that do not go through the context are invisible here: nothing records them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from contextmesh.belief.invalidation import closure_from, doomed_edges, render_chain
from contextmesh.core.canonical import digest
from contextmesh.core.errors import ContextMeshError
from contextmesh.core.ids import slug
from contextmesh.core.model import Provenance
from contextmesh.execution.context import FactRead
from contextmesh.execution.task import TaskState

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = ["check_facts", "fact_claims", "reading_claims"]

_EXTRACTOR = "plan.read"
_LABEL_LIMIT = 48


def _fact(source: str, name: str) -> str:
    return f"{source}:{name}"


def _source_node(plan: Plan, source: str, name: str) -> str:
    """The id of the ``source`` node standing for one fact, added once."""
    node_id = slug(f"fact {_fact(source, name)}", "source")
    if node_id not in plan.graph:
        plan.graph.add_node(
            "source",
            f"fact {_fact(source, name)}",
            id=node_id,
            attrs={"origin": f"fact:{_fact(source, name)}", "retrieved_at": None},
        )
    return node_id


def _claim(plan: Plan, read: FactRead) -> str:
    """The live claim of this reading: one already read with the same digest, else a new one."""
    graph = plan.graph
    fact_node = _source_node(plan, read.source, read.name)
    for edge in graph.in_edges(fact_node, ["derived_from"]):
        if graph.node(edge.src).attrs.get("digest") == read.digest:
            return edge.src
    # The round is in the label so a fact that comes back to an old value gets a new claim: a
    # superseded claim is never revived.
    label = f"{_fact(read.source, read.name)} read as {read.digest[:16]} (round {plan.round})"
    claim_id = slug(label, "claim")
    if claim_id not in graph:
        graph.add_node(
            "claim",
            label,
            id=claim_id,
            attrs={"fact_source": read.source, "fact": read.name, "digest": read.digest},
            provenance=Provenance(source_id=fact_node, extractor=_EXTRACTOR, recorded_at_build=graph.build),
        )
        graph.add_edge(claim_id, "derived_from", fact_node)
    return claim_id


def reading_claims(plan: Plan, reads: Iterable[FactRead]) -> list[str]:
    """The claims of ``reads`` (added when new), in read order: what a decision that read them rests on."""
    return list(dict.fromkeys(_claim(plan, read) for read in reads))


def fact_claims(plan: Plan, decision_id: str) -> list[str]:
    """The fact claims a decision rests on (live or not), in edge order."""
    graph = plan.graph
    return [
        edge.dst
        for edge in graph.out_edges(decision_id, ["derived_from"], live_only=False)
        if "fact_source" in graph.node(edge.dst).attrs
    ]


def _standing_claims(plan: Plan) -> dict[tuple[str, str], list[str]]:
    """(source, name) → the live claims of it that a done task's standing decision rests on, or a
    stale task's fallen one (early cutoff may keep a stale task's result only while its facts hold)."""
    graph = plan.graph
    found: dict[tuple[str, str], list[str]] = {}
    for task in plan.tasks.values():
        if task.decision_id is None or task.state not in {TaskState.DONE, TaskState.STALE}:
            continue
        if task.state is TaskState.DONE and not graph.is_live(task.decision_id):
            continue
        for claim_id in fact_claims(plan, task.decision_id):
            attrs = graph.node(claim_id).attrs
            held = found.setdefault((str(attrs["fact_source"]), str(attrs["fact"])), [])
            if graph.is_live(claim_id) and claim_id not in held:
                held.append(claim_id)
    return found


def _read_now(plan: Plan, source: str, name: str) -> tuple[str | None, str]:
    """The fact's digest now and how to say it, or ``None`` with why it cannot be read."""
    try:
        if plan.registry is None:
            raise ContextMeshError("the plan has no registry")
        value: Any = plan.registry.lookup_fact(source).fn(name)
        now = digest(value)
    except Exception as exc:  # a source that fails cannot vouch for the old reading
        return None, f"fact {_fact(source, name)} could not be read ({type(exc).__name__}: {exc})"
    return now, f"fact {_fact(source, name)} now reads {now[:16]}"


def check_facts(plan: Plan) -> list[str]:
    """Re-read every fact the plan's standing decisions read; let the readers of a changed one fall.

    Writes one ``fact_changed`` entry per changed fact, then one ``invalidated`` entry per fallen
    node, and returns the tasks that went stale, in declaration order.
    """
    graph = plan.graph
    seeds: dict[str, list[str]] = {}
    changed: list[tuple[str, str, str, list[str]]] = []
    for (source, name), claims in sorted(_standing_claims(plan).items()):
        now, said = _read_now(plan, source, name)
        superseded = [c for c in claims if graph.node(c).attrs.get("digest") != now]
        if not superseded:
            continue
        changed.append((source, name, said, superseded))
        for claim_id in superseded:
            label = graph.node(claim_id).label
            short = label if len(label) <= _LABEL_LIMIT else label[: _LABEL_LIMIT - 1] + "…"
            seeds[claim_id] = [said, "-supersedes->", f"claim({short})"]
    if not seeds:
        return []
    fallen = closure_from(graph, seeds)
    edges = doomed_edges(graph, seeds, fallen)
    for source, name, said, superseded in changed:
        fact_node = _source_node(plan, source, name)
        for claim_id in superseded:
            if graph.find_edge(fact_node, "supersedes", claim_id) is None:
                graph.add_edge(fact_node, "supersedes", claim_id)
        was = ", ".join(str(graph.node(c).attrs.get("digest", ""))[:16] for c in superseded)
        plan.ledger.record(
            "fact_changed",
            round=plan.round,
            key=source,
            detail=f"{said} (read as {was}): {len(superseded)} reading(s) superseded",
        )
    graph.invalidate(seeds, [])
    graph.invalidate(fallen, edges)
    return _fall(plan, fallen)


def _fall(plan: Plan, fallen: dict[str, list[str]]) -> list[str]:
    by_decision = {task.decision_id: task for task in plan.tasks.values() if task.decision_id}
    stale = []
    for task in plan.tasks.values():
        if task.state is TaskState.DONE and task.decision_id in fallen:
            task.state = TaskState.STALE
            task.error = "a fact it read through its context changed"
            stale.append(task.name)
    for node_id, chain in fallen.items():
        owner = by_decision.get(node_id)
        plan.ledger.record(
            "invalidated",
            round=plan.round,
            task=owner.name if owner is not None else None,
            decision_id=node_id,
            detail=render_chain(chain),
        )
    return stale

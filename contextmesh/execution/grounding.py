"""Tasks that rest on documents: what a decision records, and what falls when a revision supersedes.

A task may name the documents or sentences it rests on (``rests_on``:
:class:`~contextmesh.knowledge.revisions.DocumentRef`) and the entities it is about (``about``).
References are resolved against the current revisions when the task is about to run and when it
commits, never when it is declared, so a plan can be declared before its documents are ingested:

* a task whose references name nothing now (a document not ingested, a quote no sentence of the
  current revision holds, an entity no catalogue names) is *blocked* with the reason, recomputed
  every round like every other block (:mod:`~contextmesh.execution.references`);
* its decision ``derived_from`` each claim it rests on (a document: every claim its current
  revision makes), each claim ``supports`` it, and it ``cites`` each revision — so when a revision
  supersedes one of those claims the decision falls, and with it exactly the tasks whose decisions
  stand on it (:func:`absorb_fallout`);
* GRAPH.md lets only claims and sources *mention* an entity, so ``about`` is recorded as a claim of
  the plan's source — ``<task> (<plan>) is about <entities>.`` — that mentions each entity and
  supports the decision: a question about one of those entities reaches the decision in two typed
  hops (entity ← mentions ← claim → supports → decision).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from contextmesh.belief.invalidation import render_chain
from contextmesh.core.ids import slug
from contextmesh.core.model import Provenance
from contextmesh.execution.task import Task, TaskState

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = ["about_claim", "absorb_fallout"]


def about_claim(plan: Plan, task: Task, entities: tuple[str, ...], decision_id: str) -> None:
    """Record what ``task`` is about as the plan's claim that mentions each entity and supports the decision."""
    graph = plan.graph
    names = [graph.node(entity).label for entity in entities]
    label = f"{task.name} ({plan.name}) is about {', '.join(names)}."
    claim_id = slug(label, "claim")
    if claim_id not in graph:
        graph.add_node(
            "claim",
            label,
            id=claim_id,
            attrs={"plan": plan.name, "task": task.name},
            provenance=Provenance(source_id=plan.source_id, extractor="plan.about", recorded_at_build=graph.build),
        )
    for src, edge_type, dst in (
        (claim_id, "derived_from", plan.source_id),
        *((claim_id, "mentions", entity) for entity in entities),
        (claim_id, "supports", decision_id),
    ):
        if graph.find_edge(src, edge_type, dst) is None:
            graph.add_edge(src, edge_type, dst)


def absorb_fallout(plan: Plan, invalidated: Mapping[str, list[str]]) -> list[str]:
    """Make stale every done task whose decision fell with a revision; one ledger entry per fallen node.

    Returns the stale tasks in declaration order. The tasks go stale exactly as after a disproof, so
    the next ``run()`` re-runs them (and whatever needs them) and nothing else.
    """
    stale = []
    for task in plan.tasks.values():
        if task.state is TaskState.DONE and task.decision_id in invalidated:
            task.state = TaskState.STALE
            task.error = "a claim it rests on was superseded by a revision of its document"
            stale.append(task.name)
    by_decision = {task.decision_id: task.name for task in plan.tasks.values() if task.decision_id}
    for node_id, chain in invalidated.items():
        plan.ledger.record(
            "invalidated",
            round=plan.round,
            task=by_decision.get(node_id),
            decision_id=node_id,
            detail=render_chain(chain),
        )
    return stale

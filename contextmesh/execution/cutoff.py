"""Early cutoff: a stale task whose inputs came back unchanged keeps its result instead of running.

A disproof takes down the whole closure of its ground, but a task that re-runs may return exactly
the output it had. Then what needs it read nothing new, and re-running it would only repeat itself
(Salsa's and Bazel's "backdating"; ADR 0018). When a stale task's layer comes up in a round,
:func:`revalidation` says whether everything it read is what it read last time:

* its assumption and worker key are those its previous decision records;
* for every need, the need's current decision records the same ``output_digest`` as the decision
  of that need its previous decision depended on;
* every fact it read through ``ctx.read`` is still read the same (its claims stand:
  :func:`~contextmesh.execution.facts.check_facts` ran at the start of the round);
* the documents it rests on name the same claims and revisions;
* it is not declared volatile;
* nobody asked for it to re-run (``rerun-from``, ADR 0019 §7): a suspect output is re-computed,
  whatever its inputs say.

If so, :func:`revalidate` writes a new decision that supersedes the fallen one — nothing is revived:
same output digest, same assumption and fact claims, the needs' current decisions, the same
artefacts — with the next attempt number, and one ``revalidated`` ledger entry whose words carry
both digests of each need that changed decision. No worker and no auditor is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextmesh.core.canonical import digest
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.core.model import Provenance
from contextmesh.execution.facts import fact_claims
from contextmesh.execution.grounding import about_claim
from contextmesh.execution.references import TaskGrounds, task_grounds
from contextmesh.execution.reports import RoundReport
from contextmesh.execution.run_reasons import reason_for
from contextmesh.execution.task import Task, TaskState
from contextmesh.execution.verdicts import AUTHOR, produced_artefacts

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = ["revalidate", "revalidation"]


def _previous_needs(graph: ContextGraph, decision_id: str) -> dict[str, str]:
    """Need task → the decision of it that ``decision_id`` depended on."""
    found: dict[str, str] = {}
    for edge in graph.out_edges(decision_id, ["depends_on"], live_only=False):
        target = graph.node(edge.dst)
        if target.type == "decision":
            found[str(target.attrs.get("task"))] = target.id
    return found


def _document_grounds_hold(graph: ContextGraph, task: Task, decision_id: str) -> TaskGrounds | None:
    """The task's document grounds now, when they are the ones its previous decision recorded."""
    grounds = task_grounds(graph, task.rests_on, task.about)
    if isinstance(grounds, str):
        return None
    if task.rests_on:
        rested = {
            e.dst
            for e in graph.out_edges(decision_id, ["derived_from"], live_only=False)
            if "fact_source" not in graph.node(e.dst).attrs
        }
        cited = {e.dst for e in graph.out_edges(decision_id, ["cites"], live_only=False)}
        if rested != set(grounds.grounds.claims) or cited != set(grounds.grounds.sources):
            return None
    return grounds


def revalidation(plan: Plan, task: Task) -> str | None:
    """Why ``task`` may keep its previous result this round (the ledger's words), or None: it runs."""
    graph = plan.graph
    old_id = task.decision_id
    if task.state is not TaskState.STALE or task.volatile or old_id is None or old_id not in graph:
        return None
    old = graph.node(old_id)
    if old.attrs.get("worker_key") != task.worker_key or old.attrs.get("output_digest") != digest(task.output):
        return None
    if graph.find_edge(old_id, "depends_on", task.assumption_id) is None:
        return None  # repaired onto new ground since: it must run on it
    previous = _previous_needs(graph, old_id)
    changed = []
    for need in task.needs:
        now_id, then_id = plan.tasks[need].decision_id, previous.get(need)
        if now_id is None or then_id is None or not graph.is_live(now_id):
            return None
        now, then = graph.node(now_id).attrs.get("output_digest"), graph.node(then_id).attrs.get("output_digest")
        if now is None or now != then:
            return None
        if now_id != then_id:
            changed.append(f"{need} now {str(now)[:16]}, was {str(then)[:16]}")
    if not all(graph.is_live(claim) for claim in fact_claims(plan, old_id)):
        return None
    if (task.rests_on or task.about) and _document_grounds_hold(graph, task, old_id) is None:
        return None
    why = reason_for(plan, task.name, plan.round)
    if why.kind == "requested":
        return None  # asked for by name: its own output is what is suspect, so unchanged inputs prove nothing
    reason = "output unchanged: " + ("; ".join(changed) if changed else "every input as it was")
    disproof = why.disproof
    if disproof is not None:
        reason += f"; after {disproof.said()}"
    return reason + "; previous result stands"


def revalidate(plan: Plan, task: Task, reason: str, report: RoundReport) -> None:
    """Keep ``task``'s result: a new decision supersedes its fallen one; one ``revalidated`` entry."""
    graph = plan.graph
    old_id = task.decision_id
    assert old_id is not None
    grounds = task_grounds(graph, task.rests_on, task.about)
    assert not isinstance(grounds, str)  # revalidation() checked it
    task.attempt += 1
    record = plan.decisions.decide(
        f"{task.name} ({plan.name})",
        rationale=task.rationale or f"task '{task.name}' of plan '{plan.name}' ran {task.worker_key or 'a callable'}",
        provenance=Provenance(source_id=plan.source_id, extractor=AUTHOR, recorded_at_build=graph.build),
        id=slug(f"{plan.name}|{task.name}|v{task.attempt}", "decision"),
        assumptions=[task.assumption_id],
        needs=[plan.tasks[n].decision_id for n in task.needs if plan.tasks[n].decision_id],  # type: ignore[misc]
        produces=produced_artefacts(graph, task),  # fallen ones revived: they come back with the decision
        rests_on=[*grounds.grounds.claims, *fact_claims(plan, old_id)],
        cites=grounds.grounds.sources,
        supersedes=old_id,
        attrs={
            "task": task.name,
            "plan": plan.name,
            "worker_key": task.worker_key,
            "attempt": task.attempt,
            "output_digest": digest(task.output),
            "revalidated": True,
        },
    )
    if grounds.entities:
        about_claim(plan, task, grounds.entities, record.id)
    task.decision_id = record.id
    task.state = TaskState.DONE
    task.error = None
    report.revalidated[task.name] = reason
    plan.ledger.record(
        "revalidated", round=plan.round, task=task.name, decision_id=record.id, key=task.worker_key, detail=reason
    )

"""Repairing several tasks that stood on one rejected assumption, committed through a session.

Two tasks that assume the same statement share one assumption node (``Assumptions.assume``
returns the existing record). When an auditor disproves it both fall; each is then repaired. The
graph written afterwards must load (supersession is two-sided in the graph file: an older record's
``superseded_by`` names exactly the record whose ``supersedes`` names it), the next round must run
the repaired work, and the ledger must verify after every reload.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextmesh.core.errors import ExecutionError
from contextmesh.core.graph import ContextGraph
from contextmesh.execution.context import AuditContext, RunContext, Verdict
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.session import Session

WORKER = "shared.work.v1"
AUDITOR = "shared.audit.v1"
GROUND = "the upstream contract holds"


def registry_over(false: set[str]) -> TaskRegistry:
    """A worker echoing its ground, an auditor disproving every statement in ``false``."""
    registry = TaskRegistry()

    def work(ctx: RunContext) -> dict[str, Any]:
        return {"task": ctx.task, "ground": ctx.assumption, "inputs": sorted(ctx.inputs)}

    def audit(ctx: AuditContext) -> Verdict:
        if ctx.assumption in false:
            return ctx.disproved(f"'{ctx.assumption}' no longer holds")
        return ctx.ok("holds")

    registry.register_worker(WORKER, work)
    registry.register_auditor(AUDITOR, audit)
    return registry


def new_session(directory: Path, registry: TaskRegistry) -> Session:
    """``first`` and ``second`` on one ground, ``joined`` needing both, ``apart`` on its own ground; round 1 run."""
    runner = Plan("shared-ground", ContextGraph(), registry=registry)
    runner.task("first", assumes=GROUND, worker_key=WORKER, auditor_key=AUDITOR)
    runner.task("second", assumes=GROUND, worker_key=WORKER, auditor_key=AUDITOR)
    runner.task("joined", assumes="joining is sound", worker_key=WORKER, needs=["first", "second"])
    runner.task("apart", assumes="an unrelated ground", worker_key=WORKER, auditor_key=AUDITOR)
    assert runner.tasks["first"].assumption_id == runner.tasks["second"].assumption_id, "one shared node"
    assert runner.run().executed == ["first", "second", "apart", "joined"]
    return Session.create(
        directory, Session(runner.graph, Resolver(), runner=runner, registry=registry, policy="never")
    )


def reload(directory: Path, registry: TaskRegistry) -> Session:
    session = Session.load(directory, registry=registry, policy="never")
    assert session.runner is not None and session.runner.ledger.verify()
    return session


def runner_of(session: Session) -> Plan:
    assert session.runner is not None
    return session.runner


def disprove_the_shared_ground(directory: Path, false: set[str], registry: TaskRegistry) -> None:
    false.add(GROUND)
    report = reload(directory, registry).apply(lambda s: runner_of(s).recheck())
    assert [i.assumption_id for i in report.invalidations] == [
        runner_of(reload(directory, registry)).tasks["first"].assumption_id
    ]
    assert runner_of(reload(directory, registry)).states() == {
        "first": "stale",
        "second": "stale",
        "joined": "stale",
        "apart": "done",
    }


REPLACEMENTS = {
    "one replacement": ("the upstream contract v2 holds", "the upstream contract v2 holds"),
    "two replacements": ("the upstream contract v2 holds", "the upstream mirror holds"),
}


@pytest.mark.parametrize("together", [True, False], ids=["one commit", "two commits"])
@pytest.mark.parametrize("grounds", list(REPLACEMENTS.values()), ids=list(REPLACEMENTS))
def test_repairing_two_tasks_on_one_rejected_ground_writes_a_graph_that_loads_and_runs(
    tmp_path: Path, grounds: tuple[str, str], together: bool
) -> None:
    false: set[str] = set()
    registry = registry_over(false)
    directory = tmp_path / "session"
    new_session(directory, registry)
    disprove_the_shared_ground(directory, false, registry)
    rejected = runner_of(reload(directory, registry)).tasks["first"].assumption_id

    repairs = list(zip(("first", "second"), grounds, strict=True))
    if together:
        reload(directory, registry).apply(lambda s: [runner_of(s).repair(t, assumes=g) for t, g in repairs])
    else:
        for task, ground in repairs:
            reload(directory, registry).apply(lambda s, t=task, g=ground: runner_of(s).repair(t, assumes=g))

    repaired = runner_of(reload(directory, registry))  # the graph file loads: supersession is two-sided
    assert {name: repaired.tasks[name].assumes for name in ("first", "second")} == dict(repairs)
    grounds_now = [repaired.graph.assumptions[repaired.tasks[name].assumption_id] for name in ("first", "second")]
    assert [g.status for g in grounds_now] == ["active", "active"]
    # The first repair takes the rejected ground's one successor; the second shares it or stands on its own.
    assert repaired.graph.assumptions[rejected].superseded_by == grounds_now[0].id
    assert [a.id for a in repaired.assumptions.lineage(grounds_now[0].id)] == [rejected, grounds_now[0].id]
    if grounds[0] == grounds[1]:
        assert grounds_now[1].id == grounds_now[0].id
    else:
        assert grounds_now[1].supersedes is None and grounds_now[1].superseded_by is None
    assert repaired.graph.assumptions[rejected].status == "rejected"
    replaced = [e.detail for e in repaired.ledger.entries if e.event == "repaired"]
    assert replaced == [f"now assumes '{g}' (replaces '{GROUND}')" for g in grounds]
    assert repaired.blocked() == {}

    report = reload(directory, registry).apply(lambda s: runner_of(s).run())
    assert report.executed == ["first", "second", "joined"]
    after = runner_of(reload(directory, registry))
    assert set(after.states().values()) == {"done"}
    assert after.graph.assumptions[rejected].status == "rejected", "a rejected ground never revives"
    assert after.ledger.verify()
    for name, ground in repairs:
        assert after.tasks[name].output["ground"] == ground


def test_a_second_repair_onto_the_first_tasks_replacement_reuses_its_node(tmp_path: Path) -> None:
    false: set[str] = set()
    registry = registry_over(false)
    directory = tmp_path / "session"
    new_session(directory, registry)
    disprove_the_shared_ground(directory, false, registry)
    replacement = "the upstream contract v2 holds"
    reload(directory, registry).apply(lambda s: runner_of(s).repair("first", assumes=replacement))
    reload(directory, registry).apply(lambda s: runner_of(s).repair("second", assumes=replacement))
    runner = runner_of(reload(directory, registry))
    assert runner.tasks["first"].assumption_id == runner.tasks["second"].assumption_id
    assert len([a for a in runner.graph.assumptions.values() if a.statement == replacement]) == 1


def test_a_second_task_cannot_be_repaired_back_onto_the_rejected_ground(tmp_path: Path) -> None:
    false: set[str] = set()
    registry = registry_over(false)
    directory = tmp_path / "session"
    new_session(directory, registry)
    disprove_the_shared_ground(directory, false, registry)
    reload(directory, registry).apply(lambda s: runner_of(s).repair("first", assumes="the upstream contract v2 holds"))
    runner = runner_of(reload(directory, registry))
    before = runner.graph.assumptions.copy()
    with pytest.raises(ExecutionError, match="that assumption is rejected"):
        runner.repair("second", assumes=GROUND)
    assert runner.graph.assumptions == before and runner.tasks["second"].assumes == GROUND

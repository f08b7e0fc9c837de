"""The execute walk-through: round 1, an advisory, a recheck that discovers it, repair, round 3.

There is one script (:func:`walk_through`) and several places its steps can run, each a
:class:`PlanSteps`: a plan in this process's memory (:class:`InMemorySteps`), a saved session with
every step committed through it (:class:`SessionSteps`), or Prefect flow runs over a session
directory (``contextmesh.orchestration.flow_steps.FlowRunSteps``, which knows nothing of the demo;
the command line joins the two). The script returns plain data that the CLI renders in the seed's
transcript shape; what differs between the places is only where the work ran.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from contextmesh import (
    Assumptions,
    ContextGraph,
    Executor,
    NodeRecord,
    NoPlanError,
    Plan,
    RecheckReport,
    RoundReport,
    Session,
    TaskRegistry,
)
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, PLAN_NAME, declare_plan, publish, register_demo
from contextmesh.demo.saved import default_feed

__all__ = [
    "REPAIR_GROUND",
    "InMemorySteps",
    "PlanSteps",
    "SessionSteps",
    "Walkthrough",
    "produced",
    "run_session_walkthrough",
    "run_walkthrough",
    "walk_through",
]

REPAIR_GROUND = "bcrypt has no open advisory"


class PlanSteps(Protocol):
    """What the walk-through asks of the place its plan runs in."""

    def plan(self) -> Plan:
        """The plan as it stands now (after every step so far)."""
        ...

    def run_round(self) -> RoundReport:
        """Run one round: every pending, stale or failed task whose ground stands."""
        ...

    def recheck(self) -> RecheckReport:
        """Ask every standing task's auditor whether its ground still holds; execute nothing."""
        ...

    def repair(self, task: str, *, assumes: str, worker_key: str, produces: Sequence[str]) -> None:
        """Put a fallen task on new ground, under a new worker key."""
        ...

    def resume(self) -> RoundReport:
        """Run the round after a repair: only what is stale or pending."""
        ...


@dataclass
class Walkthrough:
    """Everything the transcript shows, as engine objects."""

    runner: Plan
    first: RoundReport
    recheck: RecheckReport
    third: RoundReport
    feed: Path
    lineage: list[dict[str, Any]] = field(default_factory=list)
    declared: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        graph = self.runner.graph
        artefacts = produced(graph)
        return {
            "plan": self.runner.name,
            "declared": self.declared,
            "tasks": {
                t.name: {"worker_key": t.worker_key, "assumes": t.assumes, "state": t.state.value}
                for t in self.runner.tasks.values()
            },
            "rounds": [self.first.to_dict(), self.recheck.to_dict(), self.third.to_dict()],
            "artefacts": {
                "live": [n.label for n in artefacts if n.live],
                "gone": [n.label for n in artefacts if not n.live],
            },
            "lineage": self.lineage,
            "ledger": {
                "entries": len(self.runner.ledger),
                "head": self.runner.ledger.head,
                "verified": self.runner.ledger.verify(),
            },
            "receipts": self.runner.ledger.receipts(),
            "nodes": len(graph),
            "edges": len(graph.edges),
        }


def produced(graph: ContextGraph) -> list[NodeRecord]:
    """The plan's artefacts: entities some decision produces, in insertion order."""
    return [n for n in graph.by_type("entity", live_only=False) if graph.in_edges(n.id, ("produces",), live_only=False)]


def walk_through(steps: PlanSteps, feed: Path) -> Walkthrough:
    """The script: round 1 (unless the plan already ran it), publish, recheck, repair to bcrypt, resume.

    A plan whose ``hashing`` task already moved to bcrypt has nothing left to discover: it just runs
    one more round.
    """
    plan = steps.plan()
    declared = [
        {"name": t.name, "worker_key": t.worker_key, "assumes": t.assumes, "needs": list(t.needs)}
        for t in plan.tasks.values()
    ]
    if plan.round == 0:
        first = steps.run_round()
    else:  # a saved session ran round 1 already: its done tasks stand as they are
        first = RoundReport(plan.round, cached=[t.name for t in plan.tasks.values() if t.state.value == "done"])
    if plan.tasks["hashing"].worker_key == DEFAULT_KEYS["argon2"]:
        publish(feed, "argon2-cffi", ADVISORY_TEXT)
        recheck = steps.recheck()
        steps.repair("hashing", assumes=REPAIR_GROUND, worker_key=DEFAULT_KEYS["bcrypt"], produces=["password hasher"])
    else:
        recheck = RecheckReport(first.round)
    third = steps.resume()
    final = steps.plan()
    lineage = [
        {"id": r.id, "version": r.version, "status": r.status, "statement": r.statement}
        for r in Assumptions(final.graph).lineage(final.tasks["hashing"].assumption_id)
    ]
    return Walkthrough(final, first, recheck, third, feed, lineage, declared)


class InMemorySteps:
    """The steps on a plan in this process's memory; nothing is written anywhere."""

    def __init__(self, plan: Plan) -> None:
        self._plan = plan

    def plan(self) -> Plan:
        """The plan itself."""
        return self._plan

    def run_round(self) -> RoundReport:
        """``Plan.run()``."""
        return self._plan.run()

    def recheck(self) -> RecheckReport:
        """``Plan.recheck()``."""
        return self._plan.recheck()

    def repair(self, task: str, *, assumes: str, worker_key: str, produces: Sequence[str]) -> None:
        """``Plan.repair(...)``."""
        self._plan.repair(task, assumes=assumes, worker_key=worker_key, produces=produces)

    def resume(self) -> RoundReport:
        """``Plan.run(include_failed=False)``."""
        return self._plan.run(include_failed=False)


class SessionSteps:
    """The steps on a saved session's plan, each one committed through the session (``Session.apply``)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def plan(self) -> Plan:
        """The session's plan, as of its last commit."""
        return _plan_of(self.session)

    def run_round(self) -> RoundReport:
        """One round, committed."""
        return self.session.apply(lambda s: _plan_of(s).run())

    def recheck(self) -> RecheckReport:
        """One recheck, committed."""
        return self.session.apply(lambda s: _plan_of(s).recheck())

    def repair(self, task: str, *, assumes: str, worker_key: str, produces: Sequence[str]) -> None:
        """One repair, committed."""
        self.session.apply(
            lambda s: _plan_of(s).repair(task, assumes=assumes, worker_key=worker_key, produces=produces)
        )

    def resume(self) -> RoundReport:
        """The round after the repair, committed."""
        return self.session.apply(lambda s: _plan_of(s).run(include_failed=False))


def _plan_of(session: Session) -> Plan:
    if session.runner is None:
        raise NoPlanError(session.directory or "this session", "create one with `session save`")
    return session.runner


def run_walkthrough(
    *, feed: Path | None = None, executor: Executor | None = None, registry: TaskRegistry | None = None
) -> Walkthrough:
    """The demo plan from nothing, in memory: round 1, publish, recheck, repair to bcrypt, round 3."""
    feed = feed or Path(tempfile.mkdtemp(prefix="contextmesh-feed-")) / "advisories.json"
    if registry is None:
        registry = TaskRegistry()
        register_demo(registry, feed=feed)
    plan = Plan(PLAN_NAME, ContextGraph(), registry=registry, executor=executor)
    declare_plan(plan)
    return walk_through(InMemorySteps(plan), feed)


def run_session_walkthrough(
    session: Session, *, feed: Path | None = None, executor: Executor | None = None
) -> Walkthrough:
    """The same walk-through on a saved session's plan, each step committed through the session.

    A session saved by ``session save`` has run round 1; this publishes the advisory, rechecks,
    repairs to bcrypt and runs the next round. A session whose plan was already repaired just
    runs one more round (resume).
    """
    plan = _plan_of(session)
    if executor is not None:
        plan.executor = executor
    return walk_through(SessionSteps(session), feed or default_feed())

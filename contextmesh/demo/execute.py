"""The execute walk-through: round 1, an advisory, a recheck that discovers it, repair, round 3.

``run_walkthrough`` drives the demo plan end to end and returns plain data; the CLI renders it in
the seed's transcript shape. It is the same engine a deployment runs; only the executor differs
(in-process here unless one is passed in).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextmesh.belief.assumptions import Assumptions
from contextmesh.core.errors import ExecutionError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import NodeRecord
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, PLAN_NAME, declare_plan, publish, register_demo
from contextmesh.execution.in_process import Executor
from contextmesh.execution.plan import Plan, RecheckReport, RoundReport
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.session.session import Session

__all__ = ["REPAIR_GROUND", "Walkthrough", "produced", "run_session_walkthrough", "run_walkthrough"]

REPAIR_GROUND = "bcrypt has no open advisory"


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


def run_walkthrough(
    *, feed: Path | None = None, executor: Executor | None = None, registry: TaskRegistry | None = None
) -> Walkthrough:
    """Run the demo plan: round 1, publish, recheck, repair to bcrypt, round 3."""
    feed = feed or Path(tempfile.mkdtemp(prefix="contextmesh-feed-")) / "advisories.json"
    if registry is None:
        registry = TaskRegistry()
        register_demo(registry, feed=feed)
    runner = Plan(PLAN_NAME, ContextGraph(), registry=registry, executor=executor)
    declare_plan(runner)
    declared = [
        {"name": t.name, "worker_key": t.worker_key, "assumes": t.assumes, "needs": list(t.needs)}
        for t in runner.tasks.values()
    ]
    first = runner.run()
    publish(feed, "argon2-cffi", ADVISORY_TEXT)
    recheck = runner.recheck()
    runner.repair("hashing", assumes=REPAIR_GROUND, worker_key=DEFAULT_KEYS["bcrypt"], produces=["password hasher"])
    third = runner.run()
    ledger = Assumptions(runner.graph)
    lineage = [
        {"id": r.id, "version": r.version, "status": r.status, "statement": r.statement}
        for r in ledger.lineage(runner.tasks["hashing"].assumption_id)
    ]
    return Walkthrough(runner, first, recheck, third, feed, lineage, declared)


def run_session_walkthrough(
    session: Session, *, feed: Path | None = None, executor: Executor | None = None
) -> Walkthrough:
    """The same walk-through on a saved session's plan, each step committed through the session.

    A session saved by ``session save`` has run round 1; this publishes the advisory, rechecks,
    repairs to bcrypt and runs the next round. A session whose plan was already repaired just
    runs one more round (resume).
    """
    from contextmesh.demo.saved import default_feed  # noqa: PLC0415 - a sibling module, imported late

    runner = session.runner
    if runner is None:
        raise ExecutionError(f"{session.directory} holds no execution plan; create one with `session save`")
    if executor is not None:
        runner.executor = executor
    feed = feed or default_feed()
    declared = [
        {"name": t.name, "worker_key": t.worker_key, "assumes": t.assumes, "needs": list(t.needs)}
        for t in runner.tasks.values()
    ]
    first = RoundReport(runner.round, cached=[t.name for t in runner.tasks.values() if t.state.value == "done"])
    hashing = runner.tasks["hashing"]
    if hashing.worker_key == DEFAULT_KEYS["argon2"]:
        publish(feed, "argon2-cffi", ADVISORY_TEXT)
        recheck = session.apply(lambda s: s.runner.recheck())  # type: ignore[union-attr]
        session.apply(
            lambda s: s.runner.repair(  # type: ignore[union-attr]
                "hashing", assumes=REPAIR_GROUND, worker_key=DEFAULT_KEYS["bcrypt"], produces=["password hasher"]
            )
        )
    else:
        recheck = RecheckReport(runner.round)
    third = session.apply(lambda s: s.runner.run())  # type: ignore[union-attr]
    runner = session.runner
    assert runner is not None
    lineage = [
        {"id": r.id, "version": r.version, "status": r.status, "statement": r.statement}
        for r in Assumptions(runner.graph).lineage(runner.tasks["hashing"].assumption_id)
    ]
    return Walkthrough(runner, first, recheck, third, feed, lineage, declared)

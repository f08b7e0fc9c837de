"""The execute walk-through with every round a Prefect flow run, over a session directory.

``run_walkthrough_on_prefect(session_dir, feed)`` drives the same steps as the in-process demo
(``contextmesh.demo.execute``), each committed through the session:

1. a new directory gets the demo session with its plan declared and nothing run
   (:func:`create_demo_session`), and round 1 runs as a plan flow run;
2. the advisory is published to the feed;
3. the recheck runs as a recheck flow run (its auditor disproves the Argon2 ground);
4. ``hashing`` is repaired onto bcrypt — an engine call, committed by compare-and-swap;
5. round 3 runs as a plan flow run in resume mode: only the stale closure executes.

A session that already ran round 1 skips step 1; one already repaired runs one more round. The
result is the in-process :class:`~contextmesh.demo.execute.Walkthrough` plus each flow run's id and
UI URL by round, so the CLI can print where to watch them. It needs a Prefect API configured
(``ensure_server`` or the test fixture) and waits until the server has recorded every task run.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect.settings import PREFECT_API_URL

from contextmesh.belief.assumptions import Assumptions
from contextmesh.core.errors import ExecutionError
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, PLAN_NAME, declare_plan, publish
from contextmesh.demo.execute import REPAIR_GROUND, Walkthrough
from contextmesh.demo.knowledge import build_world
from contextmesh.demo.saved import DEMO_CORPUS, default_feed, demo_registry, open_demo_session
from contextmesh.execution.plan import Plan, RecheckReport, RoundReport
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.orchestration.flow_bodies import (
    make_plan_flow,
    make_recheck_flow,
    recheck_report_from,
    round_report_from,
)
from contextmesh.orchestration.local_server import wait_recorded
from contextmesh.session.commit import latest_generation
from contextmesh.session.session import Session

__all__ = ["PrefectWalkthrough", "create_demo_session", "flow_run_url", "run_walkthrough_on_prefect"]


@dataclass
class PrefectWalkthrough(Walkthrough):
    """The walk-through, plus where each round ran on Prefect."""

    session_dir: Path | None = None
    flow_runs: dict[int, str] = field(default_factory=dict)
    urls: dict[int, str] = field(default_factory=dict)
    task_runs: dict[int, int] = field(default_factory=dict)
    recorded: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The in-process document plus the flow runs by round."""
        data = super().to_dict()
        data["session_dir"] = None if self.session_dir is None else str(self.session_dir)
        data["flow_runs"] = {
            str(r): {"id": fid, "url": self.urls.get(r), "task_runs": self.task_runs.get(r)}
            for r, fid in self.flow_runs.items()
        }
        return data


def flow_run_url(flow_run_id: str, api_url: str | None = None) -> str:
    """Where a person watches a flow run in the UI of the configured server."""
    api = str(api_url or PREFECT_API_URL.value() or "")
    return f"{api.removesuffix('/').removesuffix('/api')}/runs/flow-run/{flow_run_id}"


def create_demo_session(directory: Path, *, feed: Path, rounds: int = 8) -> Session:
    """The demo as a new session: walk rounds, the plan declared, no plan round run yet."""
    world = build_world(rounds)
    registry = demo_registry(feed)
    runner = Plan(PLAN_NAME, world.graph, registry=registry)
    declare_plan(runner)
    session = Session(
        world.graph,
        world.result.resolver,
        walk_rounds=world.walk_rounds,
        corpus=DEMO_CORPUS,
        runner=runner,
        registry=registry,
        flat=world.walker.flat,
    )
    return Session.create(directory, session)


def _repair(session: Session) -> None:
    def mutate(s: Session) -> None:
        if s.runner is None:
            raise ExecutionError(f"{s.directory} holds no execution plan")
        s.runner.repair(
            "hashing", assumes=REPAIR_GROUND, worker_key=DEFAULT_KEYS["bcrypt"], produces=["password hasher"]
        )

    session.apply(mutate)


def run_walkthrough_on_prefect(
    session_dir: Path | None,
    feed: Path | None = None,
    *,
    registry: TaskRegistry | None = None,
    max_workers: int = 4,
    record_timeout: float = 30.0,
) -> PrefectWalkthrough:
    """Round 1, the advisory, the recheck, the repair and round 3 — each round a Prefect flow run."""
    directory = session_dir or Path(tempfile.mkdtemp(prefix="contextmesh-session-"))
    feed = feed or (default_feed() if session_dir is not None else directory.parent / f"{directory.name}-feed.json")
    registry = registry or demo_registry(feed)
    plan_flow = make_plan_flow(registry, max_workers=max_workers)
    recheck_flow = make_recheck_flow(registry, max_workers=max_workers)
    if not directory.exists() or latest_generation(directory) == 0:
        create_demo_session(directory, feed=feed)
    flow_runs: dict[int, str] = {}
    task_runs: dict[int, int] = {}

    def note(result: dict[str, Any]) -> None:
        flow_runs[int(result["round"])] = str(result["flow_run_id"])
        task_runs[int(result["round"])] = int(result["task_runs"])

    session = open_demo_session(directory, feed=feed)
    runner = session.runner
    if runner is None:
        raise ExecutionError(f"{directory} holds no execution plan")
    declared = [
        {"name": t.name, "worker_key": t.worker_key, "assumes": t.assumes, "needs": list(t.needs)}
        for t in runner.tasks.values()
    ]
    if runner.round == 0:
        result = plan_flow(session_dir=str(directory), mode="run")
        note(result)
        first = round_report_from(result["report"])
    else:
        first = RoundReport(runner.round, cached=[t.name for t in runner.tasks.values() if t.state.value == "done"])
    if runner.tasks["hashing"].worker_key == DEFAULT_KEYS["argon2"]:
        publish(feed, "argon2-cffi", ADVISORY_TEXT)
        result = recheck_flow(session_dir=str(directory))
        note(result)
        recheck = recheck_report_from(result["report"])
        _repair(open_demo_session(directory, feed=feed))
    else:
        recheck = RecheckReport(runner.round)
    result = plan_flow(session_dir=str(directory), mode="resume")
    note(result)
    third = round_report_from(result["report"])
    final = open_demo_session(directory, feed=feed)
    assert final.runner is not None
    lineage = [
        {"id": r.id, "version": r.version, "status": r.status, "statement": r.statement}
        for r in Assumptions(final.runner.graph).lineage(final.runner.tasks["hashing"].assumption_id)
    ]
    api = str(PREFECT_API_URL.value() or "")
    recorded = wait_recorded(api, list(flow_runs.values()), sum(task_runs.values()), timeout=record_timeout)
    return PrefectWalkthrough(
        final.runner,
        first,
        recheck,
        third,
        feed,
        lineage,
        declared,
        session_dir=directory,
        flow_runs=flow_runs,
        urls={r: flow_run_url(fid, api) for r, fid in flow_runs.items()},
        task_runs=task_runs,
        recorded=recorded,
    )

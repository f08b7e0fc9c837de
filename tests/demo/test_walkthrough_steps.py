"""One walk-through script, many places to run it: the script's calls on the steps interface."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from contextmesh import ContextGraph, Plan, RecheckReport, RoundReport
from contextmesh.demo.auth import DEFAULT_KEYS, PLAN_NAME, declare_plan
from contextmesh.demo.execute import InMemorySteps, PlanSteps, SessionSteps, walk_through
from contextmesh.demo.saved import demo_registry, open_demo_session, save_demo_session
from contextmesh.formats.graph_file import dump_graph


class Recording:
    """A PlanSteps that records what the script asked of it, then does it in memory."""

    def __init__(self, inner: PlanSteps) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def plan(self) -> Plan:
        self.calls.append("plan")
        return self.inner.plan()

    def run_round(self) -> RoundReport:
        self.calls.append("run_round")
        return self.inner.run_round()

    def recheck(self) -> RecheckReport:
        self.calls.append("recheck")
        return self.inner.recheck()

    def repair(self, task: str, *, assumes: str, worker_key: str, produces: Sequence[str]) -> None:
        self.calls.append(f"repair {task} -> {worker_key}")
        self.inner.repair(task, assumes=assumes, worker_key=worker_key, produces=produces)

    def resume(self) -> RoundReport:
        self.calls.append("resume")
        return self.inner.resume()


def _fresh_plan(feed: Path) -> Plan:
    plan = Plan(PLAN_NAME, ContextGraph(), registry=demo_registry(feed))
    declare_plan(plan)
    return plan


def test_a_fresh_plan_runs_every_step_in_order(tmp_path: Path) -> None:
    steps = Recording(InMemorySteps(_fresh_plan(tmp_path / "feed.json")))
    walk = walk_through(steps, tmp_path / "feed.json")
    assert steps.calls == [
        "plan",
        "run_round",
        "recheck",
        f"repair hashing -> {DEFAULT_KEYS['bcrypt']}",
        "resume",
        "plan",
    ]
    assert (walk.first.round, walk.recheck.round, walk.third.round) == (1, 2, 3)
    assert walk.third.executed == ["hashing", "routes", "rate_limit"]


def test_a_plan_already_repaired_only_runs_one_more_round(tmp_path: Path) -> None:
    feed = tmp_path / "feed.json"
    plan = _fresh_plan(feed)
    walk_through(InMemorySteps(plan), feed)
    steps = Recording(InMemorySteps(plan))
    again = walk_through(steps, feed)
    assert steps.calls == ["plan", "resume", "plan"]
    assert again.first.cached == ["schema", "hashing", "tokens", "routes", "rate_limit"]
    assert again.recheck == RecheckReport(3)
    assert again.third.round == 4 and again.third.executed == []


def test_a_saved_session_skips_round_one_and_commits_every_step(tmp_path: Path) -> None:
    feed = tmp_path / "feed.json"
    save_demo_session(tmp_path / "session", rounds=0, feed=feed)
    session = open_demo_session(tmp_path / "session", feed=feed)
    steps = Recording(SessionSteps(session))
    walk_through(steps, feed)
    assert steps.calls == ["plan", "recheck", f"repair hashing -> {DEFAULT_KEYS['bcrypt']}", "resume", "plan"]
    reloaded = open_demo_session(tmp_path / "session", feed=feed)
    assert reloaded.generation == 4  # recheck, repair and the round each committed
    assert dump_graph(reloaded.graph) == dump_graph(session.graph)

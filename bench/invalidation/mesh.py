"""The ContextMesh contender: the plan as a session, run and rerun by the Prefect flows.

Every task is declared on a :class:`~contextmesh.execution.plan.Plan` with the statement it
assumes (``fact <f> is <v>``, or ``fact <f> is in 30..39`` for a fact read in buckets; shared by
every task declaring the same fact), the tasks it needs and one artefact; one registered worker
key runs :func:`invalidation.world.evaluate` for the task named in its context, and the first task
declaring each fact carries the fact auditor. The auditor declares what it watches, as
``docs/api.md`` tells a user to (ADR 0019): a fingerprint of the submitted observations of *its*
fact, so a recheck runs only the auditors of facts something was observed about.

A world change is rerun the way an agent would: the changed facts are **submitted as evidence**
(raw observations, :func:`contextmesh.belief.evidence.submit`), the **recheck flow** runs the standing
auditors, each of which disproves its ground by citing the observation that contradicts it, the
tasks whose ground was rejected are **repaired** onto ``fact <f> is <new value>`` (an engine call,
committed by compare-and-swap; skipped when the recheck disproved nothing, as an agent reading
its report would), and the **plan flow resumes**: only the stale tasks execute.

Early cutoff is on (ADR 0018): a stale task whose inputs come back unchanged is revalidated, not
re-run. A second session declares the same plan with workers that make their undeclared read
through ``ctx.read`` (the *tracked* variant of case (b)): the resume's round re-reads those facts
and re-runs exactly their readers. A third states every coarse fact's ground at its exact value
(the *exact* variant of case (c), the formulation before ADR 0026): a move inside the bucket
disproves it, the declarers re-run to their old outputs, and early cutoff revalidates their
dependents.

What it reports besides the counts: whether every task that fell carries a reason chain starting
at its rejected assumption (or, for a tracked read, at the fact), and whether the session's run
ledger — with the disproof receipts in it — verifies under ``tools/verify_runledger.py`` (stdlib
only) at the head the manifest names.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextmesh.belief.evidence import submit
from contextmesh.core.graph import ContextGraph
from contextmesh.execution.context import AuditContext, RunContext, Verdict
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.execution.watch import WatchContext
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.commit import latest_generation
from contextmesh.session.layout import manifest_name
from contextmesh.session.session import Session
from invalidation.world import WorldPlan, evaluate, ground, parse_statement

PLAN = "invalidation-bench"
WORKER_KEY = "bench.invalidation.work.v1"
TRACKED_WORKER_KEY = "bench.invalidation.work-tracked.v1"
AUDITOR_KEY = "bench.invalidation.audit-fact.v1"
BLIND_AUDITOR_KEY = "bench.invalidation.audit-fact-blind.v1"  # the same auditor, declaring nothing
FACT_SOURCE = "bench.invalidation.world.v1"
VERIFIER = Path(__file__).resolve().parents[2] / "tools" / "verify_runledger.py"


class Calls:
    """Which task functions actually ran (thread-safe; the flows run workers on a pool)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.names: list[str] = []

    def add(self, name: str) -> None:
        with self._lock:
            self.names.append(name)

    def take(self) -> list[str]:
        """The names recorded since the last take, and forget them."""
        with self._lock:
            names, self.names = self.names, []
        return names


def worker(plan: WorldPlan, world: Mapping[str, int], calls: Calls, delay: float) -> Callable[[RunContext], Any]:
    """The registered worker: the task function of the task named in the context, on the live world."""

    def work(ctx: RunContext) -> dict[str, str]:
        time.sleep(delay)
        calls.add(ctx.task)
        return evaluate(plan.spec(ctx.task), world, dict(ctx.inputs))

    return work


class _ThroughContext(Mapping[str, int]):
    """The world as a worker sees it through ``ctx.read``: each lookup is a tracked read."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def __getitem__(self, fact: str) -> int:
        value: int = self.ctx.read(FACT_SOURCE, fact)
        return value

    def __iter__(self) -> Any:
        raise TypeError("a tracked world is read fact by fact")

    def __len__(self) -> int:
        raise TypeError("a tracked world is read fact by fact")


def tracked_worker(
    plan: WorldPlan, world: Mapping[str, int], calls: Calls, delay: float
) -> Callable[[RunContext], Any]:
    """The same task function, its undeclared read made through ``ctx.read`` (the declared one is the
    task's assumption, which the auditor checks, so it stays a plain read)."""

    def work(ctx: RunContext) -> dict[str, str]:
        time.sleep(delay)
        calls.add(ctx.task)
        return evaluate(plan.spec(ctx.task), world, dict(ctx.inputs), undeclared_world=_ThroughContext(ctx))

    return work


def _observations(fact: str, evidence: Any) -> list[Any]:
    return [e for e in evidence if e.metadata.get("kind") == "fact" and e.metadata.get("fact") == fact]


def fact_auditor(ctx: AuditContext) -> Verdict:
    """Disprove ``fact <f> is <v>`` (or ``is in <lo>..<hi>``) by citing a submitted observation of
    ``f`` at a value the statement does not allow."""
    fact, low, high = parse_statement(ctx.assumption)
    for evidence in _observations(fact, ctx.evidence):
        value = evidence.metadata.get("value")
        if not (isinstance(value, int) and low <= value <= high):
            allowed = str(low) if low == high else f"in {low}..{high}"
            return ctx.disproved(f"{fact} was observed at {value}, not {allowed}", cite=evidence.id)
    return ctx.ok(f"no observation contradicts {ctx.assumption.removeprefix('fact ')}")


def watched_observations(ctx: WatchContext) -> str:
    """What the fact auditor reads, as a fingerprint: the ids of the observations of its fact."""
    fact, _, _ = parse_statement(ctx.assumption)
    return ",".join(e.id for e in _observations(fact, ctx.evidence))


def registry_for(plan: WorldPlan, world: Mapping[str, int], calls: Calls, delay: float) -> TaskRegistry:
    """The deployment's table for this plan: the worker (plain and tracked), the fact auditor and
    the world as a fact source."""
    registry = TaskRegistry()
    registry.register_worker(WORKER_KEY, worker(plan, world, calls, delay))
    registry.register_worker(TRACKED_WORKER_KEY, tracked_worker(plan, world, calls, delay))
    registry.register_auditor(AUDITOR_KEY, fact_auditor, watches=watched_observations)
    registry.register_auditor(BLIND_AUDITOR_KEY, fact_auditor)
    registry.register_fact(FACT_SOURCE, lambda fact: world[fact])
    return registry


def stated_ground(plan: WorldPlan, name: str, world: Mapping[str, int], *, exact: bool = False) -> str:
    """The ground task ``name`` declares on ``world``: at the granularity it reads, or (``exact``)
    at the exact value even for a coarse fact."""
    spec = plan.spec(name)
    return ground(spec.fact, world[spec.fact], coarse=spec.coarse and not exact)


def declare(runner: Plan, plan: WorldPlan, *, tracked: bool = False, blind: bool = False, exact: bool = False) -> None:
    """Declare every task of ``plan`` on ``runner`` with the same dependency information the plain
    contender gets: its assumption (one fact, at the granularity the task reads it) and its needs.
    ``tracked``: the workers make their undeclared reads through ``ctx.read``, which the engine
    records (the plain contender has no way to). ``blind``: the auditors declare nothing they watch.
    ``exact``: a coarse fact's ground is stated at its exact value, not its bucket."""
    audited: set[str] = set()
    for spec in plan.tasks:
        runner.task(
            spec.name,
            assumes=stated_ground(plan, spec.name, plan.world, exact=exact),
            worker_key=TRACKED_WORKER_KEY if tracked else WORKER_KEY,
            auditor_key=None if spec.fact in audited else BLIND_AUDITOR_KEY if blind else AUDITOR_KEY,
            needs=spec.needs,
            produces=[f"artefact of {spec.name}"],
        )
        audited.add(spec.fact)


def create_session(
    directory: Path,
    plan: WorldPlan,
    registry: TaskRegistry,
    *,
    tracked: bool = False,
    blind: bool = False,
    exact: bool = False,
) -> None:
    """A new session directory holding the declared plan (nothing run)."""
    runner = Plan(PLAN, ContextGraph(), registry=registry)
    declare(runner, plan, tracked=tracked, blind=blind, exact=exact)
    Session.create(directory, Session(runner.graph, Resolver(), runner=runner, registry=registry))


def served(directory: Path, registry: TaskRegistry) -> dict[str, Any]:
    """Every task's output as the session holds it now."""
    session = Session.load(directory, registry=registry)
    assert session.runner is not None
    return {name: task.output for name, task in session.runner.tasks.items()}


@dataclass
class MeshRerun:
    """One rerun of a world change by the ContextMesh contender."""

    executed: list[str]
    served: dict[str, Any]
    fallen: list[str]
    explained: int
    receipts: int
    ledger_ok: bool
    ledger_message: str
    seconds: dict[str, float] = field(default_factory=dict)
    task_runs: int = 0
    cpu: float = 0.0
    revalidated: int = 0
    fact_fallen: int = 0
    fact_explained: int = 0

    @property
    def wall(self) -> float:
        """Evidence to resumed: the whole rerun."""
        return sum(self.seconds.values())


def verify_ledger(directory: Path) -> tuple[bool, str, dict[str, Any]]:
    """Run the stdlib verifier on the newest generation's run ledger, at the head its manifest names."""
    manifest = json.loads((directory / manifest_name(latest_generation(directory))).read_text())
    ledger_file = directory / manifest["runledger"]["name"]
    done = subprocess.run(
        [sys.executable, str(VERIFIER), str(ledger_file), "--expect-head", manifest["ledger_head"]],
        capture_output=True,
        text=True,
        check=False,
    )
    message = (done.stdout or done.stderr).strip()
    return done.returncode == 0, message, json.loads(ledger_file.read_text())


def rerun(
    directory: Path,
    plan: WorldPlan,
    world: Mapping[str, int],
    change: Mapping[str, int],
    registry: TaskRegistry,
    calls: Calls,
    flows: tuple[Any, Any],
    quiet: Callable[[str, int], None],
    clock: Callable[[], float] = time.process_time,
    *,
    exact: bool = False,
) -> MeshRerun:
    """Evidence → recheck flow (disproof) → repair → resume flow, on a session already run once.

    ``world`` must already hold the changed values; ``quiet(flow_run_id, task_runs)`` waits until
    the server has recorded a flow run, so each step is timed from a quiet client. ``clock`` gives
    CPU seconds; the rerun's CPU (evidence to the resume recorded) is ``MeshRerun.cpu``. ``exact``:
    the session states coarse grounds exactly (:func:`declare`), and the repair does too.
    """
    plan_flow, recheck_flow = flows
    calls.take()
    seconds: dict[str, float] = {}
    session = Session.load(directory, registry=registry)
    assert session.runner is not None
    before = {name: task.decision_id for name, task in session.runner.tasks.items()}

    def observe(s: Session) -> None:
        assert s.runner is not None
        for fact, value in sorted(change.items()):
            submit(
                s.graph,
                f"fact {fact} observed at {value}",
                s.runner.source_id,
                metadata={"kind": "fact", "fact": fact, "value": value},
            )

    cpu = clock()
    start = time.perf_counter()
    session.apply(observe)
    seconds["evidence"] = time.perf_counter() - start
    start = time.perf_counter()
    checked = recheck_flow(session_dir=str(directory))
    seconds["recheck"] = time.perf_counter() - start
    quiet(checked["flow_run_id"], checked["task_runs"])

    def repair(s: Session) -> None:
        runner = s.runner
        assert runner is not None
        for name, task in runner.tasks.items():
            if runner.graph.assumptions[task.assumption_id].status != "active":
                runner.repair(name, assumes=stated_ground(plan, name, world, exact=exact))

    start = time.perf_counter()
    if checked["report"]["invalidations"]:  # only a disproof rejects a ground: with none, nothing to repair
        session = Session.load(directory, registry=registry)
        session.apply(repair)
    seconds["repair"] = time.perf_counter() - start
    start = time.perf_counter()
    resumed = plan_flow(session_dir=str(directory), mode="resume")
    seconds["resume"] = time.perf_counter() - start
    quiet(resumed["flow_run_id"], resumed["task_runs"])
    cpu = clock() - cpu
    executed = calls.take()
    assert sorted(executed) == sorted(resumed["executed"]), "the worker calls are the resume's executed tasks"
    fallen = list(checked["stale"])
    chains: dict[str, list[str]] = {}
    for invalidation in checked["report"]["invalidations"]:
        chains.update(invalidation["invalidated"])
    explained = sum(
        1
        for name in fallen
        if before[name] in chains and chains[before[name]] and chains[before[name]][0].startswith("assumption(")
    )
    ok, message, ledger = verify_ledger(directory)
    receipts = sum(1 for entry in ledger["entries"] if entry["event"] == "disproved" and entry["receipt"])
    # Tasks that fell at the resume's start because a fact they read through ctx.read changed.
    by_fact = [
        e
        for e in ledger["entries"]
        if e["event"] == "invalidated" and e["round"] == resumed["round"] and e["task"] is not None
    ]
    return MeshRerun(
        executed,
        served(directory, registry),
        fallen,
        explained,
        receipts,
        ok,
        message,
        seconds,
        checked["task_runs"] + resumed["task_runs"],
        cpu,
        len(resumed["report"].get("revalidated", {})),
        len(by_fact),
        sum(1 for e in by_fact if e["detail"].startswith(f"fact {FACT_SOURCE}:")),
    )

"""Rechecks that cost what changed: the 1,000-task plan with 1,000 watching auditors on a real Prefect server.

    .venv/bin/python bench/recheck_cost.py [--tasks 1000] [--layers 20] [--assumptions 50] [--width 8]
                                           [--delay-ms 20] [--stale 0.05] [--seed 0] [--repeat 2] [--api-url URL]

The plan is ``bench/orchestration.py``'s (same generator, same seed, every later task on its own
ground), but **every** task has an auditor, and every auditor declares what it watches
(``watches=``): the version of the one statement its task assumes, in a world dict the bench
holds. Per repeat, on a new session:

1. the full plan flow (every worker and every audit a task run);
2. one watched slice changes: the chosen column's root statement gets a new version and is false;
3. the recheck flow — only the auditor whose slice changed runs as a task run, and disproves; the
   ~5 % closure goes stale;
4. the root is repaired (an engine call, committed), and the plan flow resumes the stale closure;
5. a full recheck flow (``full=True``: every standing auditor a task run), for comparison.

Each step starts once the server has recorded the previous one and gone quiet (:func:`settled`).
Printed: each step's wall seconds and task runs, the ratios recheck / full, resume / full and
(recheck + repair + resume) / full (best and median over the repeats; aims: at most a handful of
audit task runs, <= 0.3 and <= 0.15), client and server CPU, and the load average at start and end.
Per session, the resume's wall split by the Prefect API's task-run timestamps (:func:`phases`):
before its first task run starts (flow-run start, slot, session load), from the first task run's
start to the last one's end (its task runs, with the gaps between them), and after the last
(commit, ``Cached`` runs, slot release, round table, report); the time inside task runs is summed
beside them.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine import WORKER_KEY, Spec, World, add_plan_options, closure_sizes, generate, statement, worker
from orchestration import LAST_CPU, SERVER_PID, _load, _server_cpu, ground, recorded, timed

from contextmesh.core.graph import ContextGraph
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.execution.watch import WatchContext
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.session import Session

PLAN = "bench-recheck-cost"
AUDITOR_KEY = "bench.audit.watching.v1"


def settled(api: str, flow_run_id: str, runs: int, *, idle: float = 0.15, timeout: float = 120.0) -> float:
    """Seconds until the server recorded the flow run and then went quiet (under ``idle`` of a CPU).

    After a 2,000-task-run burst the server goes on working through its events for seconds after
    the runs are recorded; a step timed before then would pay for the previous one's backlog.
    """
    start = time.perf_counter()
    recorded(api, flow_run_id, runs)
    deadline = start + timeout
    while SERVER_PID and time.perf_counter() < deadline:
        before = _server_cpu()
        time.sleep(1.0)
        if _server_cpu() - before < idle:
            break
    return time.perf_counter() - start


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def phases(api: str, flow_run_id: str, called: float, returned: float) -> dict[str, float]:
    """The resume's wall split at its task runs (epoch seconds ``called`` .. ``returned`` of the call):
    before the first task run starts, first start to last end, after the last end; and the seconds
    spent inside task runs (Running to the end state), summed."""
    import httpx

    runs: list[dict[str, Any]] = []
    with httpx.Client(base_url=api, timeout=30) as client:
        while True:
            body = {"flow_runs": {"id": {"any_": [flow_run_id]}}, "limit": 200, "offset": len(runs)}
            page = client.post("/task_runs/filter", json=body).raise_for_status().json()
            runs += page
            if len(page) < 200:
                break
    spans = [(_epoch(r["start_time"]), _epoch(r["end_time"])) for r in runs if r["start_time"] and r["end_time"]]
    if not spans:
        return {"before": returned - called, "task runs": 0.0, "after": 0.0, "inside": 0.0}
    first, last = min(a for a, _ in spans), max(b for _, b in spans)
    return {
        "before": first - called,
        "task runs": last - first,
        "after": returned - last,
        "inside": sum(b - a for a, b in spans),
    }


class WatchedWorld(World):
    """The world the auditors read: which statements are false, and each statement's version."""

    def __init__(self) -> None:
        super().__init__()
        self.versions: dict[str, int] = {}

    def fingerprint(self, ctx: WatchContext) -> str:
        return f"v{self.versions.get(ctx.assumption, 0)}"

    def change(self, text: str) -> None:
        self.versions[text] = self.versions.get(text, 0) + 1
        self.false.add(text)


def registry_for(world: WatchedWorld, delay_ms: int) -> TaskRegistry:
    registry = TaskRegistry()
    registry.register_worker(WORKER_KEY.format(ms=delay_ms), worker(delay_ms / 1000))
    registry.register_auditor(AUDITOR_KEY, world.audit, watches=world.fingerprint)
    return registry


def make_session(directory: Path, specs: list[Spec], registry: TaskRegistry, delay_ms: int) -> None:
    runner = Plan(PLAN, ContextGraph(), registry=registry)
    for spec in specs:
        runner.task(
            spec.name,
            assumes=ground(spec),
            worker_key=WORKER_KEY.format(ms=delay_ms),
            auditor_key=AUDITOR_KEY,
            needs=spec.needs,
            produces=[f"artefact of {spec.name}"],
        )
    Session.create(directory, Session(runner.graph, Resolver(), runner=runner, registry=registry))


def one_session(
    args: argparse.Namespace, session_dir: Path, column: int, closure: set[str], api: str
) -> dict[str, Any]:
    """Full run, one slice changed, watching recheck, repair, resume, full recheck: seconds and runs."""
    from contextmesh.orchestration.flow_bodies import make_plan_flow, make_recheck_flow

    world = WatchedWorld()
    registry = registry_for(world, args.delay_ms)
    specs = generate(args.tasks, args.layers, args.assumptions, args.seed)
    make_session(session_dir, specs, registry, args.delay_ms)
    plan_flow = make_plan_flow(registry, max_workers=args.width)
    recheck_flow = make_recheck_flow(registry, max_workers=args.width)
    out: dict[str, Any] = {}
    full, out["full_s"] = timed(lambda: plan_flow(session_dir=str(session_dir), mode="run"))
    out["full_cpu"] = tuple(LAST_CPU)
    assert len(full["executed"]) == args.tasks, full["failed"]
    out["full_runs"] = full["task_runs"]
    settled(api, full["flow_run_id"], full["task_runs"])

    root = next(name for name in sorted(closure) if name.startswith("t00-"))
    world.change(statement(column))  # one auditor's watched slice changes, and its ground is now false
    checked, out["recheck_s"] = timed(lambda: recheck_flow(session_dir=str(session_dir)))
    out["recheck_cpu"] = tuple(LAST_CPU)
    assert set(checked["stale"]) == closure, "the recheck's closure is the plan's"
    out["recheck_runs"] = checked["task_runs"]
    out["skipped"] = len(checked["report"]["skipped"])
    settled(api, checked["flow_run_id"], checked["task_runs"])

    def repair(s: Session) -> None:
        assert s.runner is not None
        s.runner.repair(root, assumes=f"{statement(column)} under contract v2")

    session = Session.load(session_dir, registry=registry)
    _, out["repair_s"] = timed(lambda: session.apply(repair))
    out["repair_cpu"] = tuple(LAST_CPU)
    called = time.time()
    resumed, out["resume_s"] = timed(lambda: plan_flow(session_dir=str(session_dir), mode="resume"))
    returned = time.time()
    out["resume_cpu"] = tuple(LAST_CPU)
    assert set(resumed["executed"]) == closure, "the resume ran exactly the stale closure"
    out["resume_runs"] = resumed["task_runs"]
    settled(api, resumed["flow_run_id"], resumed["task_runs"])
    out["resume_phases"] = phases(api, resumed["flow_run_id"], called, returned)

    again, out["quiet_s"] = timed(lambda: recheck_flow(session_dir=str(session_dir)))
    out["quiet_runs"] = again["task_runs"]
    settled(api, again["flow_run_id"], again["task_runs"])
    every, out["full_recheck_s"] = timed(lambda: recheck_flow(session_dir=str(session_dir), full=True))
    out["full_recheck_runs"] = every["task_runs"]
    settled(api, every["flow_run_id"], every["task_runs"])
    return out


def report(args: argparse.Namespace, sessions: list[dict[str, Any]], closure: set[str]) -> None:
    def spread(key: str) -> str:
        values = [s[key] for s in sessions]
        return f"best {min(values):.3f}, median {median(values):.3f}"

    for s in sessions:
        s["recheck/full"] = s["recheck_s"] / s["full_s"]
        s["resume/full"] = s["resume_s"] / s["full_s"]
        s["total/full"] = (s["recheck_s"] + s["repair_s"] + s["resume_s"]) / s["full_s"]
        s["full recheck/full"] = s["full_recheck_s"] / s["full_s"]
    one = sessions[0]
    print(f"\n{len(closure) / args.tasks:.1%} stale ({len(closure)} tasks); per step, session 1 of {len(sessions)}:")
    print(f"  full plan flow        {one['full_s']:7.2f} s  {one['full_runs']:5d} task runs")
    print(
        f"  recheck (1 changed)   {one['recheck_s']:7.2f} s  {one['recheck_runs']:5d} task runs "
        f"({one['skipped']} auditors skipped)"
    )
    print(f"  repair                {one['repair_s']:7.2f} s")
    print(f"  resume flow           {one['resume_s']:7.2f} s  {one['resume_runs']:5d} task runs")
    print(f"  recheck (0 changed)   {one['quiet_s']:7.2f} s  {one['quiet_runs']:5d} task runs")
    print(f"  full recheck          {one['full_recheck_s']:7.2f} s  {one['full_recheck_runs']:5d} task runs")
    for i, s in enumerate(sessions, start=1):
        split = s["resume_phases"]
        print(
            f"  resume of session {i}: {s['resume_s']:.2f} s = before the first task run {split['before']:.2f} s"
            f" + task runs {split['task runs']:.2f} s (inside them {split['inside']:.2f} s in all)"
            f" + after the last {split['after']:.2f} s"
        )
    print(f"over {len(sessions)} session(s):")
    print(f"  audit task runs in the one-changed recheck: {[s['recheck_runs'] for s in sessions]} (aim: a handful)")
    print(f"  recheck / full: {spread('recheck/full')}")
    print(f"  resume / full: {spread('resume/full')} (aim <= 0.15)")
    print(f"  recheck + repair + resume / full: {spread('total/full')} (aim <= 0.3)")
    print(f"  full recheck (every auditor) / full: {spread('full recheck/full')}")
    for step in ("full", "recheck", "repair", "resume"):
        client = min(s[f"{step}_cpu"][0] for s in sessions)
        server = min(s[f"{step}_cpu"][1] for s in sessions)
        print(f"  CPU {step:>7}: client {client:.2f} s, server {server:.2f} s" + ("" if SERVER_PID else " (not ours)"))
    # CPU (this process and the server's) is steadier than wall time when the machine is shared.
    for s in sessions:
        full_cpu = sum(s["full_cpu"])
        s["cpu recheck/full"] = sum(s["recheck_cpu"]) / full_cpu
        s["cpu resume/full"] = sum(s["resume_cpu"]) / full_cpu
        s["cpu total/full"] = sum(sum(s[f"{k}_cpu"]) for k in ("recheck", "repair", "resume")) / full_cpu
    print("  CPU ratios, client + server:")
    print(f"    recheck / full: {spread('cpu recheck/full')}")
    print(f"    resume / full: {spread('cpu resume/full')} (aim <= 0.15)")
    print(f"    recheck + repair + resume / full: {spread('cpu total/full')} (aim <= 0.3)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_plan_options(parser)
    parser.add_argument("--stale", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--api-url", help="use this Prefect API instead of starting a server")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    specs = generate(args.tasks, args.layers, args.assumptions, args.seed)
    closures = closure_sizes(specs, args.assumptions)
    column = min(closures, key=lambda c: (abs(len(closures[c]) - args.stale * args.tasks), c))
    print(
        f"plan: {args.tasks} tasks, {args.layers} layers, {args.assumptions} columns, an auditor watching its own "
        f"ground on every task, {args.delay_ms} ms workers, width {args.width}, seed {args.seed}"
    )
    print(f"machine: load average {_load()} at start", flush=True)
    from contextmesh.orchestration import local_server as server
    from contextmesh.orchestration.settings import client_settings

    home = Path(tempfile.mkdtemp(prefix="cm-bench-recheck-"))
    try:
        if args.api_url:
            api = args.api_url
        else:
            info = server.start(home / "home", port=server.free_port(), ui=False, keep=False)
            api = info.api_url
            SERVER_PID.append(info.pid)
        with client_settings(api, heartbeat=False):
            sessions = [
                one_session(args, home / f"session-{i}", column, closures[column], api) for i in range(args.repeat)
            ]
            server.drain_workers()
        report(args, sessions, closures[column])
    finally:
        if not args.api_url:
            server.stop(home / "home")
        shutil.rmtree(home, ignore_errors=True)
    print(f"\nbench total: {time.perf_counter() - started:.1f} s; load average {_load()} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())

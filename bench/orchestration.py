"""Orchestration overhead: a generated 1,000-task plan with 20 ms workers on a real Prefect server.

    .venv/bin/python bench/orchestration.py [--tasks 1000] [--layers 20] [--assumptions 50] [--width 8]
                                            [--delay-ms 20] [--seed 0] [--repeat 2] [--api-url URL]

The plan is ``bench/engine.py``'s (same generator, same seed): ``tasks / layers`` tasks per layer,
an auditor on the first task of each column; the column's assumption grounds its first task and
every later task stands on its own ground (see :func:`ground`). Without ``--api-url`` a
managed Prefect server is started in a temporary home on a free loopback port (no UI) and stopped
at the end. Every variant runs its layers one after another on a thread pool of ``--width``:

* **plain Prefect** — a flow submitting one plain ``@task`` per task (the same sleeping worker,
  the same audits), layer by layer: the floor for "a Prefect task per decision";
* **plain Prefect + shared tags** — the same with three tags shared by every run (plan, role,
  worker key): what any task-run tag costs in Prefect 3.9 (a tagged run takes a round trip through
  its tag-concurrency service first); and a 100-task sample with per-task tags, which cost far more.
  Why ContextMesh tags the runs of plans of at most 50 tasks only;
* **PrefectExecutor** — ``Plan.run()`` with :class:`PrefectExecutor` inside a bare flow;
* **plan flow** — ``make_plan_flow`` on a session directory: the above plus load, commit by
  compare-and-swap, the concurrency slot and the round's table artifact;
* **in-process** — ``Plan.run()`` with ``InProcessExecutor(width)``, no Prefect.

For each: wall seconds (best and median of ``--repeat`` interleaved runs), the ideal (layers x
ceil(tasks per layer / width) x delay) and the overhead per task, (wall - ideal) / tasks, with its
ratio to plain Prefect; then CPU per task of this process and of the server, steadier than wall
time on a shared machine. Then a ~5 %-stale resume: one
column's ground is made false, the recheck flow disproves it, its tasks are repaired (an engine
call), and the plan flow resumes — only the stale closure executes, and only the direct needs of
those tasks get ``Cached`` runs — compared with the full plan flow. Each flow is timed from a quiet
client (the previous flow's events sent: Prefect's event, log and concurrency services share one
loop thread), as a deployment runs each flow run in a process of its own.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine import AUDITOR_KEY, WORKER_KEY, Spec, World, add_plan_options, closure_sizes, generate, statement, worker

from contextmesh.orchestration.settings import prepare_environment

prepare_environment()  # before Prefect is imported

from contextmesh.core.graph import ContextGraph  # noqa: E402
from contextmesh.execution.in_process import InProcessExecutor  # noqa: E402
from contextmesh.execution.plan import Plan  # noqa: E402
from contextmesh.execution.task_registry import TaskRegistry  # noqa: E402
from contextmesh.knowledge.resolve import Resolver  # noqa: E402
from contextmesh.session.session import Session  # noqa: E402

PLAN = "bench-orchestration"
VARIANTS = ("plain Prefect", "plain Prefect + shared tags", "PrefectExecutor", "plan flow", "in-process")


def registry_for(world: World, delay_ms: int) -> TaskRegistry:
    registry = TaskRegistry()
    registry.register_worker(WORKER_KEY.format(ms=delay_ms), worker(delay_ms / 1000))
    registry.register_auditor(AUDITOR_KEY, world.audit)
    return registry


def ground(spec: Spec) -> str:
    """The column's statement for its root; every later task stands on its own ground.

    One ground per task keeps the resume's repair to one engine call (the column's root); the stale
    closure is the same as with a shared ground — the root falls, and with it everything that needs
    it. (Repairing several tasks off one shared ground is covered by tests/test_repair_shared_ground.py.)
    """
    return statement(spec.column) if spec.layer == 0 else f"{statement(spec.column)} at layer {spec.layer}"


def declare(runner: Plan, specs: list[Spec], delay_ms: int) -> None:
    for spec in specs:
        runner.task(
            spec.name,
            assumes=ground(spec),
            worker_key=WORKER_KEY.format(ms=delay_ms),
            auditor_key=AUDITOR_KEY if spec.layer == 0 else None,
            needs=spec.needs,
            produces=[f"artefact of {spec.name}"],
        )


SERVER_PID: list[int] = []  # the managed server's pid when this bench started it
LAST_CPU: list[float] = [0.0, 0.0]  # client and server CPU seconds of the last timed() call


def _server_cpu() -> float:
    """CPU seconds the bench's own server process has used so far (0 with --api-url)."""
    if not SERVER_PID:
        return 0.0
    try:
        fields = Path(f"/proc/{SERVER_PID[0]}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load() -> str:
    """The 1, 5 and 15 minute load averages: wall figures mean little when they exceed the CPU count."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """Wall seconds of ``fn()``; its client and server CPU seconds go to ``LAST_CPU``."""
    cpu, server_cpu, start = time.process_time(), _server_cpu(), time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    LAST_CPU[:] = [time.process_time() - cpu, _server_cpu() - server_cpu]
    return result, seconds


def recorded(api: str, flow_run_id: str, runs: int) -> float:
    """Seconds until the server has recorded every task run of a flow run (its events sent first).

    Every timed flow starts from a server that has caught up: after a 1,000-task burst a SQLite
    server takes seconds to record it, and the next flow's API calls would wait behind that.
    """
    from prefect.events.worker import EventsWorker

    from contextmesh.orchestration.local_server import wait_recorded

    start = time.perf_counter()
    EventsWorker.instance().wait_until_empty()
    if not wait_recorded(api, [flow_run_id], runs, timeout=300):
        raise SystemExit(f"the server did not record the {runs} task runs of flow run {flow_run_id} in 300 s")
    return time.perf_counter() - start


def run_flow(fl: Any) -> tuple[Any, str]:
    """Call a flow; its result and its flow run id."""
    state = fl(return_state=True)
    return state.result(), str(state.state_details.flow_run_id)


def plain_flow(specs: list[Spec], delay: float, width: int, *, tagged: str = "none") -> Any:
    from prefect import flow, tags, task
    from prefect.cache_policies import NO_CACHE
    from prefect.futures import as_completed, wait
    from prefect.task_runners import ThreadPoolTaskRunner

    @task(cache_policy=NO_CACHE, persist_result=False, task_run_name="{name}")
    def work(name: str, attempt: int, inputs: dict[str, Any]) -> dict[str, Any]:
        time.sleep(delay)
        return {"task": name, "attempt": attempt, "inputs": len(inputs)}

    @task(cache_policy=NO_CACHE, persist_result=False, task_run_name="{name} · audit")
    def audit(name: str, output: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "ok", "reason": "contract unchanged", "cite": None}

    layers: dict[int, list[Spec]] = {}
    for spec in specs:
        layers.setdefault(spec.layer, []).append(spec)

    def identity(spec: Spec, role: str) -> list[str]:
        shared = [f"cm.plan:{PLAN}", f"cm.role:{role}", "cm.worker:bench.work.v1"]
        if tagged == "shared":
            return shared
        if tagged == "per-task":
            return [*shared, f"cm.task:{spec.name}", f"cm.assumption:{spec.column}"]
        return []

    @flow(name="bench-plain", task_runner=ThreadPoolTaskRunner(max_workers=width), persist_result=False)
    def plain() -> int:
        outputs: dict[str, Any] = {}
        runs = 0
        for layer in sorted(layers):
            futures = {}
            for spec in layers[layer]:
                with tags(*identity(spec, "worker")):
                    future = work.submit(spec.name, 1, {n: outputs[n] for n in spec.needs})
                futures[future] = spec
            audits = []
            for future in as_completed(list(futures)):
                spec = futures[future]
                outputs[spec.name] = future.result()
                if spec.layer == 0:
                    with tags(*identity(spec, "audit")):
                        audits.append(audit.submit(spec.name, outputs[spec.name]))
            wait(audits)
            runs += len(futures) + len(audits)
        return runs

    return plain


def executor_flow(specs: list[Spec], delay_ms: int, width: int) -> Any:
    from prefect import flow
    from prefect.task_runners import ThreadPoolTaskRunner

    from contextmesh.orchestration.prefect_executor import PrefectExecutor

    @flow(name="bench-executor", task_runner=ThreadPoolTaskRunner(max_workers=width), persist_result=False)
    def bare() -> int:
        executor = PrefectExecutor(tagged=len(specs) <= 50)
        runner = Plan(PLAN, ContextGraph(), registry=registry_for(World(), delay_ms), executor=executor)
        declare(runner, specs, delay_ms)
        report = runner.run()
        assert len(report.executed) == len(specs), report.failed
        return executor.task_runs

    return bare


def make_session(directory: Path, specs: list[Spec], registry: TaskRegistry, delay_ms: int) -> None:
    runner = Plan(PLAN, ContextGraph(), registry=registry)
    declare(runner, specs, delay_ms)
    Session.create(directory, Session(runner.graph, Resolver(), runner=runner, registry=registry))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_plan_options(parser)
    parser.add_argument("--stale", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=2, help="interleaved repetitions; the best is reported")
    parser.add_argument("--api-url", help="use this Prefect API instead of starting a server")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    specs = generate(args.tasks, args.layers, args.assumptions, args.seed)
    closures = closure_sizes(specs, args.assumptions)
    column = min(closures, key=lambda c: (abs(len(closures[c]) - args.stale * args.tasks), c))
    per_layer = args.tasks // args.layers
    delay = args.delay_ms / 1000
    ideal = args.layers * math.ceil(per_layer / args.width) * delay
    print(
        f"plan: {args.tasks} tasks, {args.layers} layers x {per_layer}, {args.assumptions} assumptions, "
        f"auditors on {args.assumptions} roots, {args.delay_ms} ms workers, width {args.width}, seed {args.seed}"
    )
    print(f"ideal round (zero-overhead scheduler): {ideal:.2f} s")
    print(f"machine: {os.cpu_count()} CPUs, load average {_load()} at start", flush=True)

    from contextmesh.orchestration import local_server as server
    from contextmesh.orchestration.settings import client_settings

    home = Path(tempfile.mkdtemp(prefix="cm-bench-orch-"))
    try:
        if args.api_url:
            api = args.api_url
        else:
            info, boot = timed(lambda: server.start(home / "home", port=server.free_port(), ui=False, keep=False))
            api = info.api_url
            SERVER_PID.append(info.pid)
            print(f"managed server on {api}: healthy after {boot:.1f} s")
        with client_settings(api, heartbeat=False):
            figures = run_all(args, specs, column, closures, home, api)
            server.drain_workers()
        report(args, figures, ideal, closures[column], column)
    finally:
        if not args.api_url:
            server.stop(home / "home")
        shutil.rmtree(home, ignore_errors=True)
    print(f"\nbench total: {time.perf_counter() - started:.1f} s; load average {_load()} at the end")
    return 0


def run_all(
    args: argparse.Namespace,
    specs: list[Spec],
    column: int,
    closures: dict[int, set[str]],
    home: Path,
    api: str,
) -> dict[str, Any]:
    delay = args.delay_ms / 1000
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    cpu: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
    runs: dict[str, int] = {}
    lags: list[float] = []
    resumes: list[dict[str, Any]] = []
    # Warm-up: the first flow of a process pays for imports and client set-up; keep it out of the figures.
    (count, fid), _ = timed(lambda: run_flow(plain_flow(specs[: args.width], delay, args.width, tagged="shared")))
    recorded(api, fid, count)
    for repeat in range(args.repeat):
        # Interleaved, so a noisy neighbour on a shared machine hits every variant alike.
        flows = {
            "plain Prefect": plain_flow(specs, delay, args.width, tagged="none"),
            "plain Prefect + shared tags": plain_flow(specs, delay, args.width, tagged="shared"),
            "PrefectExecutor": executor_flow(specs, args.delay_ms, args.width),
        }
        for name, fl in flows.items():
            (runs[name], fid), seconds = timed(lambda fl=fl: run_flow(fl))
            samples[name].append(seconds)
            cpu[name].append((LAST_CPU[0], LAST_CPU[1]))
            lags.append(recorded(api, fid, runs[name]))
        inproc = Plan(PLAN, ContextGraph(), registry=registry_for(World(), args.delay_ms))
        inproc.executor = InProcessExecutor(width=args.width)
        declare(inproc, specs, args.delay_ms)
        _, seconds = timed(inproc.run)
        samples["in-process"].append(seconds)
        cpu["in-process"].append((LAST_CPU[0], LAST_CPU[1]))
        outcome = on_session(args, specs, home / f"session-{repeat}", column, closures, api)
        runs["plan flow"] = outcome.pop("full_runs")
        samples["plan flow"].append(outcome["full_s"])
        cpu["plan flow"].append(outcome.pop("full_cpu"))
        lags.extend(outcome.pop("lags"))
        resumes.append(outcome)
    # Why per-task tags are left off large plans: a sample of uniquely tagged tasks against untagged ones.
    sample = [s for s in specs if s.layer < 2]
    (count, fid), untagged_s = timed(lambda: run_flow(plain_flow(sample, delay, args.width, tagged="none")))
    recorded(api, fid, count)
    (count, fid), unique_s = timed(lambda: run_flow(plain_flow(sample, delay, args.width, tagged="per-task")))
    recorded(api, fid, count)
    return {
        "samples": samples,
        "cpu": cpu,
        "runs": runs,
        "resumes": resumes,
        "lags": lags,
        "per-task tags": (len(sample), untagged_s, unique_s),
    }


def on_session(
    args: argparse.Namespace,
    specs: list[Spec],
    session_dir: Path,
    column: int,
    closures: dict[int, set[str]],
    api: str,
) -> dict[str, Any]:
    """The full plan flow on a new session; then disprove the column's root ground, repair that one
    task and resume: only the stale closure runs."""
    from contextmesh.orchestration.flow_bodies import make_plan_flow, make_recheck_flow

    world = World()
    registry = registry_for(world, args.delay_ms)
    width = args.width
    make_session(session_dir, specs, registry, args.delay_ms)
    plan_flow = make_plan_flow(registry, max_workers=width)
    full, full_s = timed(lambda: plan_flow(session_dir=str(session_dir), mode="run"))
    full_cpu = (LAST_CPU[0], LAST_CPU[1])
    assert len(full["executed"]) == args.tasks, full["failed"]
    lags = [recorded(api, full["flow_run_id"], full["task_runs"])]
    world.false.add(statement(column))
    checked, recheck_s = timed(lambda: make_recheck_flow(registry, max_workers=width)(session_dir=str(session_dir)))
    assert set(checked["stale"]) == closures[column], "the recheck's closure is the plan's"
    lags.append(recorded(api, checked["flow_run_id"], checked["task_runs"]))
    root = next(name for name in closures[column] if name.startswith("t00-"))

    def repair(s: Session) -> None:
        assert s.runner is not None
        s.runner.repair(root, assumes=f"{statement(column)} under contract v2")

    session = Session.load(session_dir, registry=registry)
    _, repair_s = timed(lambda: session.apply(repair))
    resumed, resume_s = timed(lambda: plan_flow(session_dir=str(session_dir), mode="resume"))
    assert set(resumed["executed"]) == closures[column], "the resume ran exactly the stale closure"
    lags.append(recorded(api, resumed["flow_run_id"], resumed["task_runs"]))
    return {
        "full_runs": full["task_runs"],
        "full_cpu": full_cpu,
        "lags": lags,
        "recheck_s": recheck_s,
        "repair_s": repair_s,
        "resume_s": resume_s,
        "full_s": full_s,
        "executed": len(resumed["executed"]),
        "cached_runs": len(resumed["cached_runs"]),
        "task_runs": resumed["task_runs"],
    }


def report(args: argparse.Namespace, figures: dict[str, Any], ideal: float, stale: set[str], column: int) -> None:
    from statistics import median

    from _common import print_table

    samples: dict[str, list[float]] = figures["samples"]
    best = {name: min(values) for name, values in samples.items()}
    plain_over = (best["plain Prefect"] - ideal) * 1000 / args.tasks
    rows = []
    for name in VARIANTS:
        seconds = best[name]
        over = (seconds - ideal) * 1000 / args.tasks
        rows.append(
            [
                name,
                seconds,
                median(samples[name]),
                figures["runs"].get(name, "-"),
                seconds * 1000 / args.tasks,
                over,
                over / plain_over,
                seconds / best["plain Prefect"],
            ]
        )
    print()
    print_table(
        ["variant", "best s", "median s", "task runs", "ms/task", "overhead ms/task", "x plain", "wall x plain"],
        rows,
        title=f"full round, {args.tasks} tasks, best of {args.repeat} ({args.delay_ms} ms workers, "
        f"width {args.width}); overhead = (wall - ideal) / tasks",
    )
    cpu: dict[str, list[tuple[float, float]]] = figures["cpu"]
    plain_cpu = min(c for c, _ in cpu["plain Prefect"]) * 1000 / args.tasks
    cpu_rows = []
    for name in VARIANTS:
        client = min(c for c, _ in cpu[name]) * 1000 / args.tasks
        server_ms = min(s for _, s in cpu[name]) * 1000 / args.tasks
        cpu_rows.append([name, client, client / plain_cpu, server_ms if SERVER_PID else "-"])
    print()
    print_table(
        ["variant", "client CPU ms/task", "x plain", "server CPU ms/task"],
        cpu_rows,
        title="CPU per task (best of the repeats; steadier than wall time on a shared machine)",
    )
    count, untagged_s, unique_s = figures["per-task tags"]
    print(
        f"\nper-task tags ({count} plain tasks, each with its own cm.task/cm.assumption tags): {unique_s:.2f} s "
        f"vs {untagged_s:.2f} s untagged, +{(unique_s - untagged_s) * 1000 / count:.0f} ms per task "
        "(Prefect starts a tag-concurrency service per distinct tag set); large plans run untagged"
    )
    resumes = figures["resumes"]
    one = min(resumes, key=lambda r: r["resume_s"] / r["full_s"])
    print(
        f"\n{len(stale) / args.tasks:.1%}-stale resume (assumption {column:02d}, {len(stale)} tasks stale): "
        f"recheck flow {one['recheck_s']:.2f} s, repair {one['repair_s']:.2f} s, "
        f"resume flow {one['resume_s']:.2f} s ({one['executed']} executed, {one['cached_runs']} Cached runs, "
        f"{one['task_runs']} task runs)"
    )
    ratios = [r["resume_s"] / r["full_s"] for r in resumes]
    best_resume, best_full = min(r["resume_s"] for r in resumes), min(r["full_s"] for r in resumes)
    print(
        f"  resume / full plan flow: best resume / best full {best_resume:.2f} s / {best_full:.2f} s = "
        f"{best_resume / best_full:.3f}; per session: best {min(ratios):.3f}, median {median(ratios):.3f}; aim <= 0.15"
    )
    totals = [(r["recheck_s"] + r["repair_s"] + r["resume_s"]) / r["full_s"] for r in resumes]
    print(f"  recheck + repair + resume / full: best {min(totals):.3f}, median {median(totals):.3f}")
    lags = figures["lags"]
    print(
        f"recording lag (events sent until the server recorded every task run of a flow run): "
        f"median {median(lags):.2f} s, max {max(lags):.2f} s over {len(lags)} flow runs"
    )


if __name__ == "__main__":
    sys.exit(main())

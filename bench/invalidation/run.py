"""One InvalidationBench run: both contenders, the same plan, the same world changes, one server.

For each repetition: a baseline of each contender on the starting world (the ContextMesh plan
flow on a new session; the plain flow filling its cache), then, for every named case, the world
takes the case's change and each contender reruns from a copy of its own baseline (the session
directory; the cache folder), so every case starts from the same state. The order of the two
contenders alternates between repetitions. Every flow is timed from a quiet client: the previous
flow's events sent and every task run recorded by the server. And each contender's rerun starts
on a **settled server** (its process under a tenth of a CPU for half a second, :func:`settle`):
the server goes on digesting a flow's events for seconds after its runs are recorded, so without
the wait whichever contender came second paid, in wall time and in server CPU, for the first one's
backlog — 240 task runs' worth after a plain rerun, a handful after a ContextMesh one. A
contender's CPU runs on until the server has settled after it, so each pays for its own backlog.

Counts are compared with the ground truth (:mod:`invalidation.truth`) and must be identical in
every repetition (they are deterministic; a difference is a bug and stops the run).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from invalidation import mesh, plain
from invalidation.truth import Truth, ground_truth, score
from invalidation.world import Case, WorldPlan, generate, named_cases

CONTENDERS = ("ContextMesh", "plain Prefect")


@dataclass
class CaseResult:
    """One case: its ground truth and, per contender, one count dict and one wall time per repetition."""

    case: Case
    truth: Truth
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    walls: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CONTENDERS})
    cpu: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CONTENDERS})
    task_runs: dict[str, int] = field(default_factory=dict)
    fallen: int = 0
    explained: int = 0
    receipts: int = 0
    ledger_ok: bool = True
    ledger_message: str = ""
    mesh_steps: list[dict[str, float]] = field(default_factory=list)
    executed: dict[str, frozenset[str]] = field(default_factory=dict)
    revalidated: int = 0
    fact_fallen: int = 0
    fact_explained: int = 0


@dataclass
class BenchResult:
    """Everything one InvalidationBench run measured."""

    plan: WorldPlan
    cases: list[CaseResult]
    full: dict[str, list[float]]
    settings: dict[str, Any]


def quiet_client(api: str) -> Callable[[str, int], None]:
    """A function that waits until this process's events are sent and a flow run is recorded."""
    from prefect.events.worker import EventsWorker

    from contextmesh.orchestration.local_server import wait_recorded

    def wait(flow_run_id: str, runs: int) -> None:
        EventsWorker.instance().wait_until_empty()
        if not wait_recorded(api, [flow_run_id], runs, timeout=300):
            raise RuntimeError(f"the server did not record the {runs} task runs of flow run {flow_run_id}")

    return wait


def cpu_seconds(server_pid: int | None) -> float:
    """CPU seconds used so far by this process and by the Prefect server process (when known).

    Steadier than wall time on a shared machine: a neighbour's burst delays a flow but does not
    add to the CPU it uses.
    """
    total = time.process_time()
    if server_pid is not None:
        try:
            fields = Path(f"/proc/{server_pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


def settle(server_pid: int | None, *, idle: float = 0.05, step: float = 0.5, timeout: float = 60.0) -> None:
    """Wait until the server process used under ``idle`` CPU seconds in a ``step`` (or ``timeout``)."""
    if server_pid is None:
        return
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        before = cpu_seconds(server_pid) - time.process_time()
        time.sleep(step)
        if cpu_seconds(server_pid) - time.process_time() - before < idle:
            return


def _check(counts: dict[str, int], before: dict[str, int] | None, what: str) -> dict[str, int]:
    if before is not None and before != counts:
        raise RuntimeError(f"{what}: counts changed between repetitions ({before} then {counts})")
    return counts


def run_bench(
    api: str,
    workdir: Path,
    *,
    seed: int = 0,
    layers: int = 10,
    columns: int = 24,
    delay_ms: int = 20,
    width: int = 8,
    repeat: int = 3,
    only: tuple[str, ...] | None = None,
    extra: tuple[Case, ...] = (),
    server_pid: int | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> BenchResult:
    """Run every named case (those in ``only``, when given) and the ``extra`` cases ``repeat`` times
    for both contenders against the server at ``api``."""
    from contextmesh.orchestration.flow_bodies import make_plan_flow, make_recheck_flow

    load_start = os.getloadavg()[0]
    plan = generate(seed=seed, layers=layers, columns=columns)
    cases = [c for c in named_cases(plan) if only is None or c.key in only] + list(extra)
    results = [CaseResult(c, ground_truth(plan, plan.world, c.apply(plan.world))) for c in cases]
    delay = delay_ms / 1000
    world = dict(plan.world)  # the live world: both contenders' workers read it
    calls = mesh.Calls()
    registry = mesh.registry_for(plan, world, calls, delay)
    flows = (make_plan_flow(registry, max_workers=width), make_recheck_flow(registry, max_workers=width))
    quiet = quiet_client(api)
    full: dict[str, list[float]] = {c: [] for c in CONTENDERS}
    old = results[0].truth.old if results else {}
    versions = dict.fromkeys(plan.world, 1)
    for rep in range(repeat):
        base = workdir / f"rep{rep}"
        base.mkdir(parents=True)
        mesh_base, plain_base = base / "mesh-baseline", base / "plain-baseline"
        full["ContextMesh"].append(_mesh_baseline(mesh_base, plan, registry, calls, flows, quiet, old, tracked=False))
        if any(r.case.tracked for r in results):
            _mesh_baseline(base / "mesh-tracked-baseline", plan, registry, calls, flows, quiet, old, tracked=True)
        if any(r.case.blind_auditors for r in results):
            _mesh_baseline(base / "mesh-blind-baseline", plan, registry, calls, flows, quiet, old, blind=True)
        if any(r.case.exact_grounds for r in results):
            _mesh_baseline(base / "mesh-exact-baseline", plan, registry, calls, flows, quiet, old, exact=True)
        fl = plain.make_flow(plan, world, calls, delay, width)
        start = time.perf_counter()
        outputs, fid = plain.run_flow(fl, versions, plain_base)
        full["plain Prefect"].append(time.perf_counter() - start)
        quiet(fid, len(plan.tasks))
        if len(calls.take()) != len(plan.tasks) or outputs != old:
            raise RuntimeError("the plain baseline did not run every task to the ground truth's outputs")
        progress(f"rep {rep + 1}: baselines {full['ContextMesh'][-1]:.1f} s / {full['plain Prefect'][-1]:.1f} s")
        for result in results:
            case = result.case
            world.update(case.change)
            try:
                order = CONTENDERS if rep % 2 == 0 else CONTENDERS[::-1]
                clock = partial(cpu_seconds, server_pid)
                for contender in order:
                    settle(server_pid)
                    if contender == "ContextMesh":
                        _mesh_case(result, plan, world, registry, calls, flows, quiet, mesh_base, base, clock)
                    else:
                        _plain_case(result, plan, world, calls, delay, width, quiet, plain_base, base, versions, clock)
                    # The server's work on this contender's events after its runs were recorded is its CPU too.
                    after = clock()
                    settle(server_pid)
                    result.cpu[contender][-1] += clock() - after
            finally:
                world.clear()
                world.update(plan.world)
            progress(
                f"rep {rep + 1}: {case.title}: "
                + ", ".join(f"{c} {result.walls[c][-1]:.2f} s {result.counts[c]}" for c in CONTENDERS)
            )
    settings = {
        "seed": seed,
        "layers": layers,
        "columns": columns,
        "tasks": len(plan.tasks),
        "facts": len(plan.world),
        "delay_ms": delay_ms,
        "width": width,
        "repeat": repeat,
        "server_cpu": server_pid is not None,
        "coarse": len(plan.coarse),
        "undeclared_reads": sum(1 for s in plan.tasks if s.undeclared),
        "load": (load_start, os.getloadavg()[0]),
    }
    return BenchResult(plan, results, full, settings)


def _mesh_baseline(
    directory: Path,
    plan: WorldPlan,
    registry: Any,
    calls: mesh.Calls,
    flows: tuple[Any, Any],
    quiet: Callable[[str, int], None],
    old: dict[str, Any],
    *,
    tracked: bool = False,
    blind: bool = False,
    exact: bool = False,
) -> float:
    """A new session run once by the plan flow on the starting world; the wall seconds of that run."""
    mesh.create_session(directory, plan, registry, tracked=tracked, blind=blind, exact=exact)
    start = time.perf_counter()
    first = flows[0](session_dir=str(directory), mode="run")
    seconds = time.perf_counter() - start
    quiet(first["flow_run_id"], first["task_runs"])
    if len(calls.take()) != len(plan.tasks) or mesh.served(directory, registry) != old:
        which = "tracked " if tracked else ""
        raise RuntimeError(f"the ContextMesh {which}baseline did not run every task to the ground truth's outputs")
    return seconds


def _mesh_case(
    result: CaseResult,
    plan: WorldPlan,
    world: dict[str, int],
    registry: Any,
    calls: mesh.Calls,
    flows: tuple[Any, Any],
    quiet: Callable[[str, int], None],
    mesh_base: Path,
    base: Path,
    clock: Callable[[], float],
) -> None:
    directory = base / f"mesh-{result.case.key}"
    case = result.case
    variants = {"tracked": case.tracked, "blind": case.blind_auditors, "exact": case.exact_grounds}
    variant = next((f"mesh-{name}-baseline" for name, chosen in variants.items() if chosen), None)
    shutil.copytree(mesh_base if variant is None else base / variant, directory)
    done = mesh.rerun(
        directory, plan, world, case.change, registry, calls, flows, quiet, clock, exact=case.exact_grounds
    )
    result.cpu["ContextMesh"].append(done.cpu)
    counted = score(result.truth, set(done.executed), done.served)
    result.counts["ContextMesh"] = _check(counted.counts(), result.counts.get("ContextMesh"), result.case.title)
    result.executed["ContextMesh"] = counted.executed
    result.walls["ContextMesh"].append(done.wall)
    result.mesh_steps.append(done.seconds)
    result.task_runs["ContextMesh"] = done.task_runs
    result.fallen, result.explained, result.receipts = len(done.fallen), done.explained, done.receipts
    if len(result.walls["ContextMesh"]) > 1 and result.revalidated != done.revalidated:
        raise RuntimeError(f"{result.case.title}: revalidated {result.revalidated} then {done.revalidated}")
    result.revalidated, result.fact_fallen, result.fact_explained = (
        done.revalidated,
        done.fact_fallen,
        done.fact_explained,
    )
    result.ledger_ok = result.ledger_ok and done.ledger_ok
    result.ledger_message = done.ledger_message


def _plain_case(
    result: CaseResult,
    plan: WorldPlan,
    world: dict[str, int],
    calls: mesh.Calls,
    delay: float,
    width: int,
    quiet: Callable[[str, int], None],
    plain_base: Path,
    base: Path,
    versions: dict[str, int],
    clock: Callable[[], float],
) -> None:
    storage = base / f"plain-{result.case.key}"
    shutil.copytree(plain_base, storage)
    fl = plain.make_flow(plan, world, calls, delay, width)
    calls.take()
    cpu = clock()
    start = time.perf_counter()
    # The exact variant of (c): the careful user's statements name exact values, coarse facts too.
    coarse = frozenset() if result.case.exact_grounds else plan.coarse
    outputs, fid = plain.run_flow(fl, plain.bump(versions, result.case.change, plan.world, coarse), storage)
    seconds = time.perf_counter() - start
    quiet(fid, len(plan.tasks))
    result.cpu["plain Prefect"].append(clock() - cpu)
    executed = calls.take()
    counted = score(result.truth, set(executed), outputs)
    result.counts["plain Prefect"] = _check(counted.counts(), result.counts.get("plain Prefect"), result.case.title)
    result.executed["plain Prefect"] = counted.executed
    result.walls["plain Prefect"].append(seconds)
    result.task_runs["plain Prefect"] = len(plan.tasks)

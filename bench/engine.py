"""Engine throughput: a generated 1,000-task plan run in-process; what the engine costs per task.

    .venv/bin/python bench/engine.py [--tasks 1000] [--layers 20] [--assumptions 50] [--width 8]
                                     [--delay-ms 20] [--audit roots|all|none] [--stale 0.05] [--seed 0]

The plan (seeded, so every run builds the same one): ``tasks / layers`` tasks per layer; each
assumption grounds one column of tasks, one per layer; a task in layer L > 0 needs the task of its
own column in layer L - 1 and up to two more from earlier layers of its own column or of columns to
its left in the same block of five, so a disproof's closure stays inside a block and its size
depends on the column's place in it (the last column's is its own 20 tasks). Workers are
registered under keys (a 0 ms and a ``--delay-ms`` one that ``time.sleep``s); auditors are optional
(``roots``: the first task of each column; ``all``; ``none``). Everything runs on
``InProcessExecutor(width)``.

Printed figures:

* a full round with the no-op worker: seconds, rounds and layers per second, and the engine's cost
  per task (all of the wall time is engine: the worker does nothing);
* a full round with the sleeping worker: seconds, the ideal (layers x ceil(tasks per layer / width)
  x delay, what a perfect scheduler with zero overhead would take) and the overhead per task,
  (wall - ideal) / tasks;
* a round in which nothing changed (every task cached);
* a ~5 %-stale resume: one assumption whose closure covers the share of tasks nearest ``--stale``
  is disproved by its auditor in a ``recheck()``, each task on it is repaired onto new ground, and
  ``run()`` re-executes only the stale closure — compared with the full round.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import dataclass
from typing import Any

from contextmesh.core.graph import ContextGraph
from contextmesh.execution.context import AuditContext, RunContext, Verdict
from contextmesh.execution.in_process import InProcessExecutor
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry

BLOCK = 5  # columns whose tasks may need each other; a disproof's closure stays inside one block
WORKER_KEY = "bench.work.{ms}ms.v1"
AUDITOR_KEY = "bench.audit.feed.v1"
TARGET_SECONDS = 180.0


@dataclass(frozen=True)
class Spec:
    """One generated task: its name, column (assumption), layer and needs."""

    name: str
    column: int
    layer: int
    needs: tuple[str, ...]


def statement(column: int) -> str:
    return f"service {column:02d} keeps its published contract"


def generate(tasks: int, layers: int, columns: int, seed: int) -> list[Spec]:
    """The plan, in declaration (topological) order: layer by layer."""
    if tasks != layers * columns:
        raise SystemExit(f"--tasks must equal --layers x --assumptions ({layers} x {columns} = {layers * columns})")
    rng = random.Random(seed)
    names = {(layer, column): f"t{layer:02d}-{column:02d}" for layer in range(layers) for column in range(columns)}
    specs = []
    for layer in range(layers):
        for column in range(columns):
            needs: list[str] = []
            if layer > 0:
                needs.append(names[(layer - 1, column)])
                block = range(column // BLOCK * BLOCK, column + 1)  # this column and those left of it in its block
                for _ in range(rng.randint(0, 2)):
                    needs.append(names[(rng.randrange(layer), rng.choice(block))])
            specs.append(Spec(names[(layer, column)], column, layer, tuple(dict.fromkeys(needs))))
    return specs


def closure_sizes(specs: list[Spec], columns: int) -> dict[int, set[str]]:
    """For each assumption, the tasks that go stale when it is rejected (its column and downstream)."""
    dependants: dict[str, list[str]] = {s.name: [] for s in specs}
    for spec in specs:
        for need in spec.needs:
            dependants[need].append(spec.name)
    out: dict[int, set[str]] = {}
    for column in range(columns):
        fallen = {s.name for s in specs if s.column == column}
        stack = list(fallen)
        while stack:
            for child in dependants[stack.pop()]:
                if child not in fallen:
                    fallen.add(child)
                    stack.append(child)
        out[column] = fallen
    return out


class World:
    """The outside world the auditors read: the statements currently known to be false."""

    def __init__(self) -> None:
        self.false: set[str] = set()

    def audit(self, ctx: AuditContext) -> Verdict:
        if ctx.assumption in self.false:
            return ctx.disproved(f"'{ctx.assumption}' no longer holds")
        return ctx.ok("contract unchanged")


def worker(delay: float) -> Any:
    def run(ctx: RunContext) -> dict[str, Any]:
        if delay:
            time.sleep(delay)
        return {"task": ctx.task, "attempt": ctx.attempt, "inputs": len(ctx.inputs)}

    return run


def build(specs: list[Spec], delay_ms: int, audit: str, width: int) -> tuple[Plan, World]:
    world = World()
    registry = TaskRegistry()
    key = WORKER_KEY.format(ms=delay_ms)
    registry.register_worker(key, worker(delay_ms / 1000))
    registry.register_auditor(AUDITOR_KEY, world.audit)
    runner = Plan("bench-engine", ContextGraph(), registry=registry, executor=InProcessExecutor(width=width))
    for spec in specs:
        audited = audit == "all" or (audit == "roots" and spec.layer == 0)
        runner.task(
            spec.name,
            assumes=statement(spec.column),
            worker_key=key,
            auditor_key=AUDITOR_KEY if audited else None,
            needs=spec.needs,
            produces=[f"artefact of {spec.name}"],
        )
    return runner, world


def timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def resume(runner: Plan, world: World, column: int) -> dict[str, float | int]:
    """Disprove one assumption through its auditor, repair its tasks, run the stale closure."""
    world.false.add(statement(column))
    report, recheck_s = timed(runner.recheck)
    stale = set(report.stale)
    on_ground = [t.name for t in runner.tasks.values() if t.assumes == statement(column)]

    def repair_all() -> None:
        # One replacement per task: a second repair onto the same replacement statement is refused
        # ("not new ground"), so tasks sharing a rejected ground cannot share its replacement.
        for name in on_ground:
            runner.repair(name, assumes=f"{statement(column)} under contract v2 ({name})")

    _, repair_s = timed(repair_all)
    rerun, run_s = timed(runner.run)
    assert set(rerun.executed) == stale, "the resume ran exactly the stale closure"
    assert not rerun.blocked and not rerun.failed
    return {
        "stale": len(stale),
        "recheck_s": recheck_s,
        "repair_s": repair_s,
        "run_s": run_s,
        "total_s": recheck_s + repair_s + run_s,
        "executed": len(rerun.executed),
        "cached": len(rerun.cached),
    }


def add_plan_options(parser: argparse.ArgumentParser) -> None:
    """The generated plan's shape, shared by every bench that runs it (engine, orchestration, recheck_cost)."""
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--layers", type=int, default=20)
    parser.add_argument("--assumptions", type=int, default=50)
    parser.add_argument("--width", type=int, default=8)
    parser.add_argument("--delay-ms", type=int, default=20)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_plan_options(parser)
    parser.add_argument("--audit", choices=("roots", "all", "none"), default="roots")
    parser.add_argument("--stale", type=float, default=0.05, help="target share of tasks a disproof makes stale")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()

    specs = generate(args.tasks, args.layers, args.assumptions, args.seed)
    closures = closure_sizes(specs, args.assumptions)
    target = args.stale * args.tasks
    column = min(closures, key=lambda c: (abs(len(closures[c]) - target), c))
    per_layer = args.tasks // args.layers
    edges = sum(len(s.needs) for s in specs)
    print(
        f"plan: {args.tasks} tasks, {args.layers} layers x {per_layer}, {args.assumptions} assumptions, "
        f"{edges} needs, auditors: {args.audit}, width {args.width}, seed {args.seed}"
    )

    # -- no-op worker: all of the wall time is the engine's ---------------------------------------
    (noop, noop_world), declare_s = timed(lambda: build(specs, 0, args.audit, args.width))
    first, noop_s = timed(noop.run)
    assert len(first.executed) == args.tasks and len(first.layers) == args.layers
    print(f"\ndeclare {args.tasks} tasks: {declare_s:.2f} s")
    print("0 ms worker, full round:")
    print(f"  {noop_s:.2f} s, {1 / noop_s:.2f} rounds/s, {args.layers / noop_s:.1f} layers/s")
    print(f"  engine cost per task (no-op worker): {noop_s * 1000 / args.tasks:.2f} ms")
    _, cached_s = timed(noop.run)
    print(f"  a round with nothing to do (all {args.tasks} cached): {cached_s:.2f} s, {1 / cached_s:.1f} rounds/s")
    noop_resume = resume(noop, noop_world, column)

    # -- sleeping worker --------------------------------------------------------------------------
    delay = args.delay_ms / 1000
    slow, slow_world = build(specs, args.delay_ms, args.audit, args.width)
    second, slow_s = timed(slow.run)
    assert len(second.executed) == args.tasks
    ideal = args.layers * math.ceil(per_layer / args.width) * delay
    print(f"\n{args.delay_ms} ms worker, full round:")
    print(f"  {slow_s:.2f} s, {1 / slow_s:.3f} rounds/s, {args.layers / slow_s:.1f} layers/s")
    print(f"  ideal (zero-overhead scheduler): {ideal:.2f} s")
    print(f"  engine overhead per task: (wall - ideal) / tasks = {(slow_s - ideal) * 1000 / args.tasks:.2f} ms")
    slow_resume = resume(slow, slow_world, column)

    # -- the stale resume ---------------------------------------------------------------------------
    share = len(closures[column]) / args.tasks
    print(
        f"\n{share:.1%}-stale resume: assumption {column:02d} rejected by its auditor; "
        f"{len(closures[column])} tasks stale"
    )
    for label, full, res in (("0 ms", noop_s, noop_resume), (f"{args.delay_ms} ms", slow_s, slow_resume)):
        assert res["stale"] == len(closures[column]), "the engine's closure is the plan's"
        print(
            f"  {label:>5} worker: recheck {res['recheck_s']:.2f} s + repair {res['repair_s']:.2f} s + "
            f"run {res['run_s']:.2f} s = {res['total_s']:.2f} s vs full round {full:.2f} s "
            f"({res['total_s'] / full:.1%}); {res['executed']} executed, {res['cached']} cached"
        )
    print(f"\nledger: {len(slow.ledger)} entries, verifies: {slow.ledger.verify()}")
    total = time.perf_counter() - started
    print(f"bench total: {total:.1f} s (budget {TARGET_SECONDS:.0f} s)")
    return 0 if total <= TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())

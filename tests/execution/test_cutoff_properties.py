"""Property tests: for random plans and random changes, what runs is what the task functions say.

Hypothesis draws a plan — each task reads some world facts through ``ctx.read`` (raw or bucketed,
some only when their inputs add up to an even number: a read that depends on data), needs some
earlier tasks, and may be volatile — and a change: new values for some facts, and possibly a
disproof of one task's ground followed by a repair onto a worker that may or may not change its
output. The plan runs on the in-process executor with early cutoff and tracked reads on.

The ground truth is computed from the task functions alone, by evaluating them on the old and the
new world in declaration order (nothing of the engine is used):

* a task is an **origin** when a fact it read last time now has another value, or it is the
  repaired task;
* the **reach** is the origins and every task that needs one of them, transitively;
* a task in the reach **must run** when it is an origin, when it is volatile, or when a need's new
  output differs from its old one; every other task keeps its result.

The engine must execute exactly the tasks that must run, and serve every task's new output.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextmesh import AuditContext, ContextGraph, Plan, RunContext, TaskRegistry, Verdict

FACTS = ("f0", "f1", "f2", "f3")


@dataclass(frozen=True)
class Spec:
    """One drawn task: what it reads, how, what it needs."""

    name: str
    reads: tuple[str, ...]
    coarse: bool
    even_read: str | None  # read only when the needs' values add up to an even number
    needs: tuple[str, ...]
    volatile: bool


def evaluate(spec: Spec, world: Mapping[str, int], inputs: Mapping[str, Any], salt: int) -> tuple[Any, list[str]]:
    """The task function: its output and the facts it read, in order."""
    upstream = [inputs[need]["v"] for need in spec.needs]
    read = list(spec.reads)
    if spec.even_read is not None and sum(upstream) % 2 == 0:
        read.append(spec.even_read)
    seen = [world[f] // 10 if spec.coarse else world[f] for f in read]
    text = json.dumps([spec.name, seen, upstream, salt])
    return {"v": int(hashlib.sha256(text.encode()).hexdigest()[:6], 16) % 7}, read


@st.composite
def plans(draw: st.DrawFn) -> list[Spec]:
    count = draw(st.integers(2, 8))
    specs: list[Spec] = []
    for index in range(count):
        earlier = [s.name for s in specs]
        needs = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if earlier else []
        specs.append(
            Spec(
                name=f"t{index}",
                reads=tuple(draw(st.lists(st.sampled_from(FACTS), unique=True, max_size=2))),
                coarse=draw(st.booleans()),
                even_read=draw(st.none() | st.sampled_from(FACTS)),
                needs=tuple(needs),
                volatile=draw(st.integers(0, 4)) == 0,
            )
        )
    return specs


worlds = st.fixed_dictionaries({f: st.integers(0, 40) for f in FACTS})


class Harness:
    """The drawn plan on a Plan: one worker key per behaviour, counting the calls."""

    def __init__(self, specs: list[Spec], world: dict[str, int]) -> None:
        self.specs = {s.name: s for s in specs}
        self.world = world
        self.salts: dict[str, int] = {}
        self.doubted: str | None = None
        self.calls: list[str] = []
        registry = TaskRegistry()
        registry.register_fact("world", lambda name: self.world[name])
        registry.register_worker("work.v1", self._work)
        registry.register_worker("work.v2", self._work)
        registry.register_auditor("doubt.v1", self._doubt)
        self.plan = Plan("prop", ContextGraph(), registry=registry)
        for spec in specs:
            self.plan.task(
                spec.name,
                worker_key="work.v1",
                auditor_key="doubt.v1",
                needs=spec.needs,
                assumes=f"{spec.name} stands",
                volatile=spec.volatile,
            )

    def _work(self, ctx: RunContext) -> Any:
        self.calls.append(ctx.task)
        # The function's world lookups are its ctx.read calls, so a conditional read stays conditional.
        output, _ = evaluate(self.specs[ctx.task], _Recorded(ctx), dict(ctx.inputs), self.salts.get(ctx.task, 0))
        return output

    def _doubt(self, ctx: AuditContext) -> Verdict:
        if ctx.task == self.doubted and ctx.assumption == f"{ctx.task} stands":
            return ctx.disproved("doubted")
        return ctx.ok()


class _Recorded(dict[str, int]):
    """A world view whose lookups are the worker's ``ctx.read`` calls (so only what it uses is read)."""

    def __init__(self, ctx: RunContext) -> None:
        super().__init__()
        self.ctx = ctx

    def __getitem__(self, name: str) -> int:
        value: int = self.ctx.read("world", name)
        return value


def truth(
    specs: list[Spec], old: Mapping[str, int], new: Mapping[str, int], repaired: str | None, salt: int
) -> tuple[set[str], dict[str, Any]]:
    """What must run after the change, and every task's new output, from the task functions alone."""
    before: dict[str, Any] = {}
    reads: dict[str, list[str]] = {}
    for spec in specs:
        before[spec.name], reads[spec.name] = evaluate(spec, old, {n: before[n] for n in spec.needs}, 0)
    origins = {s.name for s in specs if any(old[f] != new[f] for f in reads[s.name])} | (
        {repaired} if repaired else set()
    )
    reach = set(origins)
    after: dict[str, Any] = {}
    must: set[str] = set()
    for spec in specs:
        if any(need in reach for need in spec.needs):
            reach.add(spec.name)
        inputs = {n: after[n] for n in spec.needs}
        after[spec.name], _ = evaluate(spec, new, inputs, salt if spec.name == repaired else 0)
        changed_input = any(after[n] != before[n] for n in spec.needs)
        if spec.name in reach and (spec.name in origins or spec.volatile or changed_input):
            must.add(spec.name)
    return must, after


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=plans(),
    old=worlds,
    new=worlds,
    doubt=st.none() | st.integers(0, 7),
    salt=st.sampled_from([0, 1]),
)
def test_after_any_change_the_engine_runs_exactly_what_the_task_functions_say(
    specs: list[Spec], old: dict[str, int], new: dict[str, int], doubt: int | None, salt: int
) -> None:
    harness = Harness(specs, dict(old))
    assert set(harness.plan.run().executed) == {s.name for s in specs}
    repaired = None if doubt is None or doubt >= len(specs) else specs[doubt].name
    if repaired is not None:
        harness.doubted = repaired
        assert harness.plan.recheck().stale[0] == repaired
        harness.salts[repaired] = salt  # salt 0: the repaired worker returns what it returned before
        harness.plan.repair(repaired, assumes=f"{repaired} stands again", worker_key="work.v2")
    harness.world.update(new)
    harness.calls.clear()
    report = harness.plan.run()
    must, after = truth(specs, old, new, repaired, salt)
    assert report.failed == {} and report.blocked == {}
    assert set(harness.calls) == set(report.executed) == must
    assert len(harness.calls) == len(must), "no task ran twice"
    assert {name: task.output for name, task in harness.plan.tasks.items()} == after
    assert harness.plan.ledger.verify()
    again = harness.plan.run()
    assert again.executed == [] and set(again.cached) == {s.name for s in specs}

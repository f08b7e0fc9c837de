"""The seeded generator: a world of facts, a layered plan over it, the task function, the named cases.

A **world** maps fact names to small integers. A **plan** has ``layers x columns`` tasks; task
``tLL-CC`` sits in layer ``LL`` of column ``CC``. Every task

* **declares** one assumption about the fact of its column and *band* (layer 0 is band 0; later
  layers are grouped ``band_width`` at a time), and reads that fact — the **declared read**. A
  *coarse* fact is read in buckets of :data:`BUCKET` (a threshold, a tier), so some changes to it
  leave the output as it was; the assumption is stated at the granularity the task reads:
  ``fact <f> is <value>``, or ``fact <f> is in 30..39`` for a coarse fact (:func:`ground`);
* reads the outputs of the tasks it needs — the **indirect read**: the task of its own column in
  the layer before, and up to two tasks of earlier layers in its own column or columns to its left
  in the same block of ``block`` columns (so what one fact reaches stays inside a block);
* with probability ``undeclared_share`` also reads a fact of another column that it never
  declared — the **undeclared read**.

:func:`evaluate` is the task function: a deterministic digest of exactly what the task read. Both
contenders run it; the ground truth re-evaluates it. Nothing here imports ContextMesh or Prefect.

:func:`named_cases` picks, from the plan alone, the world changes the benchmark reports on their
own — (a) an indirect dependence through data, (b) an undeclared read, (c) a rerun whose output is
unchanged — plus a seeded mix of changes.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

BUCKET = 10
STATEMENT = re.compile(r"^fact (\S+) is (-?[0-9]+)$")
BUCKET_STATEMENT = re.compile(r"^fact (\S+) is in (-?[0-9]+)\.\.(-?[0-9]+)$")


def statement(fact: str, value: int) -> str:
    """The assumption a task declares about a fact it reads exactly."""
    return f"fact {fact} is {value}"


def ground(fact: str, value: int, *, coarse: bool) -> str:
    """The assumption a task declares about the fact it reads, at the granularity it reads it: the
    exact value, or for a coarse fact the bucket (``fact f is in 30..39``), since a task that reads
    ``f // BUCKET`` depends on the bucket and nothing finer (ADR 0026)."""
    if not coarse:
        return statement(fact, value)
    low = value // BUCKET * BUCKET
    return f"fact {fact} is in {low}..{low + BUCKET - 1}"


def parse_statement(text: str) -> tuple[str, int, int]:
    """``(fact, lowest, highest)`` value a statement written by :func:`ground` allows."""
    found = STATEMENT.match(text)
    if found is not None:
        return found.group(1), int(found.group(2)), int(found.group(2))
    ranged = BUCKET_STATEMENT.match(text)
    if ranged is None:
        raise ValueError(f"not a fact statement: {text!r}")
    return ranged.group(1), int(ranged.group(2)), int(ranged.group(3))


@dataclass(frozen=True)
class TaskSpec:
    """One generated task: where it sits, what it declares, what it reads."""

    name: str
    layer: int
    column: int
    fact: str
    coarse: bool
    needs: tuple[str, ...]
    undeclared: str | None


@dataclass(frozen=True)
class WorldPlan:
    """A generated plan and the world it starts from."""

    seed: int
    layers: int
    columns: int
    tasks: tuple[TaskSpec, ...]
    world: Mapping[str, int]
    coarse: frozenset[str]
    _by_name: dict[str, TaskSpec] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_name.update({spec.name: spec for spec in self.tasks})

    def spec(self, name: str) -> TaskSpec:
        """The task called ``name``."""
        return self._by_name[name]

    def by_layer(self) -> list[list[TaskSpec]]:
        """Tasks grouped by layer, in declaration order."""
        grouped: dict[int, list[TaskSpec]] = {}
        for spec in self.tasks:
            grouped.setdefault(spec.layer, []).append(spec)
        return [grouped[layer] for layer in sorted(grouped)]

    def declarers(self, fact: str) -> list[str]:
        """Tasks that declare an assumption about ``fact``."""
        return [s.name for s in self.tasks if s.fact == fact]

    def undeclared_readers(self, fact: str) -> list[str]:
        """Tasks that read ``fact`` without declaring it."""
        return [s.name for s in self.tasks if s.undeclared == fact]

    def downstream(self, names: Iterable[str]) -> set[str]:
        """``names`` and every task that needs one of them, transitively (through data)."""
        reached = set(names)
        for spec in self.tasks:  # declaration order is topological
            if any(need in reached for need in spec.needs):
                reached.add(spec.name)
        return reached


def _band(layer: int, band_width: int) -> int:
    return 0 if layer == 0 else 1 + (layer - 1) // band_width


def generate(
    *,
    seed: int = 0,
    layers: int = 10,
    columns: int = 24,
    block: int = 4,
    band_width: int = 4,
    coarse_share: float = 0.25,
    undeclared_share: float = 0.05,
) -> WorldPlan:
    """A plan and its starting world, the same for the same arguments."""
    rng = random.Random(seed)
    bands = _band(layers - 1, band_width) + 1
    facts = [f"c{column:02d}.b{band}" for column in range(columns) for band in range(bands)]
    coarse = frozenset(rng.sample(facts, round(coarse_share * len(facts))))
    world = {fact: rng.randrange(100) for fact in facts}
    names = {(layer, column): f"t{layer:02d}-{column:02d}" for layer in range(layers) for column in range(columns)}
    tasks = []
    for layer in range(layers):
        for column in range(columns):
            needs: list[str] = []
            if layer > 0:
                needs.append(names[(layer - 1, column)])
                left = range(column // block * block, column + 1)
                for _ in range(rng.randint(0, 2)):
                    needs.append(names[(rng.randrange(layer), rng.choice(left))])
            fact = f"c{column:02d}.b{_band(layer, band_width)}"
            undeclared = None
            if rng.random() < undeclared_share:
                undeclared = rng.choice([f for f in facts if not f.startswith(f"c{column:02d}.")])
            tasks.append(
                TaskSpec(
                    names[(layer, column)], layer, column, fact, fact in coarse, tuple(dict.fromkeys(needs)), undeclared
                )
            )
    return WorldPlan(seed, layers, columns, tuple(tasks), world, coarse)


def evaluate(
    spec: TaskSpec,
    world: Mapping[str, int],
    inputs: Mapping[str, Any],
    *,
    undeclared_world: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """The task function: a digest of the declared fact (bucketed when coarse), the undeclared fact
    (read from ``undeclared_world`` when given: the ground truth's counterfactual) and the inputs."""
    own = world[spec.fact] // BUCKET if spec.coarse else world[spec.fact]
    extra = None
    if spec.undeclared is not None:
        extra = (world if undeclared_world is None else undeclared_world)[spec.undeclared]
    upstream = [inputs[need]["value"] for need in spec.needs]
    text = json.dumps([spec.name, own, extra, upstream], separators=(",", ":"))
    return {"task": spec.name, "value": hashlib.sha256(text.encode()).hexdigest()[:16]}


# -- the named cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A world change the benchmark reports: which facts take which new values, and why it was chosen."""

    key: str
    title: str
    change: Mapping[str, int]
    note: str
    # Rerun on the session whose workers read their undeclared fact through ``ctx.read`` (ADR 0018).
    tracked: bool = False
    # Rerun on the session whose auditors declare nothing they watch, so every recheck runs them all
    # (ADR 0019): what a user who skips the declaration pays.
    blind_auditors: bool = False
    # Rerun on the session whose coarse-fact declarers state the exact value as their ground (the
    # formulation before ADR 0026): they must re-run, and early cutoff keeps their dependents.
    exact_grounds: bool = False
    # Why the ContextMesh side of this case is not measured yet, when it is not (counts never faked).
    pending: str | None = None

    def apply(self, world: Mapping[str, int]) -> dict[str, int]:
        """The world after this change."""
        return {**world, **self.change}


def _reach(plan: WorldPlan, fact: str) -> set[str]:
    return plan.downstream(plan.declarers(fact))


def _nearest(plan: WorldPlan, candidates: list[str], share: float) -> str:
    target = share * len(plan.tasks)
    return min(candidates, key=lambda f: (abs(len(_reach(plan, f)) - target), f))


def _other_value(value: int, rng: random.Random) -> int:
    return rng.choice([v for v in range(100) if v // BUCKET != value // BUCKET])


def _same_bucket(value: int) -> int:
    return value + 1 if (value + 1) // BUCKET == value // BUCKET else value - 1


def named_cases(plan: WorldPlan, *, share: float = 0.05, mix_facts: int = 4) -> list[Case]:
    """The world changes reported: (a) indirect, (b) undeclared, (b) again with tracked reads, (c)
    unchanged output, (c) again with grounds stated exactly, (w) an auditor's watched slice
    unchanged, (a) again with auditors that declare nothing, and a mix.

    Each is chosen from the plan alone (seeded): (a) a layer-0 fact read only by declaration, whose
    change crosses a bucket, with the reach nearest ``share`` of the plan; (b) the fact with the
    most undeclared readers — and the same change again on a session whose workers make that read
    through ``ctx.read``; (c) a coarse fact nobody reads undeclared, moved inside its bucket (which
    its declarers' stated ground allows, so nothing is contradicted and nothing need run) — and the
    same change again on a session whose declarers state the exact value, which it contradicts; (w) the
    fact of (a) observed again at the value it has, so no auditor's watched slice changes; the
    mix: ``mix_facts`` facts drawn at random, each given a random new value.
    """
    rng = random.Random(plan.seed + 7)
    facts = sorted(plan.world)
    hidden = {s.undeclared for s in plan.tasks if s.undeclared}
    roots = [f for f in facts if f.endswith(".b0") and f not in plan.coarse and f not in hidden]
    roots = [f for f in roots if len(_reach(plan, f)) > 1]
    indirect = _nearest(plan, roots, share)
    readers = {f: len(plan.undeclared_readers(f)) for f in facts if f not in plan.coarse}
    undeclared = max(sorted(readers), key=lambda f: (readers[f], -len(_reach(plan, f))))
    flat = [f for f in sorted(plan.coarse) if f not in hidden and len(_reach(plan, f)) > len(plan.declarers(f))]
    if not roots or not flat or readers[undeclared] == 0:
        raise ValueError(f"seed {plan.seed}: this plan is too small to hold cases (a), (b) and (c); use another seed")
    unchanged = _nearest(plan, flat, share)
    within_bucket = {unchanged: _same_bucket(plan.world[unchanged])}  # (c) and its exact twin
    mixed = rng.sample(facts, mix_facts)
    indirect_change = {indirect: _other_value(plan.world[indirect], rng)}
    undeclared_change = {undeclared: _other_value(plan.world[undeclared], rng)}  # (b) and its tracked twin
    return [
        Case(
            "a",
            "(a) indirect through data",
            indirect_change,
            f"{indirect} changes; 1 task declares it, {len(_reach(plan, indirect)) - 1} read it only through data",
        ),
        Case(
            "b",
            "(b) undeclared read",
            undeclared_change,
            f"{undeclared} changes; {readers[undeclared]} task(s) read it without declaring it",
        ),
        Case(
            "b-tracked",
            "(b) undeclared read, tracked",
            undeclared_change,
            f"{undeclared} changes; its {readers[undeclared]} undeclared reader(s) read it through ctx.read",
            tracked=True,
        ),
        Case(
            "c",
            "(c) rerun, output unchanged",
            within_bucket,
            f"coarse {unchanged} moves inside its bucket: its {len(plan.declarers(unchanged))} declarer(s) "
            "state the bucket as their ground, which still holds",
        ),
        Case(
            "c-exact",
            "(c) again, grounds stated exactly",
            within_bucket,
            f"the change of (c) on a session whose {len(plan.declarers(unchanged))} declarer(s) of {unchanged} "
            "state its exact value: they re-run to their old outputs, early cutoff keeps their dependents",
            exact_grounds=True,
        ),
        Case(
            "w",
            "(w) watched slice unchanged",
            {indirect: plan.world[indirect]},
            f"{indirect} is observed again at {plan.world[indirect]}, the value every task read",
        ),
        Case(
            "a-blind",
            "(a) again, auditors declaring nothing",
            indirect_change,
            "the change of (a) on a session whose 96 auditors declare nothing they watch: the recheck runs all",
            blind_auditors=True,
        ),
        Case(
            "mix",
            f"seeded mix ({mix_facts} facts)",
            {f: rng.choice([v for v in range(100) if v != plan.world[f]]) for f in mixed},
            "random facts, random new values: " + ", ".join(mixed),
        ),
    ]

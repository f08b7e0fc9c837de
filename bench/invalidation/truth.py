"""Ground truth from the task functions alone, and the counts each contender is scored by.

After a world change every task function is re-evaluated, in declaration (topological) order, on
the new world with its recomputed inputs. A task **must** re-run when its output would change; it
**need not** when its output would stay the same. Nothing of ContextMesh (no closure, no graph) is
imported here: the only dependency information used is what the functions actually read.

The cause of each must-re-run is found the same way, by one counterfactual evaluation in which
undeclared reads still see the old world: a task that changes even then is *direct* (its declared
fact changed) or *indirect* (only its inputs did); one that changes only when its undeclared reads
see the new world is *undeclared*.

A contender is scored by what it executed and what it finally served: **re-executed** (task
function calls), **stale served** (final output differs from the ground truth's new output),
**needless** (executed though its output would not change), **missed** (must re-run, not executed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from invalidation.world import WorldPlan, evaluate

CAUSES = ("direct", "indirect", "undeclared")


def outputs(
    plan: WorldPlan, world: Mapping[str, int], *, undeclared_world: Mapping[str, int] | None = None
) -> dict[str, dict[str, str]]:
    """Every task's output on ``world``, evaluated in declaration order."""
    done: dict[str, dict[str, str]] = {}
    for spec in plan.tasks:
        inputs = {need: done[need] for need in spec.needs}
        done[spec.name] = evaluate(spec, world, inputs, undeclared_world=undeclared_world)
    return done


@dataclass(frozen=True)
class Truth:
    """Old and new outputs, what must re-run, and why."""

    old: dict[str, dict[str, str]]
    new: dict[str, dict[str, str]]
    must: frozenset[str]
    cause: dict[str, str]

    def count(self, cause: str) -> int:
        """How many must-re-runs have this cause."""
        return sum(1 for c in self.cause.values() if c == cause)


def ground_truth(plan: WorldPlan, before: Mapping[str, int], after: Mapping[str, int]) -> Truth:
    """What must re-run when the world goes from ``before`` to ``after``."""
    old = outputs(plan, before)
    new = outputs(plan, after)
    declared_only = outputs(plan, after, undeclared_world=before)
    must = frozenset(name for name in new if new[name] != old[name])
    cause = {}
    for name in sorted(must):
        spec = plan.spec(name)
        if declared_only[name] == old[name]:
            cause[name] = "undeclared"
        elif after[spec.fact] != before[spec.fact]:
            cause[name] = "direct"
        else:
            cause[name] = "indirect"
    return Truth(old, new, must, cause)


@dataclass(frozen=True)
class Score:
    """One contender's rerun, counted against the ground truth."""

    executed: frozenset[str]
    stale: frozenset[str]
    needless: frozenset[str]
    missed: frozenset[str]

    def counts(self) -> dict[str, int]:
        """The four counts as plain data."""
        return {
            "executed": len(self.executed),
            "stale": len(self.stale),
            "needless": len(self.needless),
            "missed": len(self.missed),
        }


def score(truth: Truth, executed: set[str], served: Mapping[str, Any]) -> Score:
    """Count a contender's rerun: ``executed`` task names, ``served`` final output per task."""
    stale = frozenset(name for name, want in truth.new.items() if served.get(name) != want)
    return Score(
        frozenset(executed),
        stale,
        frozenset(executed - truth.must),
        frozenset(truth.must - executed),
    )

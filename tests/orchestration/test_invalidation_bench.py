"""InvalidationBench on a small seeded plan, both contenders against the real server of ``conftest.py``.

The plan has 56 tasks (4 layers x 14 columns: above the 50-task line, so its task runs are
untagged, as the benchmark's are) and 0 ms workers. Three world changes are rerun by both
contenders: the named case (a) (one fact, read directly by one task and indirectly, through data,
by its dependents), a change of three facts that only declared and indirect reads see, the named
case (c) (a coarse fact moved inside its bucket, which its declarers state as their ground) and its
exact twin (the same move on a session whose declarers state the exact value, so early cutoff must
keep their dependents). The
counts are checked exactly against the ground truth, which the benchmark computes from the task
functions alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Appended, not put first: bench/ holds mcp.py, session.py and orchestration.py, which would shadow
# the MCP SDK for every test module imported after this one in the same process.
sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))

from invalidation.run import run_bench
from invalidation.world import BUCKET, Case, WorldPlan, generate

pytestmark = pytest.mark.integration

SHAPE = {"seed": 0, "layers": 4, "columns": 14}


def declared_only_change(plan: WorldPlan) -> Case:
    """Three facts that no task reads without declaring, each moved to another bucket."""
    hidden = {s.undeclared for s in plan.tasks if s.undeclared}
    facts = [f for f in sorted(plan.world) if f not in hidden][1::4][:3]
    change = {f: (plan.world[f] + 3 * BUCKET) % 100 for f in facts}
    return Case("declared", "declared and indirect reads only", change, ", ".join(facts))


def test_contextmesh_reruns_exactly_what_the_task_functions_say_and_plain_prefect_reruns_a_bumped_task(
    prefect_api: str, tmp_path: Path
) -> None:
    plan = generate(**SHAPE)
    bench = run_bench(
        prefect_api,
        tmp_path,
        **SHAPE,
        delay_ms=0,
        width=4,
        repeat=1,
        only=("a", "c", "c-exact"),
        extra=(declared_only_change(plan),),
    )
    cases = {r.case.key: r for r in bench.cases}
    assert set(cases) == {"a", "c", "c-exact", "declared"}

    # Declared and indirect dependences: ContextMesh re-runs exactly what must re-run, serves nothing stale.
    for key in ("a", "declared"):
        result = cases[key]
        assert result.truth.count("indirect") > 0 and result.truth.count("undeclared") == 0, key
        assert result.executed["ContextMesh"] == result.truth.must, key
        assert result.counts["ContextMesh"] == {
            "executed": len(result.truth.must),
            "stale": 0,
            "needless": 0,
            "missed": 0,
        }, key
        assert result.explained == result.fallen == len(result.truth.must), "every fallen task has a reason chain"
        assert result.ledger_ok, result.ledger_message

    # The plain contender is implemented honestly: a version bump re-runs the task it parameterises,
    # the input-keyed cache carries the change on through data, and serves everything else.
    (fact,) = cases["a"].case.change
    bumped = set(plan.declarers(fact))
    assert bumped and bumped <= cases["a"].executed["plain Prefect"]
    assert cases["a"].executed["plain Prefect"] == cases["a"].truth.must
    assert cases["a"].counts["plain Prefect"]["stale"] == 0
    assert len(cases["a"].executed["plain Prefect"]) < len(plan.tasks)

    # (c) a coarse fact moved inside its bucket: its declarers state the bucket as their ground
    # (ADR 0026), so the observation contradicts nothing and neither contender re-runs anything; the
    # ContextMesh recheck ran only that fact's auditor (the others watch observations of their own
    # facts, ADR 0019) and the plain user, with the same statement, bumped no version.
    unchanged = cases["c"]
    (coarse,) = unchanged.case.change
    declarers = set(plan.declarers(coarse))
    assert unchanged.truth.must == frozenset() and plan.downstream(declarers) > declarers
    assert unchanged.executed["plain Prefect"] == unchanged.executed["ContextMesh"] == frozenset()
    assert unchanged.counts["ContextMesh"]["stale"] == unchanged.counts["plain Prefect"]["stale"] == 0
    assert unchanged.fallen == 0 and unchanged.task_runs["ContextMesh"] == 1

    # (c) again, grounds stated exactly: the observation contradicts the declarers' ground, so they
    # re-run — needlessly, to their old outputs, which no system that cannot see inside the task
    # function can avoid — and early cutoff (ADR 0018) revalidates every dependent instead of
    # running it. Without cutoff the whole closure would execute. Plain Prefect, bumping the exact
    # statement's version, re-runs the declarers too and its input-keyed cache stops there.
    exact = cases["c-exact"]
    assert exact.case.change == unchanged.case.change and exact.truth.must == frozenset()
    assert exact.executed["ContextMesh"] == exact.executed["plain Prefect"] == declarers
    for contender in ("ContextMesh", "plain Prefect"):
        assert exact.counts[contender] == {
            "executed": len(declarers),
            "stale": 0,
            "needless": len(declarers),
            "missed": 0,
        }, contender
    dependents = plan.downstream(declarers) - declarers
    assert exact.fallen == len(declarers) + len(dependents) and exact.revalidated == len(dependents)
    assert exact.explained == exact.fallen and exact.ledger_ok, exact.ledger_message

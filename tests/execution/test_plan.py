"""The plan engine: declaring tasks, rounds and layers, blocking, recheck, repair, rerun and rebind."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from execution_helpers import AUDITOR, WORKER, Calls, counting_worker, demo_runner, keyed_runner, walk_to_repair

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.evidence import submit
from contextmesh.core.errors import ExecutionError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.demo.auth import DEFAULT_KEYS, declare_plan
from contextmesh.execution.context import AuditContext, RunContext, Verdict
from contextmesh.execution.in_process import InProcessExecutor
from contextmesh.execution.plan import Plan, TaskState
from contextmesh.execution.snapshot import snapshot_plan
from contextmesh.execution.task_registry import RegistryError, TaskRegistry


def plain(ctx: RunContext) -> dict[str, Any]:
    return {"task": ctx.task}


def reject_ground(runner: Plan, task: str, text: str = "the ground turned out false") -> None:
    """Reject a task's assumption through submitted evidence, outside any auditor."""
    evidence = submit(runner.graph, text, runner.source_id).node.id
    Assumptions(runner.graph).reject(runner.tasks[task].assumption_id, evidence_id=evidence)


def events(runner: Plan) -> list[tuple[str, str | None]]:
    return [(e.event, e.task) for e in runner.ledger.entries]


# -- declaring ------------------------------------------------------------------------------------


def test_a_task_needs_exactly_one_of_worker_key_and_run() -> None:
    runner, _, _, _ = keyed_runner()
    with pytest.raises(ExecutionError, match="exactly one of worker_key= and run="):
        runner.task("neither", assumes="something holds")
    with pytest.raises(ExecutionError, match="exactly one of worker_key= and run="):
        runner.task("both", worker_key=WORKER, run=plain, assumes="something holds")
    assert runner.tasks == {}
    assert runner.graph.assumptions == {}  # refused before the ground was bound


def test_audit_with_auditor_key_is_refused() -> None:
    runner, _, _, _ = keyed_runner()
    with pytest.raises(ExecutionError, match="at most one of auditor_key= and audit="):
        runner.task("t", worker_key=WORKER, auditor_key=AUDITOR, audit=lambda ctx: ctx.ok(), assumes="x holds")
    assert "t" not in runner.tasks


def test_needs_must_be_declared_first() -> None:
    runner, _, _, _ = keyed_runner()
    with pytest.raises(ExecutionError, match="needs 'later', which is not declared before it"):
        runner.task("early", worker_key=WORKER, needs=["later"], assumes="x holds")
    with pytest.raises(ExecutionError, match="needs 'self'"):
        runner.task("self", worker_key=WORKER, needs=["self"], assumes="x holds")
    assert runner.tasks == {}


def test_an_unknown_key_is_refused_at_declaration() -> None:
    runner, _, _, _ = keyed_runner()
    with pytest.raises(RegistryError, match=r"'test\.worker\.v2'.*look close: test\.worker\.v1"):
        runner.task("t", worker_key="test.worker.v2", assumes="x holds")
    with pytest.raises(RegistryError, match=r"no auditor is registered under 'test\.audit\.nope\.v1'"):
        runner.task("t", worker_key=WORKER, auditor_key="test.audit.nope.v1", assumes="x holds")
    with pytest.raises(RegistryError, match="registered as a worker, not an auditor"):
        runner.task("t", worker_key=WORKER, auditor_key=WORKER, assumes="x holds")
    assert runner.tasks == {}


def test_a_key_without_a_registry_is_refused() -> None:
    runner = Plan("plan", ContextGraph())
    with pytest.raises(ExecutionError, match="has no registry"):
        runner.task("t", worker_key=WORKER, assumes="x holds")


def test_a_task_name_is_declared_once() -> None:
    runner, _, _, _ = keyed_runner()
    runner.task("t", worker_key=WORKER, assumes="x holds")
    with pytest.raises(ExecutionError, match="already declared"):
        runner.task("t", worker_key=WORKER, assumes="y holds")


# -- rounds and layers ----------------------------------------------------------------------------


def diamond(runner: Plan) -> None:
    runner.task("a", worker_key=WORKER, auditor_key=AUDITOR, assumes="a holds", produces=["A"])
    runner.task("b", worker_key=WORKER, auditor_key=AUDITOR, needs=["a"], assumes="b holds")
    runner.task("c", worker_key=WORKER, needs=["a"], assumes="c holds")
    runner.task("d", worker_key=WORKER, auditor_key=AUDITOR, needs=["b", "c"], assumes="d holds")
    runner.task("e", worker_key=WORKER, assumes="e holds")


def test_a_round_runs_ready_layers_in_declaration_order() -> None:
    runner, _, workers, auditors = keyed_runner()
    diamond(runner)
    report = runner.run()
    assert report.round == runner.round == 1
    assert report.layers == [["a", "e"], ["b", "c"], ["d"]]
    assert report.executed == ["a", "e", "b", "c", "d"]
    assert report.cached == [] and report.blocked == {} and report.failed == {}
    assert runner.states() == dict.fromkeys("abcde", "done")
    assert dict(workers.counts) == dict.fromkeys("abcde", 1)
    assert dict(auditors.counts) == dict.fromkeys("abd", 1)
    assert runner.tasks["d"].output == {"task": "d", "attempt": 1, "inputs": ["b", "c"]}
    decision = runner.tasks["d"].decision_id
    assert decision == slug("plan|d|v1", "decision")
    needed = {e.dst for e in runner.graph.out_edges(decision, ["depends_on"])}
    assert {runner.tasks["b"].decision_id, runner.tasks["c"].decision_id, runner.tasks["d"].assumption_id} == needed


def test_a_second_round_caches_every_done_task_and_calls_no_worker() -> None:
    runner, _, workers, auditors = keyed_runner()
    diamond(runner)
    runner.run()
    before = dict(workers.counts), dict(auditors.counts)
    report = runner.run()
    assert report.layers == [] and report.executed == []
    assert report.cached == ["a", "b", "c", "d", "e"]
    assert (dict(workers.counts), dict(auditors.counts)) == before
    assert [e.event for e in runner.ledger.entries if e.round == 2] == ["cached"] * 5
    assert all(e.decision_id == runner.tasks[e.task].decision_id for e in runner.ledger.entries if e.round == 2)


# -- nothing executes on rejected ground ----------------------------------------------------------


def test_nothing_executes_on_rejected_ground() -> None:
    runner, _, workers, _ = keyed_runner()
    diamond(runner)
    reject_ground(runner, "b")
    report = runner.run()
    assert report.executed == ["a", "e", "c"]
    assert "rejected" in report.blocked["b"] and "b holds" in report.blocked["b"]
    assert report.blocked["d"] == "it needs 'b', which is blocked"
    assert set(report.blocked) == {"b", "d"}
    assert workers.counts["b"] == workers.counts["d"] == 0
    assert runner.states() == {"a": "done", "b": "pending", "c": "done", "d": "pending", "e": "done"}
    assert "blocked" not in runner.states().values()
    assert runner.blocked() == report.blocked
    blocked_entries = [(e.task, e.detail) for e in runner.ledger.entries if e.event == "blocked"]
    assert blocked_entries == [("b", report.blocked["b"]), ("d", report.blocked["d"])]


def test_blocked_is_recomputed_every_round_and_never_stored() -> None:
    runner, _, workers, _ = keyed_runner()
    runner.task("t", worker_key=WORKER, assumes="t holds")
    reject_ground(runner, "t")
    for _ in range(3):
        assert set(runner.run().blocked) == {"t"}
    assert runner.states() == {"t": "pending"}
    assert workers.total() == 0
    assert TaskState("pending") is TaskState.PENDING
    with pytest.raises(ValueError, match="blocked"):
        TaskState("blocked")


# -- recheck --------------------------------------------------------------------------------------


def test_recheck_executes_no_worker_and_a_quiet_recheck_writes_one_summary_entry() -> None:
    runner, _, workers, auditors = keyed_runner()
    diamond(runner)
    runner.run()
    worker_calls, audit_calls, entries = workers.total(), auditors.total(), len(runner.ledger)
    report = runner.recheck()
    assert workers.total() == worker_calls
    assert auditors.total() == audit_calls + 3  # a, b, d carry auditors
    assert report.audited == ["a", "b", "d"] and report.invalidations == [] and report.stale == []
    new = runner.ledger.entries[entries:]
    assert len(new) == 1
    assert new[0].event == "audited" and new[0].task is None and new[0].round == 2
    assert "3 auditor(s) found nothing new" in new[0].detail
    assert runner.states() == dict.fromkeys("abcde", "done")


def test_a_recheck_disproof_stales_exactly_the_closure(tmp_path: Path) -> None:
    runner = walk_to_repair(tmp_path / "feed.json")
    assert runner.states() == {
        "schema": "done",
        "hashing": "stale",
        "tokens": "done",
        "routes": "stale",
        "rate_limit": "stale",
    }


# -- repair ---------------------------------------------------------------------------------------


def test_repair_is_refused_for_healthy_work() -> None:
    runner, _, _, _ = keyed_runner()
    runner.task("done", worker_key=WORKER, assumes="done holds")
    runner.run()
    runner.task("fresh", worker_key=WORKER, assumes="fresh holds")
    for name in ("done", "fresh"):
        with pytest.raises(ExecutionError, match="repair replaces only stale or failed work"):
            runner.repair(name, assumes="something else holds")
    assert runner.tasks["done"].assumes == "done holds"
    assert runner.graph.assumptions[runner.tasks["done"].assumption_id].status == "active"


def test_repairing_a_keyed_task_with_a_bare_run_is_refused(tmp_path: Path) -> None:
    runner = walk_to_repair(tmp_path / "feed.json")
    before = runner.tasks["routes"].worker_key, runner.tasks["routes"].assumes
    with pytest.raises(ExecutionError, match="bare run="):
        runner.repair("routes", assumes="routes hold again", run=plain)
    assert (runner.tasks["routes"].worker_key, runner.tasks["routes"].assumes) == before
    assert runner.tasks["routes"].run is None


def test_repair_with_an_unregistered_key_changes_nothing(tmp_path: Path) -> None:
    runner = walk_to_repair(tmp_path / "feed.json")
    assumptions, entries = dict(runner.graph.assumptions), len(runner.ledger)
    with pytest.raises(RegistryError, match=r"auth\.hash\.scrypt\.v1"):
        runner.repair("hashing", assumes="scrypt has no open advisory", worker_key="auth.hash.scrypt.v1")
    assert runner.tasks["hashing"].worker_key == DEFAULT_KEYS["bcrypt"]
    assert dict(runner.graph.assumptions) == assumptions and len(runner.ledger) == entries


def test_repair_moves_the_durable_key_and_the_snapshot_names_it(tmp_path: Path) -> None:
    runner = walk_to_repair(tmp_path / "feed.json")
    hashing = runner.tasks["hashing"]
    assert hashing.worker_key == "auth.hash.bcrypt.v1"
    assert hashing.assumes == "bcrypt has no open advisory"
    assert hashing.state is TaskState.STALE and hashing.run is None
    snapshot = snapshot_plan(runner)
    row = next(t for t in snapshot["tasks"] if t["name"] == "hashing")
    assert row["worker_key"] == "auth.hash.bcrypt.v1"
    assert row["assumption_id"] == hashing.assumption_id
    assert "auth.hash.argon2.v1" not in repr(snapshot)
    lineage = Assumptions(runner.graph).lineage(hashing.assumption_id)
    assert [(r.statement, r.status, r.version) for r in lineage] == [
        ("argon2-cffi has no open advisory", "rejected", 1),
        ("bcrypt has no open advisory", "active", 2),
    ]
    assert runner.graph.find_edge(lineage[1].id, "supersedes", lineage[0].id) is not None
    repaired = runner.ledger.entries[-1]
    assert (repaired.event, repaired.task, repaired.key) == ("repaired", "hashing", "auth.hash.bcrypt.v1")


# -- rerun ----------------------------------------------------------------------------------------


def test_a_rerun_appends_a_new_decision_that_supersedes_the_old(tmp_path: Path) -> None:
    runner = walk_to_repair(tmp_path / "feed.json")
    old = runner.tasks["hashing"].decision_id
    report = runner.run()
    assert report.executed == ["hashing", "routes", "rate_limit"]
    new = runner.tasks["hashing"].decision_id
    assert old == slug("secure-authentication|hashing|v1", "decision")
    assert new == slug("secure-authentication|hashing|v2", "decision")
    assert old in runner.graph and runner.graph.node(old).invalidated
    assert runner.graph.is_live(new)
    assert runner.graph.find_edge(new, "supersedes", old) is not None
    assert runner.graph.node(new).attrs["worker_key"] == "auth.hash.bcrypt.v1"
    for name in ("routes", "rate_limit"):
        v1, v2 = slug(f"secure-authentication|{name}|v1", "decision"), runner.tasks[name].decision_id
        assert v2 == slug(f"secure-authentication|{name}|v2", "decision")
        assert runner.graph.node(v1).invalidated and runner.graph.find_edge(v2, "supersedes", v1) is not None


def test_reproduced_artefacts_return_under_the_same_id_and_dropped_ones_stay_invalidated(tmp_path: Path) -> None:
    runner = walk_to_repair(tmp_path / "feed.json")
    hasher, params = slug("password hasher", "entity"), slug("argon2 parameters", "entity")
    assert runner.graph.node(hasher).invalidated and runner.graph.node(params).invalidated
    runner.run()
    assert runner.graph.is_live(hasher)
    assert runner.graph.node(params).invalidated
    assert len([n for n in runner.graph.by_type("entity", live_only=False) if n.label == "password hasher"]) == 1
    new = runner.tasks["hashing"].decision_id
    assert new is not None
    assert runner.graph.find_edge(new, "produces", hasher) is not None
    assert runner.graph.find_edge(new, "produces", params) is None


# -- plain callables ------------------------------------------------------------------------------


def test_plain_callable_tasks_run_but_cannot_be_checkpointed() -> None:
    runner, _, _, _ = keyed_runner()
    runner.task("keyed", worker_key=WORKER, assumes="keyed holds")
    runner.task("temp", run=plain, audit=lambda ctx: ctx.ok("fine"), needs=["keyed"], assumes="temp holds")
    report = runner.run()
    assert report.executed == ["keyed", "temp"]
    assert runner.tasks["temp"].output == {"task": "temp"}
    with pytest.raises(ExecutionError, match="task 'temp' was declared with run="):
        runner.require_checkpointable()
    with pytest.raises(ExecutionError, match="task 'temp'"):
        snapshot_plan(runner)


def test_a_plain_auditor_alone_also_stops_a_checkpoint() -> None:
    runner, _, _, _ = keyed_runner()
    runner.task("audited", worker_key=WORKER, audit=lambda ctx: ctx.ok("fine"), assumes="x holds")
    with pytest.raises(ExecutionError, match="task 'audited' was declared with audit="):
        runner.require_checkpointable()


def test_repairing_a_plain_task_onto_a_key_runs_the_keyed_worker() -> None:
    registry = TaskRegistry()
    keyed = Calls()
    registry.register_worker("fixed.v1", counting_worker(keyed))
    runner = Plan("plan", ContextGraph(), registry=registry)

    def broken(ctx: RunContext) -> dict[str, Any]:
        raise RuntimeError("broken callable")

    runner.task("t", run=broken, assumes="t holds")
    assert runner.run().failed
    runner.repair("t", assumes="t holds on the fixed worker", worker_key="fixed.v1")
    report = runner.run()
    assert report.executed == ["t"]
    assert keyed.counts["t"] == 1
    runner.require_checkpointable()


def test_repair_with_both_run_and_worker_key_is_refused() -> None:
    runner, _, _, _ = keyed_runner()

    def broken(ctx: RunContext) -> dict[str, Any]:
        raise RuntimeError("broken")

    runner.task("t", run=broken, assumes="t holds")
    runner.run()
    with pytest.raises(ExecutionError):
        runner.repair("t", assumes="t holds again", run=plain, worker_key=WORKER)


# -- rebind ---------------------------------------------------------------------------------------


def test_rebind_resolves_every_task_before_adopting_anything(tmp_path: Path) -> None:
    feed = tmp_path / "feed.json"
    runner = demo_runner(feed)
    old = runner.registry
    partial = TaskRegistry()
    full = TaskRegistry()
    seen = Calls()
    for key in (*DEFAULT_KEYS.values(),):
        if key == DEFAULT_KEYS["advisory_audit"]:
            partial.register_auditor(key, lambda ctx: ctx.ok("fine"))
            full.register_auditor(key, lambda ctx: ctx.ok("fine"))
            continue
        full.register_worker(key, counting_worker(seen))
        if key != DEFAULT_KEYS["rate_limit"]:  # the last task's key is the one missing
            partial.register_worker(key, counting_worker(seen))
    with pytest.raises(RegistryError, match=r"auth\.ratelimit\.v1"):
        runner.rebind(partial)
    assert runner.registry is old
    runner.rebind(full)
    assert runner.registry is full
    runner.run()
    assert dict(seen.counts) == dict.fromkeys(["schema", "hashing", "tokens", "routes", "rate_limit"], 1)


# -- a sibling on disproved ground ----------------------------------------------------------------


def test_a_sibling_whose_ground_an_earlier_audit_disproved_is_not_committed() -> None:
    registry = TaskRegistry()
    workers = Calls()
    registry.register_worker(WORKER, counting_worker(workers))

    def audit(ctx: AuditContext) -> Verdict:
        return ctx.disproved("the shared ground is false") if ctx.task == "first" else ctx.ok("fine")

    registry.register_auditor(AUDITOR, audit)
    runner = Plan("plan", ContextGraph(), registry=registry, executor=InProcessExecutor(width=4))
    runner.task("first", worker_key=WORKER, auditor_key=AUDITOR, assumes="the shared ground holds")
    runner.task("second", worker_key=WORKER, auditor_key=AUDITOR, assumes="the shared ground holds")
    runner.task("other", worker_key=WORKER, auditor_key=AUDITOR, assumes="other ground holds")
    report = runner.run()
    assert report.layers == [["first", "second", "other"]]
    assert dict(workers.counts) == {"first": 1, "second": 1, "other": 1}  # both ran; one result is thrown away
    assert report.executed == ["other"]
    assert "second" in report.stale and "second" not in report.executed
    assert runner.states() == {"first": "stale", "second": "stale", "other": "done"}
    assert runner.tasks["second"].decision_id is None
    assert [d.attrs["task"] for d in runner.graph.by_type("decision", live_only=False)] == ["other"]
    entry = next(e for e in runner.ledger.entries if e.task == "second")
    assert entry.event == "blocked" and "disproved in this layer" in entry.detail
    assert [e.event for e in runner.ledger.entries if e.task == "second"].count("executed") == 0


def test_the_sibling_rule_follows_declaration_order_not_finish_order() -> None:
    # The disproving task is declared second but finishes first; "first" still commits before its
    # sibling's disproof is applied, and then falls with the ground like any other done work.
    registry = TaskRegistry()

    def work(ctx: RunContext) -> dict[str, Any]:
        time.sleep(0.02 if ctx.task == "first" else 0.0)
        return {"task": ctx.task}

    registry.register_worker(WORKER, work)
    registry.register_auditor(AUDITOR, lambda ctx: ctx.disproved("false") if ctx.task == "second" else ctx.ok("fine"))
    runner = Plan("plan", ContextGraph(), registry=registry, executor=InProcessExecutor(width=4))
    runner.task("first", worker_key=WORKER, auditor_key=AUDITOR, assumes="shared")
    runner.task("second", worker_key=WORKER, auditor_key=AUDITOR, assumes="shared")
    report = runner.run()
    assert report.executed == ["first"]
    assert runner.states() == {"first": "stale", "second": "stale"}
    first_decision = runner.tasks["first"].decision_id
    assert first_decision is not None and runner.graph.node(first_decision).invalidated


def test_the_demo_plan_declares_in_dependency_order(tmp_path: Path) -> None:
    runner = Plan("order", ContextGraph(), registry=demo_runner(tmp_path / "f.json").registry)
    declare_plan(runner)
    assert [(t.name, t.needs) for t in runner.tasks.values()] == [
        ("schema", ()),
        ("hashing", ()),
        ("tokens", ()),
        ("routes", ("hashing", "tokens")),
        ("rate_limit", ("routes",)),
    ]

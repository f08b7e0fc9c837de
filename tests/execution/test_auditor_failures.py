"""When auditors fail: outages during a round and a recheck, contract breaches, and bad citations."""

from __future__ import annotations

from typing import Any

import pytest
from execution_helpers import Calls, counting_worker

from contextmesh.belief.evidence import submit
from contextmesh.core.graph import ContextGraph
from contextmesh.execution.boundary import AuditContractError
from contextmesh.execution.context import AuditContext, Verdict
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.formats.graph_file import dump_graph


class Switch:
    """An auditor whose behaviour the test flips: ok, raise, return junk, or disprove citing an id."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.cite: str | None = None
        self.calls = Calls()

    def __call__(self, ctx: AuditContext) -> Any:
        self.calls.hit(ctx.task)
        if self.mode == "raise" and ctx.task != "steady":
            raise RuntimeError("audit service unavailable")
        if self.mode == "junk" and ctx.task == "work":
            return "looks fine to me"
        if self.mode == "cite" and ctx.task == "work":
            return ctx.disproved("the ground is false", cite=self.cite)
        return ctx.ok(f"{ctx.task} checked")


def build(*, steady: bool = False) -> tuple[Plan, Switch, Calls]:
    registry = TaskRegistry()
    workers = Calls()
    switch = Switch()
    registry.register_worker("w", counting_worker(workers))
    registry.register_auditor("a", switch)
    registry.register_auditor("a.fixed", lambda ctx: ctx.ok("the fixed auditor is up"))
    runner = Plan("plan", ContextGraph(), registry=registry)
    runner.task("work", worker_key="w", auditor_key="a", assumes="the work's ground holds", produces=["Work"])
    if steady:
        runner.task("steady", worker_key="w", auditor_key="a", assumes="the steady ground holds")
    runner.task("after", worker_key="w", auditor_key="a", needs=["work"], assumes="after holds")
    return runner, switch, workers


# -- during run() ---------------------------------------------------------------------------------


def test_an_auditor_raising_during_run_fails_the_task_keeps_its_output_and_blocks_dependents() -> None:
    runner, switch, workers = build()
    switch.mode = "raise"
    report = runner.run()
    assert report.failed.keys() == {"work"}
    assert (
        "auditor raised" in report.failed["work"] and "RuntimeError: audit service unavailable" in report.failed["work"]
    )
    assert report.blocked == {"after": "it needs 'work', which did not complete this round"}
    assert runner.states() == {"work": "failed", "after": "pending"}
    work = runner.tasks["work"]
    assert work.output == {"task": "work", "attempt": 1, "inputs": []}
    assert work.attempt == 1 and work.decision_id is None
    assert runner.graph.by_type("decision", live_only=False) == []
    assert runner.graph.by_type("entity", live_only=False) == []
    assert all(not n.invalidated for n in runner.graph)
    assert workers.counts == {"work": 1}
    assert [e.event for e in runner.ledger.entries] == ["failed", "blocked"]


def test_a_repair_after_an_auditor_outage_runs_the_task_again() -> None:
    runner, switch, workers = build()
    switch.mode = "raise"
    runner.run()
    runner.repair("work", assumes="the work's ground holds (audited by the fixed auditor)", auditor_key="a.fixed")
    assert runner.states()["work"] == "failed"
    switch.mode = "ok"
    report = runner.run()
    assert report.executed == ["work", "after"]
    assert report.failed == {} and report.blocked == {}
    work = runner.tasks["work"]
    assert work.state.value == "done" and work.attempt == 2 and work.auditor_key == "a.fixed"
    assert work.decision_id is not None and work.decision_id.startswith("decision:plan-work-v2")
    assert workers.counts == {"work": 2, "after": 1}


# -- during recheck() -----------------------------------------------------------------------------


def test_an_auditor_raising_during_recheck_writes_audit_error_and_leaves_the_task_done() -> None:
    runner, switch, workers = build(steady=True)
    runner.run()
    before = len(runner.ledger)
    switch.mode = "raise"
    report = runner.recheck()
    assert set(report.audit_errors) == {"work", "after"}
    assert "RuntimeError: audit service unavailable" in report.audit_errors["work"]
    assert report.failed == {} and report.invalidations == [] and report.stale == []
    assert runner.states() == {"work": "done", "steady": "done", "after": "done"}
    new = runner.ledger.entries[before:]
    assert [(e.event, e.task) for e in new] == [
        ("audit_error", "work"),
        ("audit_error", "after"),
        ("audited", None),
    ]
    assert new[0].decision_id == runner.tasks["work"].decision_id and new[0].key == "a"
    assert "1 auditor(s) found nothing new: steady" in new[2].detail
    assert not [e for e in new if e.event == "failed"]
    assert workers.total() == 3  # a recheck executes nothing


def test_the_next_recheck_asks_a_failed_auditor_again() -> None:
    runner, switch, _ = build()
    runner.run()
    switch.mode = "raise"
    runner.recheck()
    asked = switch.calls.counts["work"]
    switch.mode = "ok"
    report = runner.recheck()
    assert switch.calls.counts["work"] == asked + 1
    assert report.audited == ["work", "after"] and report.audit_errors == {}
    last = runner.ledger.entries[-1]
    assert last.event == "audited" and "work" in last.detail


# -- a broken contract ----------------------------------------------------------------------------


def test_a_non_verdict_raises_out_of_run_and_commits_nothing_of_that_layer() -> None:
    runner, switch, _ = build(steady=True)
    switch.mode = "junk"
    graph_before = dump_graph(runner.graph)
    with pytest.raises(AuditContractError, match="returned str"):
        runner.run()
    assert dump_graph(runner.graph) == graph_before
    assert len(runner.ledger) == 0
    assert runner.graph.by_type("decision", live_only=False) == []
    assert runner.states() == {"work": "pending", "steady": "pending", "after": "pending"}


def test_a_non_verdict_during_recheck_raises_and_records_nothing() -> None:
    runner, switch, _ = build()
    runner.run()
    entries, graph_before = len(runner.ledger), dump_graph(runner.graph)
    switch.mode = "junk"
    with pytest.raises(AuditContractError):
        runner.recheck()
    assert len(runner.ledger) == entries and dump_graph(runner.graph) == graph_before
    assert runner.states() == {"work": "done", "after": "done"}


# -- citations ------------------------------------------------------------------------------------


def _cite_and_recheck(runner: Plan, switch: Switch, cite: str) -> None:
    switch.mode, switch.cite = "cite", cite
    ground = runner.tasks["work"].assumption_id
    entries, graph_before = len(runner.ledger), dump_graph(runner.graph)
    with pytest.raises(AuditContractError, match="not live submitted evidence"):
        runner.recheck()
    assert runner.graph.assumptions[ground].status == "active"
    assert len(runner.ledger) == entries and dump_graph(runner.graph) == graph_before
    assert runner.states()["work"] == "done"


def test_a_disproof_citing_an_unknown_id_is_refused() -> None:
    runner, switch, _ = build()
    runner.run()
    _cite_and_recheck(runner, switch, "evidence:never-submitted")


def test_a_disproof_citing_a_node_that_is_not_evidence_is_refused() -> None:
    runner, switch, _ = build()
    runner.run()
    _cite_and_recheck(runner, switch, runner.source_id)


def test_a_disproof_citing_evidence_that_is_no_longer_live_is_refused() -> None:
    runner, switch, _ = build()
    runner.run()
    withdrawn = submit(runner.graph, "an advisory later retracted", runner.source_id).node.id
    runner.graph.invalidate([withdrawn])
    _cite_and_recheck(runner, switch, withdrawn)


def test_a_disproof_citing_the_runners_own_audit_record_is_refused() -> None:
    runner, switch, _ = build()
    runner.run()
    audit_record = next(n.id for n in runner.graph.by_type("evidence") if n.attrs.get("kind") == "audit")
    _cite_and_recheck(runner, switch, audit_record)


def test_a_disproof_citing_live_submitted_evidence_rejects_through_it() -> None:
    runner, switch, _ = build()
    runner.run()
    evidence = submit(runner.graph, "the work's ground is gone", runner.source_id).node.id
    switch.mode, switch.cite = "cite", evidence
    report = runner.recheck()
    assert [r.evidence_id for r in report.invalidations] == [evidence]
    ground = runner.tasks["work"].assumption_id
    assert runner.graph.assumptions[ground].status == "rejected"
    assert runner.graph.find_edge(evidence, "contradicts", ground) is not None
    assert runner.states() == {"work": "stale", "after": "stale"}
    assert runner.ledger.receipts()[0]["evidence_id"] == evidence
    assert not [n for n in runner.graph.by_type("evidence") if n.attrs.get("kind") == "disproof"]


def test_a_verdict_is_what_auditors_return() -> None:
    assert isinstance(AuditContext("p", "t", 1, "w", "a", "g", {}).ok("x"), Verdict)

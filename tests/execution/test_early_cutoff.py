"""Early cutoff (ADR 0018): a stale task whose inputs come back unchanged keeps its result.

Each plan is a small keyed chain on the in-process executor; the workers count their calls, so
"revalidated, not re-run" is checked against what actually ran, not against the report alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from contextmesh import AuditContext, ContextGraph, Plan, RunContext, TaskRegistry, Verdict
from contextmesh.core.canonical import digest
from contextmesh.core.errors import SnapshotError
from contextmesh.execution.report_codec import round_report_from_dict, to_dict
from contextmesh.execution.run_reasons import UNTOUCHED, cached_reason, round_rows
from contextmesh.execution.snapshot import restore_plan, snapshot_plan
from contextmesh.formats.graph_file import dump_graph

ROOT = Path(__file__).resolve().parents[2]


class Chain:
    """``a -> b -> c``: a's auditor disproves its ground while ``world['advisory']``; b and c count calls."""

    def __init__(self, *, volatile_b: bool = False, b_reads_value: bool = False) -> None:
        self.world: dict[str, Any] = {"advisory": False, "a": 1}
        self.calls: Counter[str] = Counter()
        registry = TaskRegistry()
        registry.register_worker("a.v1", self._worker("a", lambda ctx: {"value": self.world["a"]}))
        registry.register_worker(
            "b.v1",
            self._worker("b", lambda ctx: {"value": ctx.inputs["a"]["value"] if b_reads_value else "constant"}),
        )
        registry.register_worker("c.v1", self._worker("c", lambda ctx: {"seen": ctx.inputs["b"]["value"]}))
        registry.register_auditor("advisory.v1", self._audit)
        self.plan = Plan("chain", ContextGraph(), registry=registry)
        self.plan.task("a", worker_key="a.v1", auditor_key="advisory.v1", assumes="a's package is safe")
        self.plan.task("b", worker_key="b.v1", needs=["a"], assumes="b's schema is stable", volatile=volatile_b)
        self.plan.task("c", worker_key="c.v1", needs=["b"], assumes="c's service is up", produces=["c report"])

    def _worker(self, name: str, body: Any) -> Any:
        def work(ctx: RunContext) -> Any:
            self.calls[name] += 1
            return body(ctx)

        return work

    def _audit(self, ctx: AuditContext) -> Verdict:
        return ctx.disproved("an advisory is open") if self.world["advisory"] else ctx.ok("no advisory")

    def disprove_and_repair(self, new_a: int) -> None:
        """Run, disprove a's ground, repair it onto new ground; the next run re-runs a (a changes to ``new_a``)."""
        self.plan.run()
        self.world["advisory"] = True
        assert self.plan.recheck().stale == ["a", "b", "c"]
        self.world.update(advisory=False, a=new_a)
        self.plan.repair("a", assumes="a's package is patched", worker_key="a.v1")
        self.calls.clear()


def test_a_rerun_to_the_same_output_revalidates_its_dependents_instead_of_running_them() -> None:
    chain = Chain()
    chain.disprove_and_repair(new_a=1)
    before = {name: task.decision_id for name, task in chain.plan.tasks.items()}
    outputs = {name: task.output for name, task in chain.plan.tasks.items()}
    report = chain.plan.run()
    assert report.executed == ["a"] and chain.calls == Counter({"a": 1})
    assert list(report.revalidated) == ["b", "c"] and report.cached == ["b", "c"]
    graph = chain.plan.graph
    for name in ("b", "c"):
        task = chain.plan.tasks[name]
        assert task.state.value == "done" and task.output == outputs[name]
        # Append-only: a new decision supersedes the fallen one, which stays fallen.
        assert task.decision_id != before[name] and graph.is_live(task.decision_id)
        assert not graph.is_live(before[name])
        assert graph.find_edge(task.decision_id, "supersedes", before[name]) is not None
        assert graph.node(task.decision_id).attrs["output_digest"] == digest(outputs[name])
    (report_entity,) = (e.dst for e in graph.out_edges(chain.plan.tasks["c"].decision_id, ["produces"]))
    assert graph.node(report_entity).label == "c report" and graph.is_live(report_entity)
    entries = [e for e in chain.plan.ledger.entries if e.event == "revalidated"]
    assert [(e.task, e.decision_id) for e in entries] == [(n, chain.plan.tasks[n].decision_id) for n in ("b", "c")]
    a_digest = digest(outputs["a"])[:16]
    assert entries[0].detail.startswith(f"output unchanged: a now {a_digest}, was {a_digest}")
    assert "after 'a's package is safe' was disproved (evidence evidence:" in entries[0].detail
    assert chain.plan.ledger.verify()


def test_a_changed_output_runs_its_dependents_and_the_cascade_stops_where_an_output_holds() -> None:
    chain = Chain()
    chain.disprove_and_repair(new_a=2)
    report = chain.plan.run()
    # b ignores a's value, so it re-runs (its input changed) to the same output, and c keeps its result.
    assert report.executed == ["a", "b"] and list(report.revalidated) == ["c"]
    assert chain.calls == Counter({"a": 1, "b": 1})
    assert chain.plan.tasks["c"].output == {"seen": "constant"}


def test_a_value_that_reaches_the_end_runs_everything_it_reaches() -> None:
    chain = Chain(b_reads_value=True)
    chain.disprove_and_repair(new_a=2)
    report = chain.plan.run()
    assert report.executed == ["a", "b", "c"] and report.revalidated == {}
    assert chain.plan.tasks["c"].output == {"seen": 2}


def test_a_volatile_task_reruns_whenever_anything_upstream_reruns() -> None:
    chain = Chain(volatile_b=True)
    chain.disprove_and_repair(new_a=1)
    report = chain.plan.run()
    assert report.executed == ["a", "b"] and list(report.revalidated) == ["c"]
    assert chain.calls == Counter({"a": 1, "b": 1})


def test_the_repaired_task_itself_always_runs_even_to_its_old_output() -> None:
    chain = Chain()
    chain.disprove_and_repair(new_a=1)
    report = chain.plan.run()
    assert "a" in report.executed and "a" not in report.revalidated


def test_a_revalidated_task_shows_its_reason_in_the_round_table_and_the_cached_run_message() -> None:
    chain = Chain()
    chain.disprove_and_repair(new_a=1)
    report = chain.plan.run()
    rows = {row["task"]: row for row in round_rows(chain.plan, report)}
    assert rows["b"]["outcome"] == "cached" and rows["b"]["reason"].startswith("revalidated — output unchanged: a now")
    assert cached_reason(chain.plan, "c").startswith("revalidated — output unchanged: b now")
    untouched = chain.plan.run()
    assert untouched.revalidated == {} and cached_reason(chain.plan, "c") == UNTOUCHED


def test_a_snapshot_with_revalidated_decisions_and_a_volatile_task_restores_to_the_same_plan() -> None:
    chain = Chain(volatile_b=True)
    chain.disprove_and_repair(new_a=1)
    chain.plan.run()
    data = snapshot_plan(chain.plan)
    assert [("volatile" in t) for t in data["tasks"]] == [False, True, False]
    restored = restore_plan(json.loads(json.dumps(data)), chain.plan.graph, chain.plan.registry)
    assert snapshot_plan(restored) == data and restored.tasks["b"].volatile
    data["tasks"][1]["volatile"] = False
    with pytest.raises(SnapshotError) as refused:
        restore_plan(data, chain.plan.graph, chain.plan.registry)
    assert refused.value.path == "tasks[1].volatile"


def test_a_round_report_with_revalidated_tasks_round_trips_and_an_older_one_still_reads() -> None:
    chain = Chain()
    chain.disprove_and_repair(new_a=1)
    report = chain.plan.run()
    data = to_dict(report)
    assert round_report_from_dict(json.loads(json.dumps(data))) == report
    older = {k: v for k, v in data.items() if k != "revalidated"}
    assert round_report_from_dict(older).revalidated == {}


_BUILD = """
import sys
sys.path.insert(0, {tests!r})
from test_early_cutoff import Chain
from contextmesh.formats.graph_file import dump_graph
chain = Chain()
chain.disprove_and_repair(new_a=1)
chain.plan.run()
sys.stdout.buffer.write(dump_graph(chain.plan.graph) + chain.plan.ledger.head.encode())
"""


def test_the_graph_and_ledger_after_a_cutoff_are_byte_identical_across_hash_seeds() -> None:
    script = _BUILD.format(tests=str(Path(__file__).parent))
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, check=True, cwd=ROOT)
        outputs.add(done.stdout)
    assert len(outputs) == 1
    chain = Chain()
    chain.disprove_and_repair(new_a=1)
    chain.plan.run()
    assert outputs == {dump_graph(chain.plan.graph) + chain.plan.ledger.head.encode()}

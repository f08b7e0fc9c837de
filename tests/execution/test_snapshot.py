"""The execution snapshot ``contextmesh.execution`` v2: byte-exact round trips, the durable-key walk
across two processes, and a strict loader (corruption cases as a named dataset)."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from execution_helpers import demo_registry, demo_runner, walk_to_repair

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import SnapshotError
from contextmesh.core.ids import slug
from contextmesh.demo.auth import DEFAULT_KEYS, declare_plan
from contextmesh.execution.plan import Plan
from contextmesh.execution.snapshot import dump_plan, load_plan, restore_plan, snapshot_plan
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.formats.run_ledger import RunLedger

ARGON2, BCRYPT = DEFAULT_KEYS["argon2"], DEFAULT_KEYS["bcrypt"]


@dataclass(frozen=True)
class Checkpoint:
    """The durable-key checkpoint: repaired to bcrypt, bcrypt never run. Files plus the live twin."""

    runner: Plan
    feed: Path
    graph: bytes
    ledger: bytes
    plan: bytes


def checkpoint(tmp_path: Path) -> Checkpoint:
    feed = tmp_path / "feed.json"
    runner = walk_to_repair(feed)
    return Checkpoint(runner, feed, dump_graph(runner.graph), runner.ledger.dump(), dump_plan(runner))


# -- round trips ----------------------------------------------------------------------------------


def test_a_fresh_plan_round_trips_byte_for_byte(tmp_path: Path) -> None:
    runner = demo_runner(tmp_path / "feed.json")
    data = dump_plan(runner)
    restored = load_plan(data, load_graph(dump_graph(runner.graph)), demo_registry(tmp_path / "feed.json"))
    assert dump_plan(restored) == data
    assert {t["state"] for t in loads(data)["tasks"]} == {"pending"}


def test_the_repaired_checkpoint_round_trips_byte_for_byte(tmp_path: Path) -> None:
    point = checkpoint(tmp_path)
    restored = load_plan(point.plan, load_graph(point.graph), demo_registry(point.feed))
    assert dump_plan(restored) == point.plan
    assert dump_plan(load_plan(dump_plan(restored), load_graph(point.graph), demo_registry(point.feed))) == point.plan


def test_a_finished_plan_round_trips_byte_for_byte(tmp_path: Path) -> None:
    point = checkpoint(tmp_path)
    point.runner.run()
    data = dump_plan(point.runner)
    restored = load_plan(data, load_graph(dump_graph(point.runner.graph)), demo_registry(point.feed))
    assert dump_plan(restored) == data
    assert restored.round == point.runner.round == 3


def test_the_snapshot_keeps_declaration_order_and_stores_no_blocked_state(tmp_path: Path) -> None:
    data = snapshot_plan(checkpoint(tmp_path).runner)
    assert [t["name"] for t in data["tasks"]] == ["schema", "hashing", "tokens", "routes", "rate_limit"]
    assert data["schema"] == "contextmesh.execution" and data["version"] == 2
    assert all(t["state"] in {"pending", "done", "stale", "failed"} for t in data["tasks"])


# -- the durable-key walk -------------------------------------------------------------------------

SECOND_PROCESS = r"""
import hashlib, json, sys
from pathlib import Path

from contextmesh.core.canonical import file_bytes
from contextmesh.demo.auth import register_demo
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.execution.snapshot import dump_plan, load_plan
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.formats.run_ledger import RunLedger

here = Path(sys.argv[1])
# The library's implementations, taken from a throwaway table; the restoring registry holds only
# the keys below -- bcrypt for hashing, and no argon2 key at all.
library = TaskRegistry()
register_demo(library, feed=here / "feed.json")
registry = TaskRegistry()
for key in ("auth.schema.v1", "auth.hash.bcrypt.v1", "auth.tokens.v1", "auth.routes.v1", "auth.ratelimit.v1"):
    registry.register_worker(key, library.lookup_worker(key).fn)
registry.register_auditor("auth.audit.advisory.v1", library.lookup_auditor("auth.audit.advisory.v1").fn)
del library

graph = load_graph((here / "graph.json").read_bytes())
ledger = RunLedger.load((here / "ledger.json").read_bytes(), expect_head=(here / "head.txt").read_text())
plan = (here / "plan.json").read_bytes()
runner = load_plan(plan, graph, registry, ledger=ledger)
restored_bytes_equal = dump_plan(runner) == plan
ready_before = {name: state for name, state in runner.states().items()}
report = runner.run()
result = {
    "registry": registry.describe(),
    "restored_bytes_equal": restored_bytes_equal,
    "states_before": ready_before,
    "executed": report.executed,
    "cached": report.cached,
    "layers": report.layers,
    "states": runner.states(),
    "attempts": {t.name: t.attempt for t in runner.tasks.values()},
    "outputs": {t.name: t.output for t in runner.tasks.values()},
    "decisions": {t.name: t.decision_id for t in runner.tasks.values()},
    "keys": {t.name: t.worker_key for t in runner.tasks.values()},
    "graph_sha256": hashlib.sha256(dump_graph(runner.graph)).hexdigest(),
    "ledger_head": runner.ledger.head,
    "ledger_verifies": runner.ledger.verify(),
}
(here / "result.json").write_bytes(file_bytes(result))
"""


def test_a_repaired_checkpoint_restores_bcrypt_in_a_second_process_and_reruns_only_the_stale_closure(
    tmp_path: Path,
) -> None:
    point = checkpoint(tmp_path)
    twin = point.runner
    # The checkpoint is taken at the dangerous boundary: repaired, bcrypt not yet run.
    plan = loads(point.plan)
    hashing = next(t for t in plan["tasks"] if t["name"] == "hashing")
    assert (hashing["state"], hashing["worker_key"], hashing["attempt"]) == ("stale", BCRYPT, 1)
    assert hashing["output"]["package"] == "argon2-cffi"  # the last result is argon2's; bcrypt never ran
    assert ARGON2 not in point.plan.decode()
    (tmp_path / "graph.json").write_bytes(point.graph)
    (tmp_path / "ledger.json").write_bytes(point.ledger)
    (tmp_path / "plan.json").write_bytes(point.plan)
    (tmp_path / "head.txt").write_text(twin.ledger.head)

    done = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS, str(tmp_path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    theirs = json.loads((tmp_path / "result.json").read_text())

    assert ARGON2 not in theirs["registry"]["workers"] and BCRYPT in theirs["registry"]["workers"]
    assert theirs["restored_bytes_equal"] is True
    assert theirs["states_before"] == twin.states()

    ours = twin.run()
    assert theirs["layers"] == ours.layers == [["hashing"], ["routes"], ["rate_limit"]]
    assert theirs["executed"] == ours.executed == ["hashing", "routes", "rate_limit"]
    assert theirs["cached"] == ours.cached == ["schema", "tokens"]
    for name, task in twin.tasks.items():
        assert theirs["states"][name] == task.state.value, name
        assert theirs["attempts"][name] == task.attempt, name
        assert theirs["outputs"][name] == task.output, name
        assert theirs["decisions"][name] == task.decision_id, name
        assert theirs["keys"][name] == task.worker_key, name
    assert theirs["outputs"]["hashing"]["package"] == "bcrypt"
    assert theirs["attempts"] == {"schema": 1, "hashing": 2, "tokens": 1, "routes": 2, "rate_limit": 2}
    assert theirs["graph_sha256"] == hashlib.sha256(dump_graph(twin.graph)).hexdigest()
    assert theirs["ledger_head"] == twin.ledger.head and theirs["ledger_verifies"] is True


def test_a_checkpoint_naming_an_unregistered_worker_key_is_refused_with_the_key(tmp_path: Path) -> None:
    point = checkpoint(tmp_path)
    graph = load_graph(point.graph)
    with pytest.raises(SnapshotError, match=r"auth\.hash\.bcrypt\.v1") as caught:
        load_plan(point.plan, graph, demo_registry(point.feed, without=[BCRYPT]))
    assert caught.value.path == "tasks[1].worker_key"
    assert dump_graph(graph) == point.graph  # refused before anything was built


def test_a_checkpoint_naming_an_unregistered_auditor_key_is_refused_with_the_key(tmp_path: Path) -> None:
    point = checkpoint(tmp_path)
    audit = DEFAULT_KEYS["advisory_audit"]
    with pytest.raises(SnapshotError, match=r"auth\.audit\.advisory\.v1") as caught:
        load_plan(point.plan, load_graph(point.graph), demo_registry(point.feed, without=[audit]))
    assert caught.value.path == "tasks[0].auditor_key"


def test_a_restore_never_resolves_the_old_key_even_when_it_is_registered(tmp_path: Path) -> None:
    point = checkpoint(tmp_path)
    restored = load_plan(point.plan, load_graph(point.graph), demo_registry(point.feed))
    restored.run()
    assert restored.tasks["hashing"].output["package"] == "bcrypt"


# -- corruption cases -----------------------------------------------------------------------------

Mutation = Callable[[dict[str, Any], Checkpoint], None]


def _set(task: int, field: str, value: Any) -> Mutation:
    def apply(doc: dict[str, Any], point: Checkpoint) -> None:
        doc["tasks"][task][field] = value

    return apply


def _unknown_field(doc: dict[str, Any], point: Checkpoint) -> None:
    doc["tasks"][2]["schedule"] = "ready"


def _done_without_decision(doc: dict[str, Any], point: Checkpoint) -> None:
    doc["tasks"][0]["decision_id"] = None


def _other_plans_decision(doc: dict[str, Any], point: Checkpoint) -> None:
    doc["tasks"][0]["decision_id"] = slug("other|schema|v1", "decision")


def _version_1(doc: dict[str, Any], point: Checkpoint) -> None:
    doc["version"] = 1


def _duplicate_name(doc: dict[str, Any], point: Checkpoint) -> None:
    doc["tasks"][2] = copy.deepcopy(doc["tasks"][0])


def _top_level_extra(doc: dict[str, Any], point: Checkpoint) -> None:
    doc["registry"] = {"auth.hash.bcrypt.v1": "contextmesh.demo.auth:_bcrypt"}


CORRUPTIONS: dict[str, tuple[Mutation, str, str]] = {
    # name: (mutation, the path the refusal names, a fragment of its message)
    "unknown field": (_unknown_field, "tasks[2].schedule", "unknown field"),
    "unknown top-level field": (_top_level_extra, "registry", "unknown field"),
    "state blocked": (_set(3, "state", "blocked"), "tasks[3].state", "pending, done, stale or failed"),
    "needs a later task": (_set(0, "needs", ["routes"]), "tasks[0].needs[0]", "declared before it"),
    "needs itself": (_set(3, "needs", ["routes"]), "tasks[3].needs[0]", "declared before it"),
    "assumption id missing": (
        _set(0, "assumption_id", "assumption:no-such-ground-000000"),
        "tasks[0].assumption_id",
        "assumption of the graph",
    ),
    "assumes differs from the graph": (
        _set(1, "assumes", "argon2-cffi has no open advisory"),
        "tasks[1].assumes",
        "bcrypt has no open advisory",
    ),
    "done without decision": (_done_without_decision, "tasks[0].state", "decision stands"),
    "done on an invalidated decision": (_set(1, "state", "done"), "tasks[1].state", "decision stands"),
    "pending with decision": (_set(0, "state", "pending"), "tasks[0].decision_id", "pending task"),
    "decision of another plan": (_other_plans_decision, "tasks[0].decision_id", "namespace"),
    "decision beyond its attempts": (_set(0, "attempt", 0), "tasks[0].decision_id", "namespace"),
    "v1 file": (_version_1, "version", "original"),
    "duplicate task name": (_duplicate_name, "tasks[2].name", "unique"),
    "negative attempt": (_set(2, "attempt", -1), "tasks[2].attempt", "non-negative"),
    "boolean round": (lambda doc, point: doc.__setitem__("round", True), "round", "non-negative integer"),
    "worker key missing": (_set(4, "worker_key", None), "tasks[4].worker_key", "non-empty text"),
}


@pytest.fixture
def corruptible(tmp_path: Path) -> Checkpoint:
    point = checkpoint(tmp_path)
    # Another plan on the same graph, so "a decision of another plan" names a real decision node.
    other = Plan("other", point.runner.graph, registry=point.runner.registry)
    declare_plan(other)
    other.run()
    return Checkpoint(point.runner, point.feed, dump_graph(point.runner.graph), point.ledger, point.plan)


@pytest.mark.parametrize("case", list(CORRUPTIONS), ids=list(CORRUPTIONS))
def test_a_corrupt_snapshot_is_refused_with_a_path(case: str, corruptible: Checkpoint) -> None:
    mutate, path, fragment = CORRUPTIONS[case]
    doc = loads(corruptible.plan)
    mutate(doc, corruptible)
    graph = load_graph(corruptible.graph)
    with pytest.raises(SnapshotError) as caught:
        load_plan(file_bytes(doc), graph, demo_registry(corruptible.feed))
    assert caught.value.path == path, str(caught.value)
    assert fragment in str(caught.value)
    assert dump_graph(graph) == corruptible.graph  # a refused snapshot leaves nothing behind


@pytest.mark.parametrize("recorded", ["one attempt later", "missing", "as text"])
def test_a_decision_is_checked_against_the_attempt_it_records(recorded: str, corruptible: Checkpoint) -> None:
    """One slug per task, not one per attempt: the decision's ``attrs.attempt`` names the attempt its id
    must be minted at. A decision whose record disagrees with its own id is refused (any attempt up to
    the task's was accepted before, by minting every one of them)."""
    doc = loads(corruptible.plan)
    index = next(i for i, t in enumerate(doc["tasks"]) if t["state"] == "done")
    task = doc["tasks"][index]
    graph = load_graph(corruptible.graph)
    decision = graph.node(task["decision_id"])
    minted = decision.attrs["attempt"]
    assert task["decision_id"] == slug(f"{doc['plan']}|{task['name']}|v{minted}", "decision")
    task["attempt"] = minted + 1  # the old check accepted the id: v{minted} lies in 1..attempt
    attrs = dict(decision.attrs)
    if recorded == "one attempt later":
        attrs["attempt"] = minted + 1
    elif recorded == "missing":
        del attrs["attempt"]
    else:
        attrs["attempt"] = str(minted)
    decision.attrs = attrs  # attrs.attempt is outside the decision's fingerprint
    with pytest.raises(SnapshotError) as caught:
        load_plan(file_bytes(doc), load_graph(dump_graph(graph)), demo_registry(corruptible.feed))
    assert caught.value.path == f"tasks[{index}].decision_id", str(caught.value)
    assert "the one its attrs.attempt records" in str(caught.value)


def test_the_other_plans_decision_really_exists(corruptible: Checkpoint) -> None:
    doc = loads(corruptible.plan)
    _other_plans_decision(doc, corruptible)
    decision = doc["tasks"][0]["decision_id"]
    assert load_graph(corruptible.graph).node(decision).type == "decision"


def test_a_snapshot_for_a_plan_the_graph_does_not_hold_is_refused(tmp_path: Path) -> None:
    point = checkpoint(tmp_path)
    doc = loads(point.plan)
    doc["plan"] = "elsewhere"
    with pytest.raises(SnapshotError) as caught:
        restore_plan(doc, load_graph(point.graph), demo_registry(point.feed))
    assert caught.value.path == "plan"


def test_the_uncorrupted_base_loads(corruptible: Checkpoint) -> None:
    restored = load_plan(corruptible.plan, load_graph(corruptible.graph), demo_registry(corruptible.feed))
    assert restored.states() == corruptible.runner.states()


def test_a_ledger_restored_with_the_wrong_trusted_head_is_refused(tmp_path: Path) -> None:
    point = checkpoint(tmp_path)
    with pytest.raises(SnapshotError) as caught:
        RunLedger.load(point.ledger, expect_head="0" * 64)
    assert caught.value.path == "head"
    assert RunLedger.load(point.ledger, expect_head=point.runner.ledger.head).head == point.runner.ledger.head

"""Rechecks that cost what changed (ADR 0019): watched slices, evidence kinds, marks, full rechecks."""

from __future__ import annotations

from typing import Any

import pytest

from contextmesh.belief.evidence import submit
from contextmesh.core.canonical import loads
from contextmesh.core.errors import SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.execution.context import AuditContext, RunContext, Verdict
from contextmesh.execution.plan import Plan
from contextmesh.execution.snapshot import dump_plan, load_plan, restore_plan
from contextmesh.execution.task_registry import RegistryError, TaskRegistry
from contextmesh.execution.watch import WatchContext, WatchError

NAMES = ("a", "b", "c", "d")


class World:
    """Each task's slice of the world, and a count of every audit and fingerprint call."""

    def __init__(self) -> None:
        self.slices: dict[str, Any] = dict.fromkeys(NAMES, "1")
        self.audits: list[str] = []
        self.fingerprints = 0
        self.disprove: set[str] = set()


def _build(world: World, *, watches: bool = True, reads: tuple[str, ...] = ()) -> tuple[Plan, TaskRegistry]:
    registry = TaskRegistry()

    @registry.worker("w.v1")
    def work(ctx: RunContext) -> dict[str, str]:
        return {"task": ctx.task}

    def fingerprint(ctx: WatchContext) -> Any:
        world.fingerprints += 1
        found = world.slices[ctx.task]
        if isinstance(found, Exception):
            raise found
        return found

    @registry.auditor("a.v1", watches=fingerprint if watches else None, reads=reads)
    def audit(ctx: AuditContext) -> Verdict:
        world.audits.append(ctx.task)
        if ctx.task in world.disprove:
            return ctx.disproved(f"{ctx.task}'s slice moved")
        return ctx.ok("fine")

    @registry.auditor("plain.v1")
    def plain(ctx: AuditContext) -> Verdict:
        world.audits.append(ctx.task)
        return ctx.ok()

    plan = Plan("watching", ContextGraph(), registry=registry)
    for name in NAMES:
        plan.task(name, worker_key="w.v1", auditor_key="a.v1", assumes=f"{name} holds")
    plan.task("e", worker_key="w.v1", auditor_key="plain.v1", assumes="e holds", needs=["a"])
    return plan, registry


def test_a_recheck_runs_only_the_auditor_whose_slice_changed_and_records_the_rest_in_one_entry() -> None:
    world = World()
    plan, _ = _build(world)
    plan.run()
    world.audits.clear()
    entries = len(plan.ledger.entries)
    world.slices["c"] = "2"
    report = plan.recheck()
    # c's slice changed; e declares nothing, so it runs every time; a, b, d are skipped.
    assert sorted(world.audits) == ["c", "e"]
    assert report.audited == ["c", "e"] and report.skipped == ["a", "b", "d"]
    new = plan.ledger.entries[entries:]
    skips = [e for e in new if e.detail.startswith("skipped")]
    assert len(skips) == 1
    assert skips[0].detail == (
        "skipped 3 of 5 auditor(s), their watched slices unchanged: a, b, d; "
        "ran (watched slice changed: c; declares nothing: e)"
    )
    world.audits.clear()
    again = plan.recheck()  # c's new slice is pinned now: only e runs
    assert world.audits == ["e"] and again.skipped == ["a", "b", "c", "d"]


def test_a_full_recheck_runs_every_standing_auditor() -> None:
    world = World()
    plan, _ = _build(world)
    plan.run()
    world.audits.clear()
    report = plan.recheck(full=True)
    assert sorted(world.audits) == ["a", "b", "c", "d", "e"] and report.skipped == []
    assert not any(e.detail.startswith("skipped") for e in plan.ledger.entries)


def test_an_auditor_that_declares_nothing_runs_at_every_recheck() -> None:
    world = World()
    plan, _ = _build(world, watches=False)
    plan.run()
    for _ in range(2):
        world.audits.clear()
        report = plan.recheck()
        assert sorted(world.audits) == ["a", "b", "c", "d", "e"] and report.skipped == []


def test_new_evidence_of_a_kind_it_reads_wakes_an_auditor_and_other_kinds_do_not() -> None:
    world = World()
    plan, _ = _build(world, watches=False, reads=("memory",))
    plan.run()
    world.audits.clear()
    submit(plan.graph, "disk at 90%", plan.source_id, metadata={"kind": "disk"})
    assert plan.recheck().skipped == ["a", "b", "c", "d"] and world.audits == ["e"]
    world.audits.clear()
    submit(plan.graph, "256 MB free", plan.source_id, metadata={"kind": "memory"})
    report = plan.recheck()
    assert sorted(world.audits) == ["a", "b", "c", "d", "e"] and report.skipped == []
    assert any("new evidence: a, b, c, d" in e.detail for e in plan.ledger.entries) is False  # nothing skipped
    world.audits.clear()
    assert plan.recheck().skipped == ["a", "b", "c", "d"]


def test_a_fingerprint_over_the_evidence_about_its_ground_wakes_only_that_auditor() -> None:
    registry = TaskRegistry()
    audits: list[str] = []
    seen: list[int] = []

    @registry.worker("w.v1")
    def work(ctx: RunContext) -> dict[str, str]:
        return {"task": ctx.task}

    def about_me(ctx: WatchContext) -> str:
        seen.append(len(ctx.evidence))
        return ",".join(e.id for e in ctx.evidence if e.metadata.get("about") == ctx.task)

    @registry.auditor("a.v1", watches=about_me)
    def audit(ctx: AuditContext) -> Verdict:
        audits.append(ctx.task)
        return ctx.ok()

    plan = Plan("about", ContextGraph(), registry=registry)
    for name in NAMES:
        plan.task(name, worker_key="w.v1", auditor_key="a.v1", assumes=f"{name} holds")
    plan.run()
    audits.clear()
    submit(plan.graph, "b moved", plan.source_id, metadata={"kind": "fact", "about": "b"})
    report = plan.recheck()
    # Every fingerprint saw the one observation; only b's auditor found it about its own ground.
    assert audits == ["b"] and report.skipped == ["a", "c", "d"] and seen[-4:] == [1, 1, 1, 1]
    audits.clear()
    assert plan.recheck().skipped == list(NAMES) and audits == []


def test_a_disproof_found_through_a_changed_slice_falls_as_before_and_leaves_no_mark() -> None:
    world = World()
    plan, _ = _build(world)
    plan.run()
    world.slices["a"] = "5"
    world.disprove.add("a")
    report = plan.recheck()
    assert report.stale == ["a", "e"] and "a" not in plan.watched
    assert report.skipped == ["b", "c", "d"]


def test_a_new_output_is_always_audited_even_when_its_slice_is_unchanged() -> None:
    world = World()
    plan, _ = _build(world)
    plan.run()
    plan.watched["b"] = plan.watched["b"].__class__("decision:elsewhere", plan.watched["b"].fingerprint, None)
    world.audits.clear()
    report = plan.recheck()
    assert "b" in world.audits and "b" in report.audited
    assert plan.watched["b"].decision_id == plan.tasks["b"].decision_id


def test_a_slice_read_before_an_audit_that_changed_it_shows_as_changed_next_time() -> None:
    world = World()
    plan, registry = _build(world)
    plan.run()
    world.slices["d"] = "2"

    original = registry.lookup_auditor("a.v1").fn

    def moving(ctx: AuditContext) -> Verdict:  # the world moves while d's auditor runs
        if ctx.task == "d":
            world.slices["d"] = "3"
        return original(ctx)  # type: ignore[no-any-return]

    registry._spaces["auditor"]["a.v1"] = registry.lookup_auditor("a.v1").__class__(
        "a.v1", moving, None, 0, registry.lookup_auditor("a.v1").watches, ()
    )
    plan.recheck()
    world.audits.clear()
    plan.recheck()
    assert "d" in world.audits


@pytest.mark.parametrize(
    ("slice_value", "found"),
    [
        (7, "its fingerprint function returned int 7"),
        (None, "its fingerprint function returned NoneType None"),
        (b"x", "its fingerprint function returned bytes b'x'"),
        (RuntimeError("boom"), "its fingerprint function raised RuntimeError: boom"),
    ],
)
def test_a_bad_fingerprint_refuses_the_recheck_naming_the_place_and_changes_nothing(
    slice_value: Any, found: str
) -> None:
    world = World()
    plan, _ = _build(world)
    plan.run()
    before = (dump_plan(plan), plan.ledger.head, plan.round)
    world.audits.clear()
    world.slices["b"] = slice_value
    with pytest.raises(WatchError) as refused:
        plan.recheck()
    where = "auditor 'a.v1' of task 'b'"
    assert refused.value.path == where
    assert str(refused.value) == f"{where}: {found}; " + refused.value.rule
    assert "\n" not in str(refused.value)
    assert world.audits == [] and (dump_plan(plan), plan.ledger.head, plan.round) == before


def test_a_bad_fingerprint_in_a_round_leaves_that_task_unmarked_and_the_round_goes_on() -> None:
    world = World()
    world.slices["b"] = None  # returned as is: not text
    plan, _ = _build(world)
    report = plan.run()
    assert sorted(report.executed) == ["a", "b", "c", "d", "e"]
    assert sorted(plan.watched) == ["a", "c", "d"]


def test_fingerprints_are_read_once_per_auditor_per_step() -> None:
    world = World()
    plan, _ = _build(world)
    plan.run()
    assert world.fingerprints == 4
    plan.recheck()
    assert world.fingerprints == 8


def test_marks_round_trip_through_the_snapshot_and_older_snapshots_load() -> None:
    world = World()
    plan, registry = _build(world)
    plan.run()
    data = dump_plan(plan)
    document = loads(data)
    assert sorted(document["watched"]) == ["a", "b", "c", "d"]
    restored = load_plan(data, plan.graph, registry)
    assert restored.watched == plan.watched and dump_plan(restored) == data
    older = {k: v for k, v in document.items() if k != "watched"}
    assert restore_plan(older, plan.graph, registry).watched == {}
    world.audits.clear()
    # Restored marks do their work: nothing changed, so only the undeclared auditor runs.
    assert restored.recheck().skipped == ["a", "b", "c", "d"] and world.audits == ["e"]


def test_a_plan_without_watching_auditors_writes_no_watched_field() -> None:
    world = World()
    plan, _ = _build(world, watches=False)
    plan.run()
    assert "watched" not in loads(dump_plan(plan))


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda w: w.update({"zz": w["a"]}), "watched.zz"),
        (lambda w: w["a"].update({"fingerprint": "F" * 64}), "watched.a.fingerprint"),
        (lambda w: w["a"].update({"fingerprint": 3}), "watched.a.fingerprint"),
        (lambda w: w["a"].update({"evidence": "ab"}), "watched.a.evidence"),
        (lambda w: w["a"].update({"decision_id": "decision:nope"}), "watched.a.decision_id"),
        (lambda w: w["a"].update({"extra": 1}), "watched.a.extra"),
        (lambda w: w["a"].update({"fingerprint": None}), "watched.a"),
        (lambda w: [w.pop(k) for k in list(w)], "watched"),
    ],
)
def test_a_hostile_mark_is_refused_with_its_path(edit: Any, path: str) -> None:
    world = World()
    plan, registry = _build(world)
    plan.run()
    document = loads(dump_plan(plan))
    edit(document["watched"])
    with pytest.raises(SnapshotError) as refused:
        restore_plan(document, plan.graph, registry)
    assert refused.value.path == path


def test_a_watched_field_that_is_not_an_object_is_refused() -> None:
    world = World()
    plan, registry = _build(world)
    plan.run()
    document = loads(dump_plan(plan))
    document["watched"] = ["a"]
    with pytest.raises(SnapshotError) as refused:
        restore_plan(document, plan.graph, registry)
    assert refused.value.path == "watched"


def test_a_registry_refuses_reads_given_as_one_string_and_watches_that_is_not_callable() -> None:
    registry = TaskRegistry()
    with pytest.raises(RegistryError, match=r"reads= is a list of evidence kinds, not 'memory'"):
        registry.register_auditor("x.v1", lambda ctx: ctx.ok(), reads="memory")
    with pytest.raises(RegistryError, match="watches= is a fingerprint function, not str"):
        registry.register_auditor("x.v1", lambda ctx: ctx.ok(), watches="mtime")  # type: ignore[arg-type]
    with pytest.raises(RegistryError, match="non-empty text, not ''"):
        registry.register_auditor("x.v1", lambda ctx: ctx.ok(), reads=("",))
    assert registry.describe() == {"workers": [], "auditors": []}
    registry.register_auditor("x.v1", lambda ctx: ctx.ok(), reads=("b", "a", "b"))
    assert registry.lookup_auditor("x.v1").reads == ("a", "b")

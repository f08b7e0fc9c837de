"""Health on the demo and on tiny graphs: every signal in order, status rules, walk and belief signals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from demo_cache import DemoWorlds

from contextmesh.cli import main
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import Provenance
from contextmesh.demo.knowledge import DemoWorld, break_sizing_assumption, build_world
from contextmesh.demo.saved import open_demo_session, save_demo_session
from contextmesh.knowledge.health import SIGNAL_KINDS, HealthReport, Signal, check
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.traverse import DEAD_END_REASONS, Walker


@pytest.fixture(scope="module")
def world(demo_worlds: DemoWorlds) -> Iterator[DemoWorld]:
    """Two walk rounds over the recorded demo.

    Read-only: shared with other modules, and checked unchanged after this one.
    """
    yield demo_worlds.shared(2)
    demo_worlds.check_unchanged(2)


def _report(world: DemoWorld) -> HealthReport:
    return check(world.graph, world.result.resolver, world.walker)


def test_every_signal_kind_is_present_in_order(world: DemoWorld) -> None:
    report = _report(world)
    assert [s.kind for s in report.signals] == list(SIGNAL_KINDS)
    signals = report.to_dict()["signals"]
    assert isinstance(signals, list)
    assert [s["kind"] for s in signals] == list(SIGNAL_KINDS)


def test_an_empty_graph_still_reports_every_signal_at_zero() -> None:
    report = check(ContextGraph())
    assert [s.kind for s in report.signals] == list(SIGNAL_KINDS)
    assert all(s.count == 0 for s in report.signals)
    assert report.status == "ok"
    assert report.signal("dead_ends").detail == "no dead ends"


def test_untyped_edges_is_always_zero(world: DemoWorld) -> None:
    signal = _report(world).signal("untyped_edges")
    assert signal.count == 0
    assert signal.severity == "info"
    assert check(ContextGraph()).signal("untyped_edges").count == 0


def test_the_demo_reports_its_sizes_and_a_warning(world: DemoWorld) -> None:
    report = _report(world)
    assert report.nodes_live == sum(1 for n in world.graph if n.live)
    assert report.nodes_total == len(world.graph)
    assert report.nodes_live < report.nodes_total  # the build pruned the unmentioned entity
    assert report.edge_types_used >= 8
    assert report.signal("open_contradictions").count > 0
    assert report.signal("provenance_gap").count == 0
    assert report.status == "warn"
    assert report.to_dict()["status"] == "warn"


def test_dead_ends_after_walks_name_each_reason_with_its_count(world: DemoWorld) -> None:
    ledger = world.walker.dead_end_ledger()
    assert list(ledger) == list(DEAD_END_REASONS)
    signal = _report(world).signal("dead_ends")
    assert signal.count == sum(ledger.values()) > 0
    expected = "; ".join(f"{reason}={count}" for reason, count in ledger.items() if count)
    assert signal.detail == expected
    # two rounds ask the off-topic refund question twice
    assert f"entity_unresolved={ledger['entity_unresolved']}" in signal.detail
    assert ledger["entity_unresolved"] == 2


def test_invalidated_nodes_count_what_the_broken_assumption_took_down() -> None:
    fresh = build_world(1)
    assert check(fresh.graph).signal("invalidated_nodes").count == 0
    report = break_sizing_assumption(fresh)
    fallen = [n.id for n in fresh.graph if n.invalidated]
    assert fallen
    # what fell, plus the rejected assumption itself
    assert set(fallen) == {*report.invalidated, report.assumption_id}
    signal = check(fresh.graph, fresh.result.resolver, fresh.walker).signal("invalidated_nodes")
    assert signal.count == len(fallen)
    assert signal.severity == "info"
    assert list(signal.items) == fallen[:12]
    assert signal.detail == f"{len(fallen)} node(s) invalidated"


# -- status rules -------------------------------------------------------------------------------


def _signals(**counts: tuple[str, int]) -> HealthReport:
    signals = [Signal(kind, severity, count, "", "") for kind, (severity, count) in counts.items()]
    return HealthReport(signals, 0, 0, 0, 0)


def test_status_error_beats_warn_beats_ok() -> None:
    assert _signals(a=("info", 5), b=("warn", 0), c=("error", 0)).status == "ok"
    assert _signals(a=("info", 5), b=("warn", 1), c=("error", 0)).status == "warn"
    assert _signals(a=("info", 5), b=("warn", 1), c=("error", 1)).status == "error"
    assert _signals(a=("error", 2)).status == "error"


def _tiny() -> tuple[ContextGraph, Resolver]:
    graph = ContextGraph()
    resolver = Resolver()
    src = graph.add_node("source", "notes", attrs={"origin": "t", "retrieved_at": None})
    ent = graph.add_node("entity", "Index Builder", attrs={"canonical": "Index Builder", "aliases": []})
    resolver.register(ent.id, "Index Builder")
    claim = graph.add_node("claim", "The Index Builder ran out of memory.", provenance=Provenance(source_id=src.id))
    graph.add_edge(claim.id, "derived_from", src.id)
    graph.add_edge(claim.id, "mentions", ent.id)
    return graph, resolver


def test_a_connected_graph_with_nothing_wrong_is_ok() -> None:
    graph, resolver = _tiny()
    report = check(graph, resolver, Walker(graph, resolver))
    assert report.status == "ok", [s for s in report.signals if s.count]


def test_an_orphan_makes_the_status_warn() -> None:
    graph, resolver = _tiny()
    lonely = graph.add_node("entity", "Vector Cache", attrs={"canonical": "Vector Cache", "aliases": []})
    report = check(graph, resolver)
    assert report.signal("orphans").items == (lonely.id,)
    assert report.signal("missing_relationships").items == (lonely.id,)
    assert report.status == "warn"


def test_a_provenance_gap_makes_the_status_error_even_with_warnings() -> None:
    graph, resolver = _tiny()
    graph.add_node("entity", "Vector Cache", attrs={"canonical": "Vector Cache", "aliases": []})
    src = graph.by_type("source")[0]
    loose = graph.add_node("claim", "A claim nobody can trace back.", provenance=Provenance(source_id=src.id))
    graph.add_edge(loose.id, "mentions", graph.by_type("entity")[0].id)
    loose.provenance = None  # lost after the write: no provenance and no derived_from/cites edge
    report = check(graph, resolver)
    assert report.signal("provenance_gap").items == (loose.id,)
    assert report.signal("orphans").count == 1
    assert report.status == "error"


def test_near_misses_below_the_threshold_are_the_unresolved_entities_count() -> None:
    graph, _ = _tiny()
    resolver = Resolver(threshold=0.99)
    resolver.register(graph.by_type("entity")[0].id, "Index Builder")
    resolver.resolve("Indx Builder")
    resolver.resolve("refund")
    signal = check(graph, resolver).signal("unresolved_entities")
    assert signal.count == 1
    assert signal.items == ("Indx Builder",)
    assert "2 mention(s) unresolved in all" in signal.detail


def test_an_assumption_not_rechecked_for_many_rounds_is_stale() -> None:
    from contextmesh.belief.assumptions import Assumptions

    graph, _ = _tiny()
    record = Assumptions(graph).assume("Hosts are trusted", created_by="test")
    assert check(graph, plan_round=25).signal("stale_assumptions").count == 0
    signal = check(graph, plan_round=26).signal("stale_assumptions")
    assert signal.items == (record.id,)
    assert check(graph, plan_round=10, stale_after_rounds=5).signal("stale_assumptions").count == 1


# -- the two clocks: staleness is counted in plan rounds, never in walk rounds ---------------------


def _stale_through_the_cli(directory: Path, feed: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["health", "--session", str(directory), "--feed", str(feed), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    return next(s for s in document["signals"] if s["kind"] == "stale_assumptions")


def test_thirty_walk_rounds_leave_a_ground_audited_in_the_latest_plan_round_fresh(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory, feed = tmp_path / "session", tmp_path / "feed.json"
    session = save_demo_session(directory, rounds=30, feed=feed)  # plan round 1 audits every ground
    assert session.runner is not None
    assert session.walk_rounds == 30 and session.runner.round == 1
    grounds = {task.assumption_id for task in session.runner.tasks.values()}
    assert {session.graph.node(g).attrs.get("checked_round") for g in grounds} == {1}
    # 30 walk rounds against a stamp of plan round 1 read 29 rounds stale; it is 0 plan rounds old
    assert _stale_through_the_cli(directory, feed, capsys)["count"] == 0
    assert session.health().signal("stale_assumptions").count == 0


def test_a_ground_audited_many_plan_rounds_ago_is_stale_however_few_walk_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory, feed = tmp_path / "session", tmp_path / "feed.json"
    save_demo_session(directory, rounds=0, feed=feed)  # never asked: the walk clock stands at 0
    session = open_demo_session(directory, feed=feed, policy="never")
    assert session.runner is not None
    grounds = {task.assumption_id for task in session.runner.tasks.values()}
    never_audited = set(session.graph.assumptions) - grounds  # the sidecar's, which no task stands on
    assert grounds and never_audited
    for _ in range(26):  # every task is done: these rounds only cache, so nothing re-audits a ground
        session.runner.run()
    session.commit()
    assert session.runner.round == 27
    stale = _stale_through_the_cli(directory, feed, capsys)
    assert stale["count"] == len(grounds) + len(never_audited)  # 27 - 1 > 25, and 27 - 0 > 25
    session.runner.recheck()  # plan round 28 audits every standing ground again
    session.commit()
    stale = _stale_through_the_cli(directory, feed, capsys)
    assert stale["count"] == len(never_audited)
    assert not grounds & set(stale["items"])

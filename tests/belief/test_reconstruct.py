"""Reconstruct: a decision's reasons, split by source time into what it stood on and what came later."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.belief.reconstruct import Reconstruction, reconstruct_decision
from contextmesh.belief.temporal import TemporalError
from contextmesh.core.errors import NotFoundError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import Provenance
from contextmesh.demo.knowledge import DemoWorld, break_sizing_assumption, build_world
from contextmesh.formats.graph_file import dump_graph

# -- the demo -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world() -> DemoWorld:
    return build_world(0)


def _keys(world: DemoWorld, rec: Reconstruction, node_type: str) -> set[str]:
    return {str(world.graph.node(r.node_id).attrs.get("key")) for r in rec.of_type(node_type)}


def test_demo_decision_names_its_assumption_claims_and_sources(world: DemoWorld) -> None:
    decision_id = world.decision_ids["partitioned-rebuild"]
    rec = reconstruct_decision(world.graph, decision_id)
    assert rec.decision_id == decision_id
    assert rec.title == "Rebuild the index in partitions"
    assert rec.rationale.startswith("Building one shard at a time")
    assert rec.date == "2026-03-04"
    assert [r.label for r in rec.of_type("assumption")] == ["Shard count grows linearly with corpus size"]
    assert _keys(world, rec, "claim") == {"inc219-2", "prb-1", "prb-3"}
    assert {r.via for r in rec.of_type("claim")} == {"derived_from"}
    assert _keys(world, rec, "source") == {"capacity-plan-h1", "incident-219", "design-partitioned-rebuild"}
    cited = {str(world.graph.node(r.node_id).attrs.get("key")): r for r in rec.of_type("source")}
    assert (cited["incident-219"].via, cited["incident-219"].depth) == ("cites", 1)
    assert (cited["design-partitioned-rebuild"].via, cited["design-partitioned-rebuild"].depth) == ("derived_from", 2)
    assert rec.came_later == []
    assert all(r.live for r in rec.stood_on)
    assert all(r.date is None or r.date <= "2026-03-04" for r in rec.stood_on)
    assert len({r.node_id for r in rec.stood_on}) == len(rec.stood_on)  # each reason once
    data = rec.to_dict()
    assert data["decision_id"] == decision_id
    assert len(data["stood_on"]) == len(rec.stood_on)  # type: ignore[arg-type]


def test_demo_reconstruction_writes_nothing(world: DemoWorld) -> None:
    before = dump_graph(world.graph)
    for key, decision_id in world.decision_ids.items():
        reconstruct_decision(world.graph, decision_id)
        reconstruct_decision(world.graph, decision_id, depth=1)
        try:
            reconstruct_decision(world.graph, decision_id, as_of="2026-12-31")
        except NotFoundError:
            pytest.fail(f"decision {key} is missing from the projection as of the year's end")
    assert dump_graph(world.graph) == before


def test_demo_after_the_rejection_the_ground_is_shown_fallen_but_as_of_before_it_stands() -> None:
    world = build_world(0)
    break_sizing_assumption(world)
    decision_id = world.decision_ids["partitioned-rebuild"]
    now = reconstruct_decision(world.graph, decision_id)
    assert [(r.label, r.live) for r in now.of_type("assumption")] == [
        ("Shard count grows linearly with corpus size", False)
    ]
    then = reconstruct_decision(world.graph, decision_id, as_of="2026-05-31")  # the postmortem is 2026-06-09
    assert [(r.label, r.live) for r in then.of_type("assumption")] == [
        ("Shard count grows linearly with corpus size", True)
    ]


# -- a small history: grounds that came later ---------------------------------------------------


@dataclass
class Small:
    graph: ContextGraph
    ids: dict[str, str]


def _source(graph: ContextGraph, label: str, day: str | None) -> str:
    return graph.add_node("source", label, attrs={"origin": f"test://{label}", "retrieved_at": day}).id


def _claim(graph: ContextGraph, label: str, source_id: str) -> str:
    node = graph.add_node("claim", label, provenance=Provenance(source_id=source_id, extractor="test"))
    graph.add_edge(node.id, "derived_from", source_id)
    return node.id


@pytest.fixture
def small() -> Small:
    """A March decision whose recorded grounds include a July decision, an August claim and a
    September source (recorded on it afterwards), next to grounds from February and an undated note."""
    graph = ContextGraph()
    ids = {
        "feb": _source(graph, "February review", "2026-02-03"),
        "mar": _source(graph, "March design doc", "2026-03-04"),
        "jul": _source(graph, "July retro", "2026-07-20"),
        "aug": _source(graph, "August audit", "2026-08-11"),
        "sep": _source(graph, "September report", "2026-09-09"),
        "notes": _source(graph, "Undated notes", None),
    }
    ids["early_claim"] = _claim(graph, "Builds ran out of memory", ids["feb"])
    ids["late_claim"] = _claim(graph, "Shards were skewed by one tenant", ids["aug"])
    ids["undated_claim"] = _claim(graph, "The team prefers small shards", ids["notes"])
    ids["deep_claim"] = _claim(graph, "The retro found the queue backed up", ids["jul"])
    ledger = Assumptions(graph)
    ids["assumption"] = ledger.assume("Tenants are roughly equal in size").id
    log = DecisionLog(graph)
    ids["later_decision"] = log.decide(
        "Throttle the queue",
        rationale="The retro asked for it.",
        provenance=Provenance(source_id=ids["jul"], extractor="test"),
        rests_on=[ids["deep_claim"]],
    ).id
    ids["decision"] = log.decide(
        "Shard the index",
        rationale="Memory stays bounded.",
        provenance=Provenance(source_id=ids["mar"], extractor="test"),
        rests_on=[ids["early_claim"], ids["late_claim"], ids["undated_claim"]],
        assumptions=[ids["assumption"]],
        needs=[ids["later_decision"]],
        cites=[ids["feb"], ids["sep"]],
    ).id
    return Small(graph, ids)


def test_grounds_dated_after_the_decision_came_later(small: Small) -> None:
    ids = small.ids
    rec = reconstruct_decision(small.graph, ids["decision"])
    assert rec.date == "2026-03-04"
    later = {r.node_id: r for r in rec.came_later}
    stood = {r.node_id: r for r in rec.stood_on}
    assert set(later) == {
        ids[k]
        for k in ("late_claim", "aug", "sep", "later_decision", "deep_claim", "jul")  # jul: 3 steps back
    }
    assert set(stood) == {ids["early_claim"], ids["feb"], ids["undated_claim"], ids["notes"], ids["assumption"]}
    assert later[ids["late_claim"]].date == "2026-08-11"
    assert later[ids["sep"]].via == "cites"
    assert later[ids["later_decision"]].via == "depends_on"
    assert stood[ids["undated_claim"]].date is None  # undated: nothing says it came later
    assert stood[ids["notes"]].date is None
    assert stood[ids["assumption"]].date == "2026-03-04"  # its only dependent is this decision
    assert all(r.date is not None and r.date > "2026-03-04" for r in rec.came_later)


DEPTH_1 = {"early_claim", "late_claim", "undated_claim", "assumption", "later_decision", "feb", "sep"}
DEPTH_2 = DEPTH_1 | {"aug", "notes", "deep_claim"}  # the claims' sources, the needed decision's claim
DEPTH_3 = DEPTH_2 | {"jul"}  # the needed decision's claim's source


@pytest.mark.parametrize(("depth", "expected"), [(1, DEPTH_1), (2, DEPTH_2), (3, DEPTH_3), (4, DEPTH_3)])
def test_depth_limits_how_far_back_the_walk_goes(small: Small, depth: int, expected: set[str]) -> None:
    rec = reconstruct_decision(small.graph, small.ids["decision"], depth=depth)
    reasons = [*rec.stood_on, *rec.came_later]
    assert {r.node_id for r in reasons} == {small.ids[k] for k in expected}
    assert max(r.depth for r in reasons) == min(depth, 3)
    assert all(1 <= r.depth <= depth for r in reasons)


@pytest.mark.parametrize("depth", [0, -1])
def test_depth_below_one_is_refused(small: Small, depth: int) -> None:
    with pytest.raises(ValueError, match="depth"):
        reconstruct_decision(small.graph, small.ids["decision"], depth=depth)


def test_unknown_or_non_decision_ids_are_not_found(small: Small) -> None:
    with pytest.raises(NotFoundError, match="found nothing"):
        reconstruct_decision(small.graph, "decision:no-such-thing")
    with pytest.raises(NotFoundError, match="a claim"):
        reconstruct_decision(small.graph, small.ids["early_claim"])


def test_as_of_excludes_what_came_later(small: Small) -> None:
    ids = small.ids
    rec = reconstruct_decision(small.graph, ids["decision"], as_of="2026-06-30")
    reasons = {r.node_id for r in [*rec.stood_on, *rec.came_later]}
    assert rec.came_later == []
    assert reasons == {ids["early_claim"], ids["feb"], ids["undated_claim"], ids["notes"], ids["assumption"]}
    assert not reasons & {ids["late_claim"], ids["aug"], ids["sep"], ids["later_decision"], ids["jul"]}
    august = reconstruct_decision(small.graph, ids["decision"], as_of="2026-08-11")
    assert {r.node_id for r in august.came_later} == {
        ids["late_claim"],
        ids["aug"],
        ids["later_decision"],
        ids["deep_claim"],
        ids["jul"],
    }


def test_as_of_before_the_decision_was_made_finds_no_decision(small: Small) -> None:
    with pytest.raises(NotFoundError):
        reconstruct_decision(small.graph, small.ids["decision"], as_of="2026-03-03")
    assert reconstruct_decision(small.graph, small.ids["decision"], as_of="2026-03-04").date == "2026-03-04"


@pytest.mark.parametrize("bad", ["2026-13-01", "yesterday", ""])
def test_a_bad_as_of_date_is_a_temporal_error(small: Small, bad: str) -> None:
    with pytest.raises(TemporalError):
        reconstruct_decision(small.graph, small.ids["decision"], as_of=bad)


def test_reconstruction_writes_nothing(small: Small) -> None:
    before = dump_graph(small.graph)
    for depth in (1, 2, 3, 5):
        reconstruct_decision(small.graph, small.ids["decision"], depth=depth)
        reconstruct_decision(small.graph, small.ids["decision"], depth=depth, as_of="2026-08-31")
    assert dump_graph(small.graph) == before

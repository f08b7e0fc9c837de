"""Temporal: the graph as it stood on a date, answered on source time only, the live graph untouched.

The history is built here, month by month through 2026: one dated report per month plus one
undated note, claims with provenance to them, entities the reports mention, an assumption a
decision depends on (recorded through ``DecisionLog.decide``), and a rejection of that assumption
recorded late, through evidence from the November report.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

import pytest

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.belief.evidence import submit
from contextmesh.belief.temporal import TemporalError, as_of_graph, date_of, explain_as_of, node_dates
from contextmesh.core.errors import InputError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import Provenance
from contextmesh.demo.knowledge import DemoWorld, break_sizing_assumption, build_world
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.knowledge.resolve import Resolver

REJECTED_ON = "2026-11-10"  # the November report's date: the day the assumption fell
DEMO_QUESTION = "What made the sharding rule wrong?"


@dataclass
class History:
    graph: ContextGraph
    resolver: Resolver
    reports: dict[int, str] = field(default_factory=dict)  # month -> source id
    ids: dict[str, str] = field(default_factory=dict)


def _entity(graph: ContextGraph, resolver: Resolver, name: str) -> str:
    node = graph.add_node("entity", name, attrs={"canonical": name, "aliases": []})
    resolver.register(node.id, name)
    return node.id


def _claim(graph: ContextGraph, label: str, source_id: str, *mentions: str) -> str:
    node = graph.add_node("claim", label, provenance=Provenance(source_id=source_id, extractor="test"))
    graph.add_edge(node.id, "derived_from", source_id)
    for entity_id in mentions:
        graph.add_edge(node.id, "mentions", entity_id)
    return node.id


def build_history(seed: int = 7, *, replacement: str | None = None, justified: bool = False) -> History:
    """A year of reports, one decision on one assumption, and a late rejection of that assumption."""
    rng = random.Random(seed)
    graph, resolver = ContextGraph(), Resolver()
    history = History(graph, resolver)
    for month in range(1, 13):
        day = f"2026-{month:02d}-{rng.randrange(1, 29):02d}" if month != 11 else REJECTED_ON
        history.reports[month] = graph.add_node(
            "source", f"Report {month:02d}", attrs={"origin": f"test://report/{month}", "retrieved_at": day}
        ).id
    undated = graph.add_node("source", "Undated notes", attrs={"origin": "test://notes", "retrieved_at": None}).id
    ids = history.ids
    ids["undated_source"] = undated
    ids["store"] = _entity(graph, resolver, "Vector Store")
    ids["builder"] = _entity(graph, resolver, "Index Builder")
    ids["plan"] = _entity(graph, resolver, "Partition Plan")
    ids["orphan"] = _entity(graph, resolver, "Orphan Gadget")  # nothing mentions it
    for month, entity in ((5, "builder"), (2, "builder"), (1, "store"), (3, "plan"), (6, "plan")):
        graph.add_edge(history.reports[month], "mentions", ids[entity])
    # Monthly filler: the Vector Store's traffic, one claim a month.
    for month in range(1, 13):
        served = f"In month {month} the Vector Store served {rng.randrange(10, 99)} million queries"
        _claim(graph, served, history.reports[month], ids["store"])
    ids["memory"] = _claim(
        graph, "The Index Builder runs out of memory on large tenants", history.reports[2], ids["builder"]
    )
    ids["split"] = _claim(graph, "Splitting the work into shards keeps memory bounded", history.reports[3])
    ids["late"] = _claim(
        graph, "The December audit found the Index Builder leaks file handles", history.reports[12], ids["builder"]
    )
    ids["replicas"] = _claim(graph, "The Vector Store keeps three replicas per shard", undated, ids["store"])
    ledger = Assumptions(graph)
    grounds: list[str] = []
    if justified:
        grounds.append(submit(graph, "a January load test stayed flat", history.reports[1]).node.id)
    ids["assumption"] = ledger.assume("Shard count grows linearly with corpus size", evidence_ids=grounds).id
    ledger.depends(ids["split"], ids["assumption"])  # March: the earliest dependent
    ids["decision"] = (
        DecisionLog(graph)
        .decide(
            "Adopt the Partition Plan",
            rationale="Shards keep the Index Builder's memory bounded as the corpus grows.",
            provenance=Provenance(source_id=history.reports[4], extractor="test"),
            rests_on=[ids["memory"], ids["split"]],
            assumptions=[ids["assumption"]],
            produces=[ids["plan"]],
            cites=[history.reports[2]],
        )
        .id
    )
    evidence = submit(graph, "Shard count tripled while the corpus grew by a third", history.reports[11])
    ids["evidence"] = evidence.node.id
    report = ledger.reject(ids["assumption"], evidence_id=evidence.node.id, replacement=replacement)
    if report.replacement_id is not None:
        ids["replacement"] = report.replacement_id
    return history


@pytest.fixture
def history() -> History:
    return build_history()


# -- node dates ---------------------------------------------------------------------------


def test_node_dates_follow_the_source_time_rules(history: History) -> None:
    g, ids, reports = history.graph, history.ids, history.reports
    dates = node_dates(g)
    day = {month: dt.date.fromisoformat(str(g.node(sid).attrs["retrieved_at"])) for month, sid in reports.items()}
    assert all(dates[sid] == day[month] for month, sid in reports.items())
    assert dates[ids["undated_source"]] is None
    # a claim, decision or evidence: its provenance source's date
    assert dates[ids["memory"]] == day[2]
    assert dates[ids["late"]] == day[12]
    assert dates[ids["replicas"]] is None
    assert dates[ids["decision"]] == day[4]
    assert dates[ids["evidence"]] == dt.date.fromisoformat(REJECTED_ON)
    # an entity: the earliest source that mentions it
    assert dates[ids["builder"]] == day[2]
    assert dates[ids["plan"]] == day[3]
    assert dates[ids["store"]] == day[1]
    assert dates[ids["orphan"]] is None
    # an assumption: the earliest claim or decision that depends on it (the March claim, not the April decision)
    assert dates[ids["assumption"]] == day[3]


def test_every_month_the_projection_holds_exactly_what_was_known_or_undated(history: History) -> None:
    dates = node_dates(history.graph)
    for month in range(1, 13):
        when = dt.date(2026, month, 28)
        projection, classes = as_of_graph(history.graph, when)
        for node_id, day in dates.items():
            expected = "undated" if day is None else ("known" if day <= when else "later")
            assert classes[node_id] == expected, (month, node_id)
            assert (node_id in projection.nodes) == (expected != "later"), (month, node_id)


# -- answers as of a date -----------------------------------------------------------------


def test_before_the_rejection_the_decision_and_its_product_answer(history: History) -> None:
    ids = history.ids
    question = "Why was the Partition Plan adopted?"
    for when in ("2026-06-01", "2026-11-09"):
        asof = explain_as_of(history.graph, history.resolver, question, when)
        walk = asof.walk
        assert walk.dead_end is None, (when, walk.dead_end)
        assert walk.answer_id == ids["decision"]
        assert [s.node_id for s in walk.path] == [ids["plan"], ids["decision"]]
        assert walk.path[1].edge_type == "produces"
        assert {s.node_id for s in walk.justification} >= {ids["assumption"], ids["memory"], ids["split"]}


def test_from_the_rejection_on_the_walk_reflects_it(history: History) -> None:
    question = "Why was the Partition Plan adopted?"
    live = history.graph.node(history.ids["plan"])
    assert live.invalidated
    for when in (REJECTED_ON, "2026-12-31"):
        walk = explain_as_of(history.graph, history.resolver, question, when).walk
        assert walk.answer_id is None
        assert walk.dead_end is not None
        assert walk.dead_end.reason == "pruned_too_early"


def test_a_claim_first_seen_later_is_later_and_never_walked(history: History) -> None:
    ids = history.ids
    question = "What did the December audit find about the Index Builder leaks?"
    assert explain_as_of(history.graph, history.resolver, question, "2026-12-31").walk.answer_id == ids["late"]
    asof = explain_as_of(history.graph, history.resolver, question, "2026-06-01")
    assert asof.classes[ids["late"]] == "later"
    assert asof.walk.answer_id == ids["memory"]
    assert ids["late"] not in {s.node_id for s in [*asof.walk.path, *asof.walk.justification]}
    assert "later" not in asof.to_dict()["path_classes"].values()  # type: ignore[union-attr]


def test_no_as_of_walk_ever_steps_on_a_later_node(history: History) -> None:
    questions = [
        "Why was the Partition Plan adopted?",
        "What did the December audit find about the Index Builder leaks?",
        "How many queries did the Vector Store serve?",
        "Why does the Index Builder run out of memory?",
    ]
    for month in range(1, 13):
        when = f"2026-{month:02d}-15"
        for question in questions:
            asof = explain_as_of(history.graph, history.resolver, question, when)
            steps = [*asof.walk.path, *asof.walk.justification]
            assert all(asof.classes[s.node_id] != "later" for s in steps), (when, question)


def test_undated_sources_are_undated_and_kept(history: History) -> None:
    ids = history.ids
    asof = explain_as_of(history.graph, history.resolver, "How many replicas does the Vector Store keep?", "2026-01-31")
    assert asof.classes[ids["undated_source"]] == "undated"
    assert asof.classes[ids["replicas"]] == "undated"
    assert asof.walk.answer_id == ids["replicas"]
    assert asof.counts["undated"] == sum(1 for c in asof.classes.values() if c == "undated")
    assert sum(asof.counts.values()) == len(history.graph.nodes)


@pytest.mark.parametrize(
    "bad", ["2026-02-30", "2026/01/01", "", None, 20260101, "2026-1-01", " 2026-01-01", "2026-W01-1", "2026-01-01\n"]
)
def test_bad_dates_are_refused_with_a_temporal_error(history: History, bad: object) -> None:
    before = dump_graph(history.graph)
    with pytest.raises(TemporalError) as caught:
        explain_as_of(history.graph, history.resolver, "Why was the Partition Plan adopted?", bad)  # type: ignore[arg-type]
    assert isinstance(caught.value, InputError)
    assert caught.value.path == "as_of"
    assert dump_graph(history.graph) == before


def test_date_of_reads_a_calendar_date() -> None:
    assert date_of("2026-02-28") == dt.date(2026, 2, 28)
    assert date_of("2028-02-29") == dt.date(2028, 2, 29)


def test_an_empty_question_is_refused(history: History) -> None:
    with pytest.raises(TemporalError) as caught:
        explain_as_of(history.graph, history.resolver, "   ", "2026-06-01")
    assert caught.value.path == "question"


def test_explain_as_of_moves_nothing_in_the_live_graph(history: History) -> None:
    before = dump_graph(history.graph)
    log, aliases = len(history.resolver.log), dict(history.resolver.aliases)
    questions = ["Why was the Partition Plan adopted?", "What did the December audit find about the Index Builder?"]
    for when in ("2026-01-01", "2026-06-01", REJECTED_ON, "2026-12-31"):
        for question in questions:
            explain_as_of(history.graph, history.resolver, question, when)
    assert dump_graph(history.graph) == before
    assert len(history.resolver.log) == log
    assert history.resolver.aliases == aliases


def test_the_projection_is_a_copy(history: History) -> None:
    projection, _ = as_of_graph(history.graph, dt.date(2026, 6, 1))
    assert projection is not history.graph
    assert history.graph.node(history.ids["decision"]).invalidated
    assert not projection.node(history.ids["decision"]).invalidated
    assert projection.assumptions[history.ids["assumption"]].status == "active"
    assert history.graph.assumptions[history.ids["assumption"]].status == "rejected"


# -- regressions and open bugs ----------------------------------------------------------------------------


def test_justifying_evidence_does_not_replay_a_later_rejection() -> None:
    # Regression: the replay once fired when any id in evidence_ids was in the projection,
    # including January evidence that only justified the assumption.
    history = build_history(justified=True)
    projection, _ = as_of_graph(history.graph, dt.date(2026, 6, 1))
    assert projection.assumptions[history.ids["assumption"]].status == "active"
    assert not projection.node(history.ids["decision"]).invalidated


def test_a_replacement_minted_by_a_later_rejection_does_not_leak_in() -> None:
    # Regression: a replacement has no dependents, so it used to be 'undated' and kept; the rewound
    # record was then 'active' with superseded_by set, which load_graph refuses.
    history = build_history(replacement="Shard count follows the largest tenant's share")
    projection, _ = as_of_graph(history.graph, dt.date(2026, 6, 1))
    record = projection.assumptions[history.ids["assumption"]]
    assert (record.status, record.superseded_by) == ("active", None)
    assert history.ids["replacement"] not in projection.nodes
    assert node_dates(history.graph)[history.ids["replacement"]] == dt.date.fromisoformat(REJECTED_ON)
    load_graph(dump_graph(projection))
    after, classes = as_of_graph(history.graph, dt.date.fromisoformat(REJECTED_ON))
    assert classes[history.ids["replacement"]] == "known"
    assert after.assumptions[history.ids["assumption"]].superseded_by == history.ids["replacement"]
    load_graph(dump_graph(after))


@pytest.mark.parametrize("stamp", ["20260315", "2026-W11-1"])
def test_a_source_date_that_is_not_yyyy_mm_dd_is_undated(stamp: str) -> None:
    graph = ContextGraph()
    node = graph.add_node("source", "Odd stamp", attrs={"origin": "test://odd", "retrieved_at": stamp})
    assert node_dates(graph)[node.id] is None


# -- the demo --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world() -> DemoWorld:
    return build_world(0)


def test_demo_the_sharding_rule_was_not_yet_mentioned_in_march(world: DemoWorld) -> None:
    before = dump_graph(world.graph)
    asof = explain_as_of(world.graph, world.result.resolver, DEMO_QUESTION, "2026-03-01")
    assert asof.walk.dead_end is not None
    assert asof.walk.dead_end.reason == "entity_unresolved"
    assert "Sharding Rule" in asof.walk.dead_end.detail
    assert explain_as_of(world.graph, world.result.resolver, DEMO_QUESTION, "2026-12-31").walk.answer is not None
    assert dump_graph(world.graph) == before
    today = world.walker.ask(DEMO_QUESTION)
    assert today.dead_end is None
    assert today.answer is not None
    assert "sharding rule was wrong" in today.answer.lower()


def test_demo_as_of_before_the_postmortem_the_sizing_decision_stands() -> None:
    world = build_world(0)
    break_sizing_assumption(world)
    decision = world.decision_ids["partitioned-rebuild"]
    assert world.graph.node(decision).invalidated
    projection, classes = as_of_graph(world.graph, dt.date(2026, 6, 1))  # the postmortem is 2026-06-09
    assert classes[decision] == "known"
    assert not projection.node(decision).invalidated
    after, _ = as_of_graph(world.graph, dt.date(2026, 6, 9))
    assert after.node(decision).invalidated

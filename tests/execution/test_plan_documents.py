"""Plans that rest on documents: typed edges to claims and entities, and a revision takes exactly its tasks.

Over the container-terminal corpus, ingested into the plan's own graph from a temporary copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from execution_helpers import WORKER, keyed_runner

from contextmesh.belief.ingestion import ingest
from contextmesh.core.errors import ExecutionError, SnapshotError
from contextmesh.execution.grounding import absorb_fallout
from contextmesh.execution.plan import Plan, TaskState
from contextmesh.execution.snapshot import restore_plan, snapshot_plan
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.revisions import DocumentRef, current_revisions
from contextmesh.knowledge.traverse import Walker

TERMINAL = Path(__file__).resolve().parents[1] / "data" / "documents" / "terminal" / "docs"
CAPACITY = "plans/capacity-2026.md"
WIND = "runbooks/crane-wind-stop.md"
OLD, NEW = "together sustain 58 moves", "together sustain 61 moves"


def _declare(runner: Plan) -> None:
    runner.task(
        "crane-pair",
        worker_key=WORKER,
        assumes="the pair keeps its rate",
        rests_on=[DocumentRef(CAPACITY, quote="sustain 58 MOVES per hour")],
        about=["STS-04", "Berth 3"],
    )
    runner.task("overflow", worker_key=WORKER, assumes="berth 4 is free", rests_on=[DocumentRef(CAPACITY, "overflow")])
    runner.task("berth-report", worker_key=WORKER, assumes="the report is read", needs=["crane-pair"])
    runner.task("wind", worker_key=WORKER, assumes="the runbook is followed", rests_on=[WIND])


def _ingested(tmp_path: Path) -> tuple[Plan, Resolver, Path, object]:
    folder = tmp_path / "docs"
    shutil.copytree(TERMINAL, folder)
    runner, _, workers, _ = keyed_runner()
    resolver = Resolver()
    ingest(runner.graph, resolver, [folder])
    _declare(runner)
    return runner, resolver, folder, workers


def test_a_decision_rests_on_the_claims_its_task_names_and_is_about_its_entities(tmp_path: Path) -> None:
    runner, _, _, _ = _ingested(tmp_path)
    assert runner.run().executed == ["crane-pair", "overflow", "wind", "berth-report"]
    graph = runner.graph
    decision = runner.tasks["crane-pair"].decision_id
    assert decision is not None
    grounds = [e.dst for e in graph.out_edges(decision, ("derived_from",))]
    assert [graph.nodes[c].label for c in grounds if graph.nodes[c].type == "claim"] == [
        "STS-04 and STS-07 together sustain 58 moves per hour on Berth 3."
    ]
    revision = current_revisions(graph)[CAPACITY].id
    assert graph.find_edge(decision, "cites", revision) is not None
    [about] = [e.src for e in graph.in_edges(decision, ("supports",)) if graph.nodes[e.src].attrs.get("task")]
    mentioned = sorted(graph.nodes[e.dst].label for e in graph.out_edges(about, ("mentions",)))
    assert mentioned == ["Berth 3", "STS-04"]
    wind = runner.tasks["wind"].decision_id
    assert wind is not None
    wind_claims = {e.dst for e in graph.out_edges(wind, ("derived_from",)) if graph.nodes[e.dst].type == "claim"}
    assert len(wind_claims) > 3  # a whole document: every claim of its current revision


def test_a_revision_takes_exactly_the_tasks_resting_on_the_claim_it_removed(tmp_path: Path) -> None:
    runner, resolver, folder, workers = _ingested(tmp_path)
    runner.run()
    before = dict(workers.counts)  # type: ignore[attr-defined]
    (folder / CAPACITY).write_text((folder / CAPACITY).read_text().replace(OLD, NEW))
    result = ingest(runner.graph, resolver, [folder])
    assert absorb_fallout(runner, result.fallout.invalidated) == ["crane-pair", "berth-report"]
    chain = result.fallout.why(runner.tasks["crane-pair"].decision_id or "")
    assert chain.startswith(f"revision 2 of {CAPACITY} -supersedes-> claim(STS-04 and STS-07")
    assert runner.tasks["overflow"].state is TaskState.DONE and runner.tasks["wind"].state is TaskState.DONE
    # The quote no longer names a sentence: the task is blocked with the reason, and what needs it too.
    report = runner.run()
    assert report.executed == []
    assert "no sentence of its current revision (2) holds the quote" in report.blocked["crane-pair"]
    assert report.blocked["berth-report"] == "it needs 'crane-pair', which is blocked"
    runner.tasks["crane-pair"].rests_on = (DocumentRef(CAPACITY, quote="sustain 61 moves"),)
    assert runner.run().executed == ["crane-pair", "berth-report"]
    after = dict(workers.counts)  # type: ignore[attr-defined]
    assert {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)} == {
        "crane-pair": 1,
        "berth-report": 1,
    }


def test_references_survive_a_snapshot_and_a_plan_without_them_writes_no_field(tmp_path: Path) -> None:
    runner, _, _, _ = _ingested(tmp_path)
    runner.run()
    data = snapshot_plan(runner)
    assert data["tasks"][0]["rests_on"] == [{"doc": CAPACITY, "quote": "sustain 58 MOVES per hour"}]
    assert data["tasks"][0]["about"] == ["STS-04", "Berth 3"]
    assert "rests_on" not in data["tasks"][2] and "about" not in data["tasks"][2]
    restored = restore_plan(data, runner.graph, runner.registry)
    assert restored.tasks["crane-pair"].rests_on == runner.tasks["crane-pair"].rests_on
    data["tasks"][0]["rests_on"] = [{"doc": CAPACITY}]
    with pytest.raises(SnapshotError) as caught:
        restore_plan(data, runner.graph, runner.registry)
    assert caught.value.path == "tasks[0].rests_on[0]"


def test_a_reference_that_is_not_one_is_refused_when_declared() -> None:
    runner, _, _, _ = keyed_runner()
    with pytest.raises(ExecutionError, match=r"rests_on\[0\]"):
        runner.task("t", worker_key=WORKER, assumes="x holds", rests_on=[42])  # type: ignore[list-item]
    with pytest.raises(ExecutionError, match=r"about\[0\]"):
        runner.task("t", worker_key=WORKER, assumes="x holds", about=["  "])
    assert runner.tasks == {}


def test_a_question_about_what_a_task_rests_on_is_answered_through_its_decision(tmp_path: Path) -> None:
    runner, resolver, _, _ = _ingested(tmp_path)
    runner.run()
    walk = Walker(runner.graph, resolver).ask("Which decision rests on the STS-04 and STS-07 moves per hour claim?")
    data = walk.to_dict()
    assert data["answer"] == "crane-pair (plan)"
    assert [step["type"] for step in data["path"]][-2:] == ["claim", "decision"]

"""A flow run's own report: published as its artifact after the commit, read back equal; and the
artifact's data read as untrusted input (strict JSON, exact fields) before anything believes it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from orch_helpers import keyed_session, ok_auditor
from prefect import flow

from contextmesh.core.canonical import file_bytes
from contextmesh.core.errors import ExecutionError, InputError, SnapshotError
from contextmesh.execution.context import AuditContext, Verdict
from contextmesh.execution.plan import Plan, RecheckReport, RoundReport
from contextmesh.execution.report_codec import recheck_report_from_dict, round_report_from_dict
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.orchestration.flow_bodies import make_plan_flow, make_recheck_flow
from contextmesh.orchestration.prefect_executor import flow_run_id
from contextmesh.orchestration.run_report import RunReport, read_report, report_from_artifact
from contextmesh.session.session import Session

FALLS = threading.Event()  # set: the feed auditor finds its ground false


def feed_auditor(ctx: AuditContext) -> Verdict:
    return ctx.disproved("the feed moved") if FALLS.is_set() else ctx.ok("the feed is where it was")


def _declare(runner: Plan) -> None:
    runner.task("feed", worker_key="t.work.v1", auditor_key="t.feed.v1", assumes="the feed stays at /feed")
    runner.task("index", worker_key="t.work.v1", auditor_key="t.ok.v1", needs=["feed"], assumes="ids are stable")
    runner.task("other", worker_key="t.work.v1", assumes="the clock is right")


def _registry() -> TaskRegistry:
    registry = TaskRegistry()
    registry.register_worker("t.work.v1", lambda ctx: {"task": ctx.task})
    registry.register_auditor("t.feed.v1", feed_auditor)
    registry.register_auditor("t.ok.v1", ok_auditor)
    return registry


@pytest.mark.integration
def test_a_round_and_a_recheck_publish_the_report_they_return(prefect_api: str, tmp_path: Path) -> None:
    registry, directory = _registry(), tmp_path / "session"
    keyed_session(directory, registry, _declare, plan="report-test")
    ran = make_plan_flow(registry)(session_dir=str(directory), mode="run")
    published = read_report(ran["flow_run_id"])
    assert isinstance(published.report, RoundReport)
    assert published.report == round_report_from_dict(ran["report"])
    assert published.report.executed == ["feed", "other", "index"] and published.report.layers == [
        ["feed", "other"],
        ["index"],
    ]
    assert published.report.runs["feed"] is not None  # the task-run references travel too
    assert published.report.runs["feed"]["flow_run_id"] == ran["flow_run_id"]
    session = Session.load(directory, registry=registry)
    assert session.runner is not None
    assert (published.generation, published.ledger_head) == (session.generation, session.runner.ledger.head)

    FALLS.set()
    try:
        rechecked = make_recheck_flow(registry)(session_dir=str(directory))
    finally:
        FALLS.clear()
    found = read_report(rechecked["flow_run_id"])
    assert isinstance(found.report, RecheckReport) and found.kind == "recheck"
    assert found.report == recheck_report_from_dict(rechecked["report"])
    assert found.report.stale == ["feed", "index"] and found.report.audited == ["feed", "index"]
    (invalidation,) = found.report.invalidations
    assert invalidation.statement == "the feed stays at /feed" and invalidation.preserved_ids
    after = Session.load(directory, registry=registry)
    assert after.runner is not None and found.generation == after.generation == published.generation + 1
    assert found.ledger_head == after.runner.ledger.head != published.ledger_head


@pytest.mark.integration
def test_a_completed_run_that_published_no_report_is_refused_naming_it(prefect_api: str) -> None:
    @flow(name="no-report", persist_result=False)
    def quiet() -> str:
        return flow_run_id()

    run_id = quiet()
    with pytest.raises(ExecutionError, match=rf"flow run {run_id} completed without publishing a contextmesh-report"):
        read_report(run_id, url="http://ui/runs/flow-run/x")


def _text(report: RoundReport | RecheckReport, **changes: object) -> str:
    data = {**RunReport(report, 2, "ab" * 32).to_dict(), **changes}
    return file_bytes(data).decode("utf-8")


def test_the_artifact_round_trips_a_report_of_either_kind() -> None:
    round_report = RoundReport(3, layers=[["a"]], executed=["a"], runs={"a": None})
    assert report_from_artifact(_text(round_report)) == RunReport(round_report, 2, "ab" * 32)
    recheck = RecheckReport(4, audited=["a"])
    assert report_from_artifact(_text(recheck)).report == recheck


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (_text(RoundReport(1), kind="audit"), "artifact.kind"),
        (_text(RoundReport(1), generation=0), "artifact.generation"),
        (_text(RoundReport(1), generation=True), "artifact.generation"),
        (_text(RoundReport(1), ledger_head=7), "artifact.ledger_head"),
        (_text(RoundReport(1), extra="x"), "artifact.extra"),
        (_text(RoundReport(1), kind="recheck"), "artifact.report.audited"),
        (_text(RoundReport(1)).replace('"generation":2', '"generation":2,"generation":3'), "artifact"),
        ('{"kind": "round", "report": ', "artifact"),
    ],
)
def test_an_artifact_that_is_not_what_a_flow_publishes_is_refused_naming_the_place(text: str, path: str) -> None:
    with pytest.raises(InputError) as caught:  # SnapshotError, or CanonicalError for text that is not strict JSON
        report_from_artifact(text)
    assert caught.value.path == path


def test_artifact_data_that_is_not_text_is_refused() -> None:
    with pytest.raises(SnapshotError, match="a report artifact holds JSON text"):
        report_from_artifact({"kind": "round"})

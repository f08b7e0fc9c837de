"""PrefectDispatcher without a Prefect server: a run still going, a run that failed, a dispatch that
could not start, a session the deployments do not serve, and the launcher's own options."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_helpers import ROOT, dir_bytes, served_session

from contextmesh.core.errors import ExecutionError
from contextmesh.execution.plan import RecheckReport
from contextmesh.mcp.deployment_dispatcher import PrefectDispatcher
from contextmesh.mcp.served_session import ServedSession
from contextmesh.mcp.server import build_server
from contextmesh.mcp.write_dispatch import ProbeCache
from contextmesh.orchestration import deployed
from contextmesh.orchestration import served_record as served
from contextmesh.orchestration.deployed import Dispatched
from contextmesh.orchestration.run_report import RunReport

pytestmark = pytest.mark.anyio
NAMES = ("contextmesh-plan/plan", "contextmesh-recheck/recheck", "contextmesh-repair/repair")


def record_for(session_dir: Path) -> served.ServedRecord:
    session_id, _, _ = served.peek(str(session_dir))
    return served.ServedRecord(
        session_id, str(session_dir), "http://127.0.0.1:9/api", *NAMES, "run-deployment", os.getpid()
    )


def answering(record: served.ServedRecord, **options: Any) -> PrefectDispatcher:
    dispatcher = PrefectDispatcher(record, **options)
    dispatcher._probe = ProbeCache(lambda: True)  # the API "answers" (no server in these tests)
    return dispatcher


def running(deployment: str) -> Dispatched:
    return Dispatched(deployment, "0b3c", "http://127.0.0.1:9/runs/flow-run/0b3c", "RUNNING", "Running", False)


async def test_a_run_still_going_after_the_wait_returns_its_id_url_and_state(
    session_dir: Path, feed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = record_for(session_dir)
    monkeypatch.setattr(deployed, "dispatch_recheck", lambda record, feed, wait: running(record.recheck))
    monkeypatch.setattr(deployed, "dispatch_resume", lambda record, session, feed, wait, origin: running(record.plan))
    plain = served_session(session_dir, feed)
    dispatcher = answering(record)
    target = ServedSession(plain.session, ephemeral=False, source="test", dispatcher=dispatcher)
    before = dir_bytes(session_dir)
    async with Client(build_server(target)) as client:
        for tool in ("mesh_recheck", "mesh_resume"):
            result = await client.call_tool(tool, {})
            assert not result.is_error, result.content
            out = result.structured_content
            assert out is not None
            assert out["flow_run"] == {
                "id": "0b3c",
                "url": "http://127.0.0.1:9/runs/flow-run/0b3c",
                "state": "Running",
                "completed": False,
            }
            assert out["round"] == 1 and out["generation"] == target.session.generation
            assert out["invalidations"] == [] and out["stale"] == []
    assert dir_bytes(session_dir) == before  # nothing ran in this process


def test_a_run_that_failed_is_an_error_naming_its_state_and_address(
    session_dir: Path, feed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = record_for(session_dir)
    failed = Dispatched(record.recheck, "0b3c", "http://x/runs/flow-run/0b3c", "FAILED", "Failed", True, "boom")
    monkeypatch.setattr(deployed, "dispatch_recheck", lambda record, feed, wait: failed)
    with pytest.raises(
        ExecutionError, match=r"ended Failed: boom; it committed nothing \(http://x/runs/flow-run/0b3c\)"
    ):
        answering(record).recheck(served_session(session_dir, feed).session)


def test_a_dispatch_that_cannot_start_names_the_deployment_and_the_api(
    session_dir: Path, feed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = record_for(session_dir)

    def refuse(*args: Any, **kwargs: Any) -> Dispatched:
        raise ConnectionError("connection refused")

    monkeypatch.setattr(deployed, "dispatch_resume", refuse)
    with pytest.raises(ExecutionError, match=r"could not be dispatched to contextmesh-plan/plan at http://127"):
        answering(record).resume(served_session(session_dir, feed).session)


def test_a_session_the_deployments_do_not_serve_is_refused(session_dir: Path, feed: Path, tmp_path: Path) -> None:
    record = served.ServedRecord(
        "other", str(tmp_path / "elsewhere"), "http://127.0.0.1:9/api", *NAMES, "run-deployment", os.getpid()
    )
    with pytest.raises(ExecutionError, match="the deployments serve"):
        answering(record).recheck(served_session(session_dir, feed).session)
    with pytest.raises(ExecutionError, match="a number of seconds from 0"):
        PrefectDispatcher(record, wait=-1)


def test_the_launcher_dispatches_only_to_a_live_served_record(
    session_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    monkeypatch.syspath_prepend(str(ROOT / "deployments"))
    sys.modules.pop("serve_mcp", None)
    import serve_mcp  # the deployment's launcher, from its folder

    assert serve_mcp.dispatcher_for(session_dir) is None  # nothing serves it
    assert serve_mcp.dispatcher_for(tmp_path / "no-session") is None
    record = record_for(session_dir)
    served.remember(record)
    found = serve_mcp.dispatcher_for(session_dir, wait=5)
    assert isinstance(found, PrefectDispatcher) and found.record == record and found.wait == 5
    ours, rest = serve_mcp._split(["--session", "S", "--dispatch", "never", "--dispatch-wait=9", "--port", "0"])
    assert (ours.dispatch, ours.dispatch_wait, rest) == ("never", 9.0, ["--session", "S", "--port", "0"])
    assert serve_mcp.main(["--session", str(session_dir), "--dispatch-wait", "-1"]) == 2
    assert serve_mcp.dispatcher_for(session_dir).wait == 0  # type: ignore[union-attr]  # by default: at once


def test_a_completed_run_is_reported_from_its_own_report_artifact(
    session_dir: Path, feed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = record_for(session_dir)
    done = Dispatched(record.recheck, "0b3c", "http://x/runs/flow-run/0b3c", "COMPLETED", "Completed", True)
    monkeypatch.setattr(deployed, "dispatch_recheck", lambda record, feed, wait: done)
    monkeypatch.setattr(deployed, "dispatch_resume", lambda record, session, feed, wait, origin: done)
    published = RecheckReport(7, audited=["schema"], audit_errors={"tokens": "boom"}, stale=[])
    read: list[str] = []

    def report(flow_run_id: str, *, url: str = "") -> RunReport:
        read.append(flow_run_id)
        return RunReport(published, 9, "cd" * 32)

    dispatcher = answering(record)
    monkeypatch.setattr(dispatcher.calls, "report", report)
    session = served_session(session_dir, feed).session
    result = dispatcher.recheck(session)
    assert read == ["0b3c"]  # the run's own report, not the session's ledger
    assert (result.round, result.audited, result.audit_errors) == (7, ["schema"], {"tokens": "boom"})
    assert (result.generation, result.ledger_head, result.committed) == (9, "cd" * 32, True)
    assert result.flow_run is not None and result.flow_run.completed
    with pytest.raises(ExecutionError, match=r"published a recheck report, not the RoundReport"):
        dispatcher.resume(session)

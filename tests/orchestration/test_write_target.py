"""Where a write runs — the one rule the CLI and the MCP launcher both follow (no server needed)."""

from __future__ import annotations

import os
from pathlib import Path

import prefect.settings as ps
import pytest
from cli_helpers import closed_api_url
from orch_helpers import keyed_session

from contextmesh.core.errors import ExecutionError
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.mcp.deployment_dispatcher import PrefectDispatcher, dispatcher_for
from contextmesh.orchestration import served_record as served
from contextmesh.orchestration.write_target import served_target

NAMES = ("contextmesh-plan/plan", "contextmesh-recheck/recheck", "contextmesh-repair/repair")


def _session(directory: Path) -> Path:
    registry = TaskRegistry()
    registry.register_worker("t.v1", lambda ctx: {})

    def declare(plan: Plan) -> None:
        plan.task("a", worker_key="t.v1", assumes="a holds")

    keyed_session(directory, registry, declare)
    return directory


def _serve(directory: Path, home: Path, api_url: str) -> served.ServedRecord:
    session_id, _, _ = served.peek(str(directory))
    record = served.ServedRecord(session_id, str(directory), api_url, *NAMES, "run-deployment", os.getpid())
    served.remember(record, home)
    return record


def test_local_reads_nothing_and_auto_runs_here_while_nothing_serves_the_session(tmp_path: Path) -> None:
    assert served_target(tmp_path / "not-even-there", "local") is None
    directory = _session(tmp_path / "session")
    assert served_target(directory, "auto", home=tmp_path / "home") is None
    assert dispatcher_for(directory, home=tmp_path / "home") is None


def test_auto_dispatches_to_a_live_served_record_and_the_cli_checks_its_api_first(tmp_path: Path) -> None:
    directory, home = _session(tmp_path / "session"), tmp_path / "home"
    record = _serve(directory, home, closed_api_url())
    assert served_target(directory, "auto", check_api=False, home=home) == record
    with pytest.raises(ExecutionError, match=r"the Prefect API at http://127\.0\.0\.1:\d+/api does not answer"):
        served_target(directory, "auto", home=home)
    found = dispatcher_for(directory, wait=7, home=home)
    assert isinstance(found, PrefectDispatcher) and found.record == record and found.wait == 7


def test_a_directory_that_is_not_a_session_with_a_plan_is_refused_but_gives_the_launcher_no_dispatcher(
    tmp_path: Path,
) -> None:
    with pytest.raises(ExecutionError, match="holds no session manifest"):
        served_target(tmp_path, "auto", home=tmp_path / "home")
    assert dispatcher_for(tmp_path, home=tmp_path / "home") is None  # contextmesh-mcp says what is wrong
    with pytest.raises(ExecutionError, match="not 'elsewhere'"):
        served_target(tmp_path, "elsewhere", home=tmp_path / "home")  # type: ignore[arg-type]


def test_deployment_mode_needs_prefect_api_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No API configured anywhere: not in the environment, not in the settings a server fixture of
    # this test session may have entered.
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    directory = _session(tmp_path / "session")
    with (
        ps.temporary_settings(restore_defaults={ps.PREFECT_API_URL}),
        pytest.raises(ExecutionError, match="--deployment dispatches to PREFECT_API_URL, which is not set"),
    ):
        served_target(directory, "deployment")

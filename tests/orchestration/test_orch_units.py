"""The orchestration package's pure parts, without a server: settings, homes, tags, ids, the outbox, reports."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest
from prefect.settings.models.root import Settings

from contextmesh.core.errors import ContextMeshError, ExecutionError
from contextmesh.core.graph import ContextGraph
from contextmesh.demo.execute import Walkthrough, run_walkthrough
from contextmesh.execution.plan import Plan, RoundReport
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.orchestration import local_server as server
from contextmesh.orchestration import served_record as served
from contextmesh.orchestration import settings
from contextmesh.orchestration.announce import NAMESPACE, announcements, event_id, render_receipt
from contextmesh.orchestration.flow_bodies import cached_shown, limit_name, recheck_report_from, round_report_from
from contextmesh.orchestration.prefect_executor import identity_tags


@pytest.fixture(scope="module")
def walk(tmp_path_factory: pytest.TempPathFactory) -> Walkthrough:
    return run_walkthrough(feed=tmp_path_factory.mktemp("feed") / "advisories.json")


def test_a_managed_server_gets_its_own_home_no_telemetry_and_fast_recording() -> None:
    base = {"PREFECT_API_URL": "http://elsewhere/api", "PREFECT_PROFILE": "cloud", "PATH": "/bin", "DO_NOT_TRACK": "0"}
    env = settings.server_environment(Path("/h/prefect"), ui=False, base=base)
    assert "PREFECT_API_URL" not in env and "PREFECT_PROFILE" not in env
    assert env["PATH"] == "/bin" and env["PREFECT_HOME"] == "/h/prefect"
    assert env["DO_NOT_TRACK"] == "1" and env["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert env["PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL"] == "1"
    assert env["PREFECT_SERVER_UI_ENABLED"] == "false"


def test_a_managed_server_batches_its_event_persister_with_settings_prefect_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = settings.server_environment(Path("/h/prefect"), base={})
    for name, value in settings.PERSISTER_BATCHING.items():
        assert env[name] == value
        monkeypatch.setenv(name, value)
    persister = Settings().server.services.event_persister
    assert (persister.batch_size, persister.read_batch_size, persister.flush_interval) == (200, 200, 1.0)


def test_a_managed_server_repossesses_a_dead_writers_slot_every_5_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    env = settings.server_environment(Path("/h/prefect"), base={})
    monkeypatch.setenv(
        "PREFECT_SERVER_SERVICES_REPOSSESSOR_LOOP_SECONDS", env["PREFECT_SERVER_SERVICES_REPOSSESSOR_LOOP_SECONDS"]
    )
    assert Settings().server.services.repossessor.loop_seconds == 5.0


def test_client_defaults_never_override_what_the_user_set() -> None:
    environ = {"PREFECT_LOGGING_LEVEL": "DEBUG"}
    settings.prepare_environment(environ)
    assert environ["PREFECT_LOGGING_LEVEL"] == "DEBUG"
    assert environ["PREFECT_SERVER_EPHEMERAL_ENABLED"] == "false" and environ["DO_NOT_TRACK"] == "1"


def test_the_home_is_contextmesh_home_else_the_xdg_state_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTMESH_HOME", "/somewhere/cm")
    assert server.contextmesh_home() == Path("/somewhere/cm")
    monkeypatch.delenv("CONTEXTMESH_HOME")
    monkeypatch.setenv("XDG_STATE_HOME", "/state")
    assert server.contextmesh_home() == Path("/state/contextmesh")
    monkeypatch.delenv("XDG_STATE_HOME")
    assert server.contextmesh_home() == Path.home() / ".local" / "state" / "contextmesh"


def test_an_empty_xdg_state_home_puts_the_server_and_the_served_records_under_local_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CONTEXTMESH_HOME", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", "")
    state = Path.home() / ".local" / "state" / "contextmesh"
    assert server.contextmesh_home() == state
    assert served.path_for("s-1") == state / "served" / "s-1.json"


def test_server_errors_hang_under_the_execution_branch_of_the_one_tree() -> None:
    # Like every later layer's error, ServerError lives where it is raised, under a drawn branch.
    assert server.ServerError.__bases__ == (ExecutionError,)
    assert issubclass(server.ServerError, ContextMeshError)
    assert "ServerError" in server.__all__


def test_a_home_with_no_pid_file_has_no_server(tmp_path: Path) -> None:
    found = server.status(tmp_path)
    assert found.running is False and found.info is None
    assert server.stop(tmp_path) is False


def test_identity_tags_name_plan_task_role_keys_and_ground() -> None:
    worker = identity_tags("p", "hashing", "worker", "auth.hash.v1", "assumption:a")
    assert worker == [
        "cm.plan:p",
        "cm.task:hashing",
        "cm.role:worker",
        "cm.worker:auth.hash.v1",
        "cm.assumption:assumption:a",
    ]
    audit = identity_tags("p", "hashing", "audit", "auth.hash.v1", "assumption:a", "auth.audit.v1")
    assert "cm.auditor:auth.audit.v1" in audit and "cm.role:audit" in audit


def test_the_session_limit_is_named_after_the_session_id() -> None:
    sid = str(uuid.uuid4())
    assert limit_name(sid) == f"contextmesh-session-{sid}"


def test_a_disproof_announcement_has_a_deterministic_id_and_names_what_went_stale(walk: Walkthrough) -> None:
    (item,) = announcements(walk.runner.ledger, "session-1")
    entry = next(e for e in walk.runner.ledger.entries if e.event == "disproved")
    assert item.entry == entry
    assert item.id == uuid.uuid5(NAMESPACE, f"session-1|{entry.digest}|{item.assumption_id}")
    assert item.id == event_id("session-1", entry.digest, item.assumption_id)
    assert event_id("session-2", entry.digest, item.assumption_id) != item.id
    assert item.stale == ("hashing", "routes", "rate_limit")
    assert item.artifact_key == f"cm-disproved-{item.id}"
    text = render_receipt(item)
    assert "# Disproved: argon2-cffi has no open advisory" in text
    assert text.count("- ✗ ") == 8


def test_flow_results_rebuild_the_engine_reports(walk: Walkthrough) -> None:
    assert round_report_from(dataclasses.asdict(walk.third)) == walk.third
    rebuilt = recheck_report_from(dataclasses.asdict(walk.recheck))
    assert rebuilt == walk.recheck and rebuilt.invalidations[0].blast_radius == 8


def test_large_plans_get_cached_runs_only_for_direct_needs_of_what_ran() -> None:
    registry = TaskRegistry()
    registry.register_worker("w.v1", lambda ctx: {"task": ctx.task})
    runner = Plan("big", ContextGraph(), registry=registry)
    for i in range(60):
        runner.task(f"t{i:02d}", worker_key="w.v1", assumes=f"ground {i}", needs=[f"t{i - 1:02d}"] if i % 2 else [])
    everything = [f"t{i:02d}" for i in range(60) if i != 31]
    report = RoundReport(2, executed=["t31"], cached=everything, runs={"t31": None})
    assert cached_shown(runner, report) == ["t30"]
    small = Plan("small", ContextGraph(), registry=registry)
    for i in range(5):
        small.task(f"s{i}", worker_key="w.v1", assumes=f"small ground {i}")
    assert cached_shown(small, RoundReport(2, cached=["s0", "s1"], runs={"s2": None})) == ["s0", "s1"]


def test_server_commands_on_a_home_with_no_server_say_so(tmp_path: Path) -> None:
    from contextmesh.orchestration.commands import server_command

    data, text = server_command("status", home=tmp_path)
    assert data["running"] is False and "contextmesh server start" in text
    data, text = server_command("stop", home=tmp_path)
    assert data == {"home": str(tmp_path), "stopped": False} and text == "no managed server was running"

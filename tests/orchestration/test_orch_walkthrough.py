"""The execute walk-through on Prefect, read back from Prefect's own API.

One walk-through on a session directory: round 1, the advisory, the recheck, the repair, round 3 —
each round a flow run on the real server of ``conftest.py``. The assertions query the REST API
(``/api/flow_runs``, ``/api/task_runs``, ``/api/events``, ``/api/artifacts``) and compare the
session with the same steps run by the in-process executor.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from orch_helpers import artifacts, by_role, events, flow_run, post, task_runs

from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, publish
from contextmesh.demo.execute import REPAIR_GROUND, run_session_walkthrough
from contextmesh.demo.on_prefect import PrefectWalkthrough, run_walkthrough_on_prefect
from contextmesh.demo.saved import create_demo_session, open_demo_session, save_demo_session
from contextmesh.formats.graph_file import dump_graph
from contextmesh.orchestration.announce import announcements
from contextmesh.session.session import Session

pytestmark = pytest.mark.integration

PLAN = "secure-authentication"
TASKS = {"schema", "hashing", "tokens", "routes", "rate_limit"}
ARGON2_GROUND = "assumption:argon2-cffi-has-no-open-advisory-58ddef"


@pytest.fixture(scope="module")
def walk(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> PrefectWalkthrough:
    root = tmp_path_factory.mktemp("prefect-walk")
    return run_walkthrough_on_prefect(root / "session", root / "feed.json")


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The same steps, committed through a session, with the in-process executor."""
    root = tmp_path_factory.mktemp("in-process-walk")
    feed = root / "feed.json"
    create_demo_session(root / "session", feed=feed)
    session = open_demo_session(root / "session", feed=feed)
    session.apply(lambda s: s.runner.run())  # type: ignore[union-attr]
    publish(feed, "argon2-cffi", ADVISORY_TEXT)
    session.apply(lambda s: s.runner.recheck())  # type: ignore[union-attr]
    session.apply(
        lambda s: s.runner.repair(  # type: ignore[union-attr]
            "hashing", assumes=REPAIR_GROUND, worker_key=DEFAULT_KEYS["bcrypt"], produces=["password hasher"]
        )
    )
    session.apply(lambda s: s.runner.run(include_failed=False))  # type: ignore[union-attr]
    return session


def test_each_round_is_one_named_flow_run(walk: PrefectWalkthrough, prefect_api: str) -> None:
    assert set(walk.flow_runs) == {1, 2, 3}
    names = {r: flow_run(prefect_api, fid)["name"] for r, fid in walk.flow_runs.items()}
    assert names == {1: f"{PLAN} · round 1", 2: f"{PLAN} · round 2 · recheck", 3: f"{PLAN} · round 3"}
    session_id = open_demo_session(walk.session_dir, feed=walk.feed).session_id  # type: ignore[arg-type]
    for fid in walk.flow_runs.values():
        found = flow_run(prefect_api, fid)
        assert found["state_type"] == "COMPLETED"
        assert {f"cm.plan:{PLAN}", f"cm.session:{session_id}"} <= set(found["tags"])
    assert walk.recorded
    assert walk.urls[3].endswith(f"/runs/flow-run/{walk.flow_runs[3]}")


def test_round_one_has_five_worker_runs_and_five_audit_runs(walk: PrefectWalkthrough, prefect_api: str) -> None:
    runs = task_runs(prefect_api, walk.flow_runs[1], 10)
    workers, audits = by_role(runs, "worker"), by_role(runs, "audit")
    assert set(workers) == TASKS
    assert set(audits) == {f"{t} · audit" for t in TASKS}
    assert {r["state_name"] for r in runs} == {"Completed"}
    hashing = workers["hashing"]["tags"]
    assert {f"cm.plan:{PLAN}", "cm.task:hashing", f"cm.worker:{DEFAULT_KEYS['argon2']}"} <= set(hashing)
    assert f"cm.assumption:{ARGON2_GROUND}" in hashing
    assert walk.first.executed == ["schema", "hashing", "tokens", "routes", "rate_limit"]


def test_round_three_executes_exactly_the_stale_closure_and_caches_the_rest(
    walk: PrefectWalkthrough, prefect_api: str
) -> None:
    runs = task_runs(prefect_api, walk.flow_runs[3], 8)
    assert set(by_role(runs, "worker")) == {"hashing", "routes", "rate_limit"}
    cached = by_role(runs, "cached")
    assert set(cached) == {"schema · cached", "tokens · cached"}
    assert {r["state_name"] for r in cached.values()} == {"Cached"}
    assert {r["state_type"] for r in cached.values()} == {"COMPLETED"}
    assert walk.third.executed == ["hashing", "routes", "rate_limit"]
    assert walk.third.cached == ["schema", "tokens"]
    hashing = by_role(runs, "worker")["hashing"]["tags"]
    assert f"cm.worker:{DEFAULT_KEYS['bcrypt']}" in hashing


def test_the_recheck_emits_the_disproof_event_and_attaches_the_receipt(
    walk: PrefectWalkthrough, prefect_api: str
) -> None:
    runs = task_runs(prefect_api, walk.flow_runs[2], 5)
    assert set(by_role(runs, "audit")) == {f"{t} · audit" for t in TASKS}
    assert by_role(runs, "audit")["hashing · audit"]["state_name"] == "Disproved"
    (item,) = announcements(walk.runner.ledger, open_demo_session(walk.session_dir, feed=walk.feed).session_id)  # type: ignore[arg-type]
    (event,) = events(prefect_api, str(item.id))
    assert event["event"] == "contextmesh.assumption.disproved"
    assert event["resource"]["prefect.resource.id"] == f"contextmesh.assumption.{ARGON2_GROUND}"
    related = {r["prefect.resource.id"] for r in event["related"]}
    fallen = {f"contextmesh.node.{entry['id']}" for entry in item.receipt["invalidated"]}
    assert len(fallen) == 8 and fallen <= related
    assert f"prefect.flow-run.{walk.flow_runs[2]}" in related
    assert event["payload"]["stale"] == ["hashing", "routes", "rate_limit"]
    (receipt,) = artifacts(prefect_api, item.artifact_key)
    assert receipt["flow_run_id"] == walk.flow_runs[2]
    assert receipt["type"] == "markdown" and "argon2-cffi has no open advisory" in receipt["data"]


def test_every_ledger_run_id_is_a_prefect_run_and_the_ledger_verifies(
    walk: PrefectWalkthrough, prefect_api: str
) -> None:
    ledger = walk.runner.ledger
    assert ledger.verify()
    refs = [e.run for e in ledger.entries if e.run is not None]
    # round 1: five executed + five audited; the recheck: the disproof (quiet audits share one summary
    # entry); round 3: three executed + three audited
    assert len(refs) == 10 + 1 + 6
    ids = sorted({str(ref["task_run_id"]) for ref in refs})
    found = post(prefect_api, "/task_runs/filter", {"task_runs": {"id": {"any_": ids}}, "limit": 200})
    assert {r["id"] for r in found} == set(ids)
    by_id = {r["id"]: r for r in found}
    for ref in refs:
        assert by_id[str(ref["task_run_id"])]["flow_run_id"] == ref["flow_run_id"]
        assert ref["flow_run_id"] in walk.flow_runs.values()
    assert all(e.run is None for e in ledger.entries if e.event in {"cached", "repaired", "invalidated"})


def test_the_graph_is_byte_identical_to_the_in_process_executors(walk: PrefectWalkthrough, in_process: Session) -> None:
    assert dump_graph(walk.runner.graph) == dump_graph(in_process.graph)
    on_prefect = [_without_run(e.to_dict()) for e in walk.runner.ledger.entries]
    here = [_without_run(e.to_dict()) for e in in_process.runner.ledger.entries]  # type: ignore[union-attr]
    assert on_prefect == here


def test_the_saved_demo_session_reaches_the_same_graph(walk: PrefectWalkthrough, tmp_path: Path) -> None:
    feed = tmp_path / "feed.json"
    session = save_demo_session(tmp_path / "saved", feed=feed)
    run_session_walkthrough(session, feed=feed)  # publishes the advisory, rechecks, repairs, runs
    assert dump_graph(session.graph) == dump_graph(walk.runner.graph)


def test_round_tables_list_every_task(walk: PrefectWalkthrough, prefect_api: str) -> None:
    tables = [a for a in artifacts(prefect_api, "cm-round-3") if a["flow_run_id"] == walk.flow_runs[3]]
    assert len(tables) == 1
    rows = {row["task"]: row for row in _table(tables[0]["data"])}
    assert set(rows) == TASKS
    assert rows["schema"]["task run"] == "schema · cached"
    assert rows["hashing"]["outcome"] == "executed"


def test_a_pending_announcement_is_re_emitted_with_the_same_id(walk: PrefectWalkthrough, prefect_api: str) -> None:
    """The outbox: drop the delivery mark; the next flow run on the session emits the same event id again."""
    from contextmesh.demo.saved import demo_registry
    from contextmesh.orchestration.flow_bodies import make_plan_flow

    assert walk.session_dir is not None
    session = open_demo_session(walk.session_dir, feed=walk.feed)
    (item,) = announcements(session.runner.ledger, session.session_id)  # type: ignore[union-attr]
    for artifact in artifacts(prefect_api, item.artifact_key):
        response = httpx.delete(f"{prefect_api}/artifacts/{artifact['id']}", timeout=10.0)
        assert response.status_code == 204
    result = make_plan_flow(demo_registry(walk.feed))(session_dir=str(walk.session_dir), mode="resume")
    assert result["announced"] == [str(item.id)]
    assert result["executed"] == []
    (marked,) = artifacts(prefect_api, item.artifact_key)
    assert marked["flow_run_id"] == result["flow_run_id"]
    assert len(events(prefect_api, str(item.id))) == 1  # the same id, stored once
    again = make_plan_flow(demo_registry(walk.feed))(session_dir=str(walk.session_dir), mode="resume")
    assert again["announced"] == []


def _without_run(entry: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in entry.items() if k not in {"run", "previous", "digest"}}


def _table(data: object) -> list[dict[str, str]]:
    import json

    rows = json.loads(data) if isinstance(data, str) else data
    assert isinstance(rows, list)
    return rows

"""The controlled writes in-process: commit through a clone, refusals, reloads, the dispatcher hook."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_helpers import ADVISORY, QUESTIONS, dir_bytes, served_session, state_bytes

from contextmesh.belief.evidence import submit
from contextmesh.core.errors import SessionError
from contextmesh.demo.auth import DEFAULT_KEYS, publish, register_demo
from contextmesh.demo.knowledge import build_world
from contextmesh.demo.saved import demo_registry
from contextmesh.execution.context import AuditContext, Verdict
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.mcp.models import FlowRunOut, RecheckResult, ResumeResult
from contextmesh.mcp.rerun_tool import mesh_rerun_from
from contextmesh.mcp.served_session import ServedSession
from contextmesh.mcp.server import build_server
from contextmesh.mcp.write_dispatch import ProbeCache
from contextmesh.mcp.write_tools import ControlledWriteError, mesh_recheck, mesh_resume, mesh_submit_evidence
from contextmesh.session.session import Session

pytestmark = pytest.mark.anyio
BCRYPT = DEFAULT_KEYS["bcrypt"]


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(name, arguments or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def refusal(client: Client, name: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(name, arguments or {})
    assert result.is_error, result.structured_content
    return str(result.content[0].text)  # type: ignore[union-attr]


def advisory(served: ServedSession) -> dict[str, Any]:
    runner = served.session.runner
    assert runner is not None
    return {
        "text": ADVISORY,
        "source_id": runner.source_id,
        "external_id": "osv/CVE-2026-9999",
        "metadata": {"kind": "advisory", "package": "argon2-cffi"},
    }


@pytest.fixture
def served(session_dir: Path, feed: Path) -> ServedSession:
    return served_session(session_dir, feed)


# -- the write path -------------------------------------------------------------------------------


async def test_evidence_recheck_repair_resume_through_the_in_memory_client(served: ServedSession) -> None:
    start = served.session.generation
    async with Client(build_server(served)) as client:
        stored = await call(client, "mesh_submit_evidence", advisory(served))
        assert stored["created"] and stored["committed"] and stored["generation"] == start + 1
        replay = await call(client, "mesh_submit_evidence", advisory(served))
        assert replay["evidence_id"] == stored["evidence_id"]
        assert not replay["created"] and not replay["committed"] and replay["generation"] == start + 1
        recheck = await call(client, "mesh_recheck")
        assert [i["evidence_id"] for i in recheck["invalidations"]] == [stored["evidence_id"]]
        assert sorted(recheck["stale"]) == ["hashing", "rate_limit", "routes"]
        assert recheck["generation"] == start + 2
        not_healthy = await refusal(
            client, "mesh_repair", {"task": "schema", "worker_key": BCRYPT, "assumes": "bcrypt is fine"}
        )
        assert "not stale or failed" in not_healthy
        unregistered = await refusal(
            client, "mesh_repair", {"task": "hashing", "worker_key": "auth.hash.bcrypt.v2", "assumes": "x"}
        )
        assert "no worker is registered under 'auth.hash.bcrypt.v2'" in unregistered and BCRYPT in unregistered
        repair = await call(
            client, "mesh_repair", {"task": "hashing", "worker_key": BCRYPT, "assumes": "bcrypt has no open advisory"}
        )
        assert repair["worker_key"] == BCRYPT and repair["replaces"] == recheck["invalidations"][0]["assumption_id"]
        resume = await call(client, "mesh_resume")
        assert resume["executed"] == ["hashing", "routes", "rate_limit"] and resume["cached"] == ["schema", "tokens"]
        idle = await call(client, "mesh_resume")
        assert not idle["changed"] and idle["executed"] == [] and idle["generation"] == resume["generation"]
    assert served.session.generation == start + 4
    assert served.writes == 4


async def test_writes_refuse_an_ephemeral_demo_and_a_never_checkpoint(session_dir: Path, feed: Path) -> None:
    world = build_world(0)
    demo = ServedSession(Session(world.graph, world.result.resolver), ephemeral=True, source="demo")
    source = next(n.id for n in world.graph.by_type("source"))
    never = served_session(session_dir, feed, policy="never")
    on_disk = dir_bytes(session_dir)
    for target, word in ((demo, "ephemeral --demo"), (never, "--checkpoint never")):
        async with Client(build_server(target)) as client:
            assert word in await refusal(client, "mesh_submit_evidence", {"text": ADVISORY, "source_id": source})
            assert word in await refusal(client, "mesh_recheck")
            assert word in await refusal(
                client, "mesh_repair", {"task": "hashing", "worker_key": BCRYPT, "assumes": "x"}
            )
            assert word in await refusal(client, "mesh_resume")
            assert (await client.list_tools()).meta["notAnswering"] == []  # type: ignore[index]
    assert dir_bytes(session_dir) == on_disk
    assert not any(n.type == "evidence" and n.label == ADVISORY for n in world.graph)


async def test_a_failed_commit_leaves_the_served_session_byte_identical(
    served: ServedSession, session_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live, before, on_disk = served.session, state_bytes(served.session), dir_bytes(session_dir)

    def broken(self: Session, *, lock_wait: float = 2.0) -> int:
        raise SessionError("disk on fire")

    monkeypatch.setattr(Session, "commit", broken)
    async with Client(build_server(served)) as client:
        message = await refusal(client, "mesh_submit_evidence", advisory(served))
    assert "disk on fire" in message and "dropped" in message
    assert served.session is live and state_bytes(served.session) == before
    assert dir_bytes(session_dir) == on_disk


async def test_a_broken_auditor_contract_commits_nothing(session_dir: Path, feed: Path) -> None:
    def cites_a_claim(ctx: AuditContext) -> Verdict:
        return ctx.disproved("a claim is not evidence", cite="claim:not-evidence")

    registry = TaskRegistry()
    register_demo(registry, feed=feed, keys={"advisory_audit": "unused.audit"})
    registry.register_auditor(DEFAULT_KEYS["advisory_audit"], cites_a_claim)
    session = Session.load(session_dir, registry=registry)
    served = ServedSession(session, ephemeral=False, source=str(session_dir))
    before, on_disk = state_bytes(session), dir_bytes(session_dir)
    async with Client(build_server(served)) as client:
        message = await refusal(client, "mesh_recheck")
    assert "not live submitted evidence" in message
    assert served.session is session and state_bytes(session) == before and session.runner.round == 1  # type: ignore[union-attr]
    assert dir_bytes(session_dir) == on_disk


async def test_a_disproof_that_cites_no_submitted_evidence_is_refused(served: ServedSession, feed: Path) -> None:
    publish(feed, "argon2-cffi", "CVE-2026-9999 in the feed")  # the auditor will disprove from the feed alone
    before = state_bytes(served.session)
    async with Client(build_server(served)) as client:
        message = await refusal(client, "mesh_recheck")
    assert "without citing submitted evidence" in message
    assert state_bytes(served.session) == before


async def test_bad_evidence_is_refused_and_changes_nothing(served: ServedSession, session_dir: Path) -> None:
    before, on_disk = state_bytes(served.session), dir_bytes(session_dir)
    async with Client(build_server(served)) as client:
        assert "must name a source node" in await refusal(
            client, "mesh_submit_evidence", {"text": ADVISORY, "source_id": "claim:nope"}
        )
        deep: dict[str, Any] = {"x": 1}
        for _ in range(10):
            deep = {"x": deep}
        runner = served.session.runner
        assert runner is not None
        assert "nested deeper" in await refusal(
            client, "mesh_submit_evidence", {"text": ADVISORY, "source_id": runner.source_id, "metadata": deep}
        )
    assert state_bytes(served.session) == before and dir_bytes(session_dir) == on_disk


# -- other writers ----------------------------------------------------------------------------------


async def test_the_served_session_reloads_when_another_writer_commits(
    served: ServedSession, session_dir: Path, feed: Path
) -> None:
    async with Client(build_server(served)) as client:
        await call(client, "mesh_health")
        other = served_session(session_dir, feed).session
        runner = other.runner
        assert runner is not None
        stored = other.apply(lambda s: submit(s.graph, "observed by another writer", runner.source_id))
        node = await call(client, "mesh_get_node", {"node_id": stored.node.id})
    assert node["type"] == "evidence" and served.reloads == 1
    assert served.session.generation == other.generation


def test_a_write_that_conflicts_replays_on_the_newer_generation(
    served: ServedSession, session_dir: Path, feed: Path
) -> None:
    other = served_session(session_dir, feed).session
    runner = other.runner
    assert runner is not None
    first = other.apply(lambda s: submit(s.graph, "committed first, elsewhere", runner.source_id))
    # Called without served.call(): no refresh, so the clone's commit conflicts and must replay.
    result = mesh_submit_evidence(served, ADVISORY, runner.source_id)
    assert result.committed and result.generation == other.generation + 1
    graph = served.session.graph
    assert first.node.id in graph and result.evidence_id in graph


# -- the dispatcher hook and notAnswering -----------------------------------------------------------


class FakeDispatcher:
    """A deployment stand-in: counts probes and calls, answers as told."""

    name = "prefect:fake/contextmesh-recheck"

    def __init__(self, up: bool) -> None:
        self.up = up
        self.probes = 0
        self.calls: list[str] = []

    def answering(self) -> bool:
        self.probes += 1
        return self.up

    def recheck(self, session: Session) -> RecheckResult:
        self.calls.append("recheck")
        run = FlowRunOut(id="0000", url="http://127.0.0.1:4200/runs/flow-run/0000", state="Running", completed=False)
        return RecheckResult(
            round=0,
            audited=[],
            audit_errors={},
            failed={},
            stale=[],
            invalidations=[],
            ledger_head=None,
            generation=0,
            committed=False,
            flow_run=run,
        )

    def resume(self, session: Session) -> ResumeResult:
        self.calls.append("resume")
        return ResumeResult(
            round=0,
            layers=[],
            executed=[],
            cached=[],
            blocked={},
            failed={},
            stale=[],
            invalidations=[],
            changed=False,
            ledger_head=None,
            generation=0,
        )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_not_answering_names_the_dispatched_tools_when_the_deployment_is_down(
    session_dir: Path, feed: Path, mode: str
) -> None:
    down, up = FakeDispatcher(False), FakeDispatcher(True)
    plain = served_session(session_dir, feed)
    dispatched = ["mesh_recheck", "mesh_rerun_from", "mesh_resume"]
    for dispatcher, expected in ((down, dispatched), (up, []), (None, [])):
        session = Session.load(session_dir, registry=plain.session.registry)
        served = ServedSession(session, ephemeral=False, source="x", dispatcher=dispatcher)
        async with Client(build_server(served), mode=mode) as client:
            for _ in range(3):
                listed = await client.list_tools(cache_mode="refresh")
                assert listed.meta["notAnswering"] == expected  # type: ignore[index]
            notes = {t.name: t.description or "" for t in listed.tools}
            assert sorted(n for n, text in notes.items() if text.startswith("NOT ANSWERING NOW")) == expected
            for name in expected:
                tool = {"mesh_recheck": mesh_recheck, "mesh_resume": mesh_resume, "mesh_rerun_from": mesh_rerun_from}
                own = inspect.getdoc(tool[name]) or ""
                assert down.name in notes[name] and notes[name].endswith(own)  # the note, then the tool's own text
            described = json.loads((await client.read_resource("contextmesh://session")).contents[0].text)  # type: ignore[union-attr]
            assert described["served"]["not_answering"] == expected
    assert down.probes == 1 and up.probes == 1  # cached: a few seconds' TTL, never per call


async def test_recheck_and_resume_go_through_a_configured_dispatcher(served: ServedSession) -> None:
    dispatcher = FakeDispatcher(True)
    served.dispatcher = dispatcher
    before = state_bytes(served.session)
    async with Client(build_server(served)) as client:
        recheck = await call(client, "mesh_recheck")
        await call(client, "mesh_resume")
    assert dispatcher.calls == ["recheck", "resume"]
    assert recheck["flow_run"]["state"] == "Running" and recheck["generation"] == served.session.generation
    assert state_bytes(served.session) == before  # nothing ran in-process


def test_probe_cache_answers_from_cache_within_its_ttl() -> None:
    now = [0.0]
    answers = iter([True, False])
    cache = ProbeCache(lambda: next(answers), ttl=3.0, clock=lambda: now[0])
    assert cache.answering() and cache.answering()
    now[0] = 2.9
    assert cache.answering() and cache.probes == 1
    now[0] = 3.0
    assert not cache.answering() and cache.probes == 2

    def boom() -> bool:
        raise OSError("connection refused")

    assert not ProbeCache(boom).answering()


def test_controlled_write_error_is_a_tool_refusal() -> None:
    from contextmesh.mcp.read_tools import MeshToolError

    assert issubclass(ControlledWriteError, MeshToolError)


INCIDENT = (
    "---\ntitle: Incident 7 at the Token Service\ndate: 2026-05-02\n---\n"
    "The Token Service rejected every login for twelve minutes after the key rotation. "
    "The Token Service recovered once the old key was restored.\n"
)


async def test_evidence_can_bring_the_document_it_came_from_as_a_source(served: ServedSession) -> None:
    start = served.session.generation
    args = {"text": "logins failed for twelve minutes", "document": INCIDENT, "document_name": "incidents/inc-7.md"}
    async with Client(build_server(served)) as client:
        stored = await call(client, "mesh_submit_evidence", args)
        assert stored["created"] and stored["committed"] and stored["document_wrote"]
        revision = stored["document_revision"]
        assert stored["node"]["source_id"] == revision and stored["generation"] == start + 1
        replay = await call(client, "mesh_submit_evidence", args)
        assert not replay["created"] and not replay["committed"] and replay["document_revision"] == revision
        revised = INCIDENT.replace("for twelve minutes", "for fourteen minutes")
        again = await call(client, "mesh_submit_evidence", {**args, "document": revised})
        assert again["committed"] and again["document_revision"] != revision
        assert len(again["superseded"]) == 1 and again["stale"] == []
    graph = served.session.graph
    [superseded] = again["superseded"]
    assert "twelve minutes" in graph.node(superseded).label and not graph.node(superseded).live
    assert graph.node(again["document_revision"]).attrs["channel"] == "evidence"


async def test_evidence_names_one_origin_and_a_bad_document_name_changes_nothing(
    served: ServedSession, session_dir: Path
) -> None:
    before, on_disk = state_bytes(served.session), dir_bytes(session_dir)
    runner = served.session.runner
    assert runner is not None
    async with Client(build_server(served)) as client:
        both = {"text": "x", "source_id": runner.source_id, "document": INCIDENT, "document_name": "a.md"}
        assert "exactly once: source_id" in await refusal(client, "mesh_submit_evidence", both)
        alone = {"text": "x", "document": INCIDENT}
        assert "document and document_name go together" in await refusal(client, "mesh_submit_evidence", alone)
        outside = {"text": "x", "document": INCIDENT, "document_name": "../escape.md"}
        assert "no '.' or '..' part" in await refusal(client, "mesh_submit_evidence", outside)
        no_suffix = {"text": "x", "document": INCIDENT, "document_name": "notes/inc-7"}
        assert "ends in one of .md" in await refusal(client, "mesh_submit_evidence", no_suffix)
    assert state_bytes(served.session) == before and dir_bytes(session_dir) == on_disk


# -- mesh_repair's keys -------------------------------------------------------------------------------


async def test_mesh_repair_lists_the_served_registrys_keys_in_its_schema(session_dir: Path, feed: Path) -> None:
    # The enum is the registry this server was handed, not a list written down somewhere: a key
    # only this test registers must appear, and repairing onto it must work.
    registry = demo_registry(feed)
    registry.register_worker("auth.hash.scrypt.v1", lambda ctx: None)
    served = ServedSession(Session.load(session_dir, registry=registry), ephemeral=False, source=str(session_dir))
    keys = registry.describe()
    async with Client(build_server(served)) as client:
        (repair,) = [t for t in (await client.list_tools()).tools if t.name == "mesh_repair"]
        worker = repair.input_schema["properties"]["worker_key"]
        auditor = repair.input_schema["properties"]["auditor_key"]
        assert worker["enum"] == keys["workers"] and "auth.hash.scrypt.v1" in worker["enum"]
        (string_branch,) = [b for b in auditor["anyOf"] if b.get("type") == "string"]
        assert string_branch["enum"] == keys["auditors"] == [DEFAULT_KEYS["advisory_audit"]]
        assert "enum lists all 7" in worker["description"]
        await call(client, "mesh_submit_evidence", advisory(served))
        assert (await call(client, "mesh_recheck"))["stale"] == ["hashing", "routes", "rate_limit"]
        onto = {"task": "hashing", "worker_key": "auth.hash.scrypt.v1", "assumes": "scrypt has no open advisory"}
        repaired = await call(client, "mesh_repair", onto)  # a key read off the enum is one the server takes
        described = json.loads((await client.read_resource("contextmesh://session")).contents[0].text)  # type: ignore[union-attr]
    assert repaired["worker_key"] == "auth.hash.scrypt.v1" and repaired["state"] == "stale"
    assert described["served"]["registry"]["workers"] == worker["enum"]


async def test_mesh_flow_run_says_there_is_nothing_to_follow_in_process(served: ServedSession) -> None:
    async with Client(build_server(served)) as client:
        recheck = await call(client, "mesh_recheck")
        message = await refusal(client, "mesh_flow_run", {"flow_run_id": "anything"})
    assert recheck["flow_run"] is None  # in-process: the answer is the whole report
    assert "in-process" in message and "no flow run to follow" in message


async def test_controlled_writes_after_asks_journal_what_changed_instead_of_a_snapshot(
    served: ServedSession, session_dir: Path
) -> None:
    def manifest() -> dict[str, Any]:
        return json.loads((session_dir / f"session-{served.session.generation:06d}.json").read_bytes())

    snapshot = manifest()["graph"]
    async with Client(build_server(served)) as client:
        for question in QUESTIONS[:3]:
            await call(client, "mesh_ask", {"question": question})  # telemetry pending or in flight
        stored = await call(client, "mesh_submit_evidence", advisory(served))
        after_evidence = manifest()
        recheck = await call(client, "mesh_recheck")
    assert stored["committed"] and recheck["committed"]
    after_recheck = manifest()
    # the snapshot is carried; each write added journal segments of what it changed
    assert after_evidence["graph"] == snapshot and after_recheck["graph"] == snapshot
    assert len(after_recheck["journal"]) > len(after_evidence["journal"]) >= 1
    written = sum(segment["bytes"] for segment in after_recheck["journal"])
    assert written < snapshot["bytes"] // 8
    reloaded = Session.load(session_dir, registry=served.session.registry, policy="never")
    assert state_bytes(reloaded) == state_bytes(served.session)  # replay holds every ask and both writes
    walks = sum(node.walks for node in served.session.graph.nodes.values())
    assert sum(node.walks for node in reloaded.graph.nodes.values()) == walks

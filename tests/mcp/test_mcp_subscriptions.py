"""Resource subscriptions: ``notifications/resources/updated`` within a second of the commit that changed it.

Both protocol eras: ``resources/subscribe`` (a 2025 client, ``mode="legacy"``) and a
``subscriptions/listen`` stream (2026-07-28, ``mode="auto"``). The commit comes from this server's
own write tools (in-memory client), and from another process — the ``contextmesh recheck`` CLI —
writing the directory a stdio server subprocess serves. The commit's moment is its manifest's
mtime (``session-<generation>.json``), so "within a second" is measured from the commit itself.
"""

from __future__ import annotations

import json
import subprocess
import time
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client, MCPError, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ResourceUpdatedNotification
from mcp_helpers import ADVISORY, LAUNCHER, PYTHON, ROOT, ServerProcess, served_session

from contextmesh.demo.auth import publish
from contextmesh.mcp.served_session import ServedSession
from contextmesh.mcp.server import build_server

pytestmark = pytest.mark.anyio
HASHING = "assumption:argon2-cffi-has-no-open-advisory-58ddef"  # what the hashing task stands on
HASHING_URI = f"contextmesh://assumption/{HASHING}"
TOKENS_URI = "contextmesh://assumption/assumption:eddsa-signing-keys-are-rotated-monthly-b23e81"  # never disproved
SESSION_URI = "contextmesh://session"
SCHEMA_URI = "contextmesh://schema"
HEALTH_URI = "contextmesh://health"
MODES = ["legacy", "auto"]
WITHIN = 1.0  # seconds from the commit (issue 20's acceptance)


class Notices:
    """The URIs of ``notifications/resources/updated`` a client received, in order, with their arrival time."""

    def __init__(self) -> None:
        send, receive = anyio.create_memory_object_stream[tuple[str, float]](100)
        self._send: MemoryObjectSendStream[tuple[str, float]] = send
        self.received: MemoryObjectReceiveStream[tuple[str, float]] = receive

    async def handler(self, message: Any) -> None:
        """A ``message_handler`` for the 2025 era: notices arrive on the session."""
        if isinstance(message, ResourceUpdatedNotification):
            await self._send.send((str(message.params.uri), time.time()))

    async def next(self, deadline: float) -> tuple[str, float]:
        """The next notice, waiting at most until ``deadline`` (wall clock)."""
        with anyio.fail_after(max(deadline - time.time(), 0.01)):
            return await self.received.receive()

    def pending(self) -> list[str]:
        found = []
        while True:
            try:
                found.append(self.received.receive_nowait()[0])
            except anyio.WouldBlock:
                return found


@asynccontextmanager
async def subscribed(target: Any, mode: str, uris: list[str], **options: Any) -> AsyncIterator[tuple[Client, Notices]]:
    """A client of ``target`` subscribed to ``uris`` the way its era does it."""
    notices = Notices()
    with notices._send, notices.received:
        # 2025: notices arrive on the session (the message handler); 2026: on the listen stream only
        handler = notices.handler if mode == "legacy" else None
        async with Client(target, mode=mode, message_handler=handler, **options) as client:
            if mode == "legacy":
                for uri in uris:
                    await subscribe_2025(client, uri)
                yield client, notices
                return
            async with client.listen(resource_subscriptions=uris) as stream, anyio.create_task_group() as tasks:

                async def forward() -> None:
                    async for event in stream:
                        await notices._send.send((event.uri, time.time()))  # type: ignore[union-attr]

                tasks.start_soon(forward)
                yield client, notices
                tasks.cancel_scope.cancel()


async def subscribe_2025(client: Client, uri: str) -> None:
    """``resources/subscribe``, as every client before 2026-07-28 sends it (the SDK marks it deprecated)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.session.subscribe_resource(uri)


def committed_at(directory: Path, generation: int) -> float:
    """When generation ``generation`` was committed: its manifest's mtime."""
    return (directory / f"session-{generation:06d}.json").stat().st_mtime


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(name, arguments or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def advisory(served: ServedSession) -> dict[str, Any]:
    runner = served.session.runner
    assert runner is not None
    return {"text": ADVISORY, "source_id": runner.source_id}


# -- this server's own writes ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_subscriber_hears_of_the_rejection_within_a_second_of_its_commit(
    session_dir: Path, feed: Path, mode: str
) -> None:
    served = served_session(session_dir, feed)
    watched = [HASHING_URI, TOKENS_URI, SESSION_URI, HEALTH_URI, SCHEMA_URI]
    async with subscribed(build_server(served), mode, watched) as (client, notices):
        # evidence is a commit (the session says a new generation) that changes neither assumption
        stored, heard, changed = await commit_and_hear(
            client, notices, watched, "mesh_submit_evidence", advisory(served)
        )
        assert stored["committed"] and heard == changed and SESSION_URI in heard
        assert HASHING_URI not in heard and TOKENS_URI not in heard
        recheck, heard, changed = await commit_and_hear(client, notices, watched, "mesh_recheck", {})
        assert [i["assumption_id"] for i in recheck["invalidations"]] == [HASHING]
        assert json.loads(await read(client, HASHING_URI))["assumption"]["status"] == "rejected"
    # exactly the watched resources the commit changed, each once (the tokens assumption's blast
    # radius shrank too: routes and rate_limit had fallen with hashing); the ontology never changes
    assert heard == changed and HASHING_URI in heard and SESSION_URI in heard and SCHEMA_URI not in heard


async def commit_and_hear(
    client: Client, notices: Notices, watched: list[str], tool: str, arguments: dict[str, Any]
) -> tuple[dict[str, Any], list[str], list[str]]:
    """Call a committing tool; (its result, the notices heard within a second of the commit, what changed)."""
    before = {uri: await read(client, uri) for uri in watched}
    result = await call(client, tool, arguments)
    directory = Path(json.loads(await read(client, SESSION_URI))["directory"])
    heard = await heard_by(notices, committed_at(directory, result["generation"]) + WITHIN)
    after = {uri: await read(client, uri) for uri in watched}
    return result, sorted(heard), sorted(uri for uri in watched if before[uri] != after[uri])


async def heard_by(notices: Notices, deadline: float) -> list[str]:
    """Every notice that arrived by ``deadline``; then nothing more for two polls after it."""
    heard = []
    while True:
        try:
            heard.append((await notices.next(deadline))[0])
        except TimeoutError:
            break
    await anyio.sleep(0.6)
    assert notices.pending() == [], "a notice arrived more than a second after the commit"
    return heard


async def read(client: Client, uri: str) -> str:
    return str((await client.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]


async def test_an_unknown_resource_is_refused_and_nothing_is_subscribed(session_dir: Path, feed: Path) -> None:
    served = served_session(session_dir, feed)
    async with Client(build_server(served), mode="legacy") as client:
        with pytest.raises(MCPError) as refused:
            await subscribe_2025(client, "contextmesh://assumption/assumption:nope")
    assert "cannot subscribe to 'contextmesh://assumption/assumption:nope'" in str(refused.value)


# -- another process's commit, to a stdio server ------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("mode", MODES)
async def test_a_stdio_subscriber_hears_of_a_rejection_another_process_committed(
    session_dir: Path, feed: Path, mode: str
) -> None:
    # The server serves the directory; the CLI (a process of its own) rechecks it against a feed
    # that now carries an advisory and commits the rejection. The server sees the new generation
    # on its watch and tells its subscriber, within a second of that commit.
    args = [str(LAUNCHER), "--session", str(session_dir), "--feed", str(feed)]
    params = StdioServerParameters(command=PYTHON, args=args, cwd=str(ROOT))
    async with subscribed(params, mode, [HASHING_URI, SCHEMA_URI], read_timeout_seconds=60) as (client, notices):
        publish(feed, "argon2-cffi", "CVE-2026-9999, memory-hard parameters silently downgraded")
        command = [PYTHON, "-m", "contextmesh", "--json", "recheck", "--session", str(session_dir), "--feed", str(feed)]
        done = await anyio.to_thread.run_sync(
            lambda: subprocess.run([*command, "--local"], capture_output=True, timeout=120, cwd=ROOT, check=False)
        )
        assert done.returncode == 0, done.stderr.decode()
        report = json.loads(done.stdout)
        assert [i["assumption_id"] for i in report["report"]["invalidations"]] == [HASHING]
        heard = await heard_by(notices, committed_at(session_dir, report["generation"]) + WITHIN)
        assert heard == [HASHING_URI]
        assert json.loads(await read(client, HASHING_URI))["assumption"]["status"] == "rejected"


@pytest.mark.integration
async def test_stdio_offers_subscriptions_in_both_eras_and_stateless_http_offers_none(
    session_dir: Path, feed: Path
) -> None:
    # Stateless JSON over HTTP has no stream a notice could ride, so it must not claim one.
    args = [str(LAUNCHER), "--session", str(session_dir), "--feed", str(feed)]
    params = StdioServerParameters(command=PYTHON, args=args, cwd=str(ROOT))
    for mode in MODES:
        async with Client(params, mode=mode, read_timeout_seconds=60) as client:
            resources = client.server_capabilities.resources
            assert resources is not None and resources.subscribe is True
    with ServerProcess(["--session", str(session_dir)], env={"CONTEXTMESH_DEMO_FEED": str(feed)}) as server:
        assert server.url is not None
        for mode in MODES:
            async with Client(server.url, mode=mode) as client:
                resources = client.server_capabilities.resources
                assert resources is not None and not resources.subscribe
                if mode == "legacy":
                    with pytest.raises(MCPError):
                        await subscribe_2025(client, SESSION_URI)


async def test_after_unsubscribing_a_commit_is_not_announced(session_dir: Path, feed: Path) -> None:
    served = served_session(session_dir, feed)
    async with subscribed(build_server(served), "legacy", [SESSION_URI, HASHING_URI]) as (client, notices):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.session.unsubscribe_resource(SESSION_URI)
        stored = await call(client, "mesh_submit_evidence", advisory(served))
        recheck = await call(client, "mesh_recheck")
        assert recheck["generation"] == stored["generation"] + 1
        assert await heard_by(notices, committed_at(session_dir, recheck["generation"]) + WITHIN) == [HASHING_URI]


async def test_a_generation_that_cannot_load_does_not_end_the_subscribers_connection(
    session_dir: Path, feed: Path
) -> None:
    # Another writer leaves a broken next manifest: the watch cannot read the session, says so in
    # the log, and keeps looking; the connection lives, and once the file is gone notices resume.
    served = served_session(session_dir, feed)
    async with subscribed(build_server(served), "legacy", [SESSION_URI]) as (client, notices):
        broken = session_dir / f"session-{served.session.generation + 1:06d}.json"
        broken.write_text("{not json")
        await anyio.sleep(0.6)  # two polls over the broken file
        assert notices.pending() == []
        broken.unlink()
        stored = await call(client, "mesh_submit_evidence", advisory(served))
        assert await heard_by(notices, committed_at(session_dir, stored["generation"]) + WITHIN) == [SESSION_URI]

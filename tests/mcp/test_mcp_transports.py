"""Real transports: a stdio subprocess, an HTTP server on loopback, bad input, concurrency, restarts."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import ADVISORY, LAUNCHER, PYTHON, QUESTIONS, ROOT, ServerProcess, dir_bytes, telemetry

from contextmesh.core.ids import slug
from contextmesh.demo.auth import DEFAULT_KEYS, PLAN_NAME, register_demo
from contextmesh.demo.saved import demo_registry
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.mcp.server import main
from contextmesh.session.session import Session

pytestmark = [pytest.mark.anyio, pytest.mark.integration]
BCRYPT = DEFAULT_KEYS["bcrypt"]


def env(feed: Path) -> dict[str, str]:
    return {"CONTEXTMESH_DEMO_FEED": str(feed)}


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(name, arguments or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def post(port: int, body: bytes, headers: dict[str, str] | None = None, method: str = "POST") -> tuple[int, bytes]:
    """One raw HTTP request to /mcp; (status, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        sent = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        connection.request(method, "/mcp", body=body, headers=sent)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def rpc(method: str, params: dict[str, Any] | None = None, ident: int = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


# -- stdio -----------------------------------------------------------------------------------------


async def test_a_stdio_subprocess_serves_tools_and_resources(session_dir: Path, feed: Path) -> None:
    params = StdioServerParameters(
        command=PYTHON, args=[str(LAUNCHER), "--session", str(session_dir), "--feed", str(feed)], cwd=str(ROOT)
    )
    async with Client(params, read_timeout_seconds=60) as client:
        tools = await client.list_tools()
        assert len(tools.tools) == 13 and tools.meta["notAnswering"] == []  # type: ignore[index]
        answer = await call(client, "mesh_ask", {"question": QUESTIONS[0]})
        assert answer["answered"]
        # read from generation 1; its telemetry lands in 2, after the reply (ADR 0028)
        assert answer["generation"] == 1 and answer["telemetry_generation"] == 2
        deadline = time.monotonic() + 30
        while True:
            session = json.loads((await client.read_resource("contextmesh://session")).contents[0].text)  # type: ignore[union-attr]
            if session["generation"] == 2 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        assert session["generation"] == 2 and session["checkpoints"]["pending"] == 0


def test_stdout_carries_protocol_only_and_bad_lines_do_not_stop_the_server(session_dir: Path, feed: Path) -> None:
    lines = [
        b"this is not json\n",
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
        b'"capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}\n',
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n',
        b"[1, 2, 3]\n",
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "mesh_teleport", "arguments": {}}}\n',
        b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "mesh_health", "arguments": {}}}\n',
    ]
    before = dir_bytes(session_dir)
    proc = subprocess.Popen(
        [PYTHON, str(LAUNCHER), "--session", str(session_dir), "--feed", str(feed)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(lines))
    proc.stdin.flush()
    replies = []
    while len(replies) < 3:  # every stdout line is one JSON-RPC message; EOF here would fail the test
        line = proc.stdout.readline()
        assert line, "the server closed stdout early"
        replies.append(json.loads(line))
    proc.stdin.close()  # EOF: a clean stop
    assert proc.stderr is not None
    code, rest, stderr = proc.wait(60), proc.stdout.read(), proc.stderr.read().decode()
    proc.stdout.close()
    proc.stderr.close()
    assert code == 0 and rest == b"", stderr
    by_id = {r["id"]: r for r in replies}
    assert sorted(by_id) == [1, 2, 3]
    assert by_id[2]["result"]["isError"] is True
    assert by_id[3]["result"]["structuredContent"]["status"] in {"ok", "warn", "error"}
    assert "contextmesh MCP:" in stderr and "checkpoint every-ask" in stderr
    assert dir_bytes(session_dir) == before


def test_a_signal_stops_a_stdio_server_cleanly_and_commits_pending_asks(session_dir: Path, feed: Path) -> None:
    start = Session.load(session_dir, registry=demo_registry(feed)).generation
    proc = subprocess.Popen(
        [PYTHON, str(LAUNCHER), "--session", str(session_dir), "--feed", str(feed), "--checkpoint", "on-exit"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    ask = {"name": "mesh_ask", "arguments": {"question": QUESTIONS[0]}}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    proc.stdin.write(
        rpc("initialize", hello, 1) + b"\n" + b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
    )
    proc.stdin.write(rpc("tools/call", ask, 7) + b"\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    reply = json.loads(proc.stdout.readline())
    assert reply["result"]["structuredContent"]["pending"] == 1
    proc.send_signal(signal.SIGTERM)  # stdin stays open: the server must not wait for it
    code = proc.wait(30)
    stderr = proc.stderr.read().decode()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
    assert code == 0, stderr
    assert f"checkpointed {session_dir} at generation {start + 1}" in stderr
    assert Session.load(session_dir, registry=demo_registry(feed)).generation == start + 1


def test_the_demo_banner_says_it_is_not_persistent() -> None:
    done = subprocess.run(
        [PYTHON, "-m", "contextmesh.mcp.server", "--demo", "--rounds", "1"],
        input=b"",
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == b""
    assert "not persistent" in done.stderr.decode()


# -- start-up refusals --------------------------------------------------------------------------------


def test_usage_errors_and_sessions_that_cannot_start_exit_2_before_any_transport(
    session_dir: Path, feed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([]) == 2
    assert main(["--demo", "--session", str(session_dir)]) == 2
    assert main(["--session", str(session_dir), "--rounds", "3"]) == 2
    assert main(["--demo", "--checkpoint", "never"]) == 2
    capsys.readouterr()
    assert main(["--session", str(session_dir), "--transport", "http", "--port", "0"]) == 2
    assert "deployments/serve_mcp.py" in capsys.readouterr().err
    partial = TaskRegistry()
    register_demo(partial, feed=feed, keys={"tokens": "auth.tokens.v9"})
    assert main(["--session", str(session_dir), "--transport", "http", "--port", "0"], registry=partial) == 2
    err = capsys.readouterr().err
    assert "auth.tokens.v1" in err and "listening" not in err
    stdout_before = os.fstat(1)
    assert main(["--session", str(session_dir / "nowhere")], registry=demo_registry(feed)) == 2
    after = os.fstat(1)
    assert (after.st_dev, after.st_ino) == (stdout_before.st_dev, stdout_before.st_ino)  # fd 1 is stdout again


def test_demo_save_writes_a_session_and_exits(tmp_path: Path, feed: Path) -> None:
    target = tmp_path / "saved"
    assert main(["--demo", "--rounds", "0", "--save", str(target), "--feed", str(feed)]) == 0
    session = Session.load(target, registry=demo_registry(feed))
    assert session.generation == 1 and session.runner is not None and session.runner.round == 1


# -- HTTP ---------------------------------------------------------------------------------------------


async def test_http_serves_json_over_post_only_on_loopback(session_dir: Path, feed: Path) -> None:
    with ServerProcess(["--session", str(session_dir)], env=env(feed)) as server:
        assert server.url == f"http://127.0.0.1:{server.port}/mcp"
        for mode in ("auto", "legacy"):
            async with Client(server.url, mode=mode) as client:
                tools = await client.list_tools()
                assert len(tools.tools) == 13 and tools.meta["notAnswering"] == []  # type: ignore[index]
                assert (await call(client, "mesh_ask", {"question": QUESTIONS[1]}))["question"] == QUESTIONS[1]
                assert (await client.read_resource("contextmesh://health")).contents
        status, body = post(server.port, rpc("tools/list"))
        assert status == 200 and json.loads(body)["result"]["_meta"] == {"notAnswering": []}
        assert post(server.port, b"", {"Accept": "text/event-stream"}, method="GET")[0] == 405
        assert post(server.port, b"", method="DELETE")[0] == 405
    assert server.stdout == b""  # HTTP mode writes nothing at all to stdout


async def test_bad_http_input_is_refused_and_the_server_keeps_serving_unchanged(session_dir: Path, feed: Path) -> None:
    with ServerProcess(["--session", str(session_dir)], env=env(feed)) as server:
        port = server.port
        before = dir_bytes(session_dir)
        status, body = post(port, b'{"jsonrpc": "2.0", "id": 1, "method": ')
        assert status == 400 and json.loads(body)["error"]["code"] == -32700
        status, body = post(port, b"\x00\xff garbage")
        assert status == 400
        status, body = post(port, rpc("tools/teleport"))
        assert json.loads(body)["error"]["code"] == -32601
        status, body = post(port, rpc("tools/call", {"name": "mesh_teleport", "arguments": {}}))
        assert status == 200 and json.loads(body)["result"]["isError"] is True
        status, body = post(port, rpc("tools/call", {"name": "mesh_ask", "arguments": {"question": ["a", "list"]}}))
        assert json.loads(body)["result"]["isError"] is True
        status, body = post(port, rpc("tools/call", {"name": "mesh_get_node", "arguments": {"node_id": 7}}))
        assert json.loads(body)["result"]["isError"] is True
        big = rpc("tools/call", {"name": "mesh_ask", "arguments": {"question": "x" * (2 * 1024 * 1024)}})
        assert post(port, big)[0] == 413
        assert post(port, rpc("tools/list"), {"Host": f"evil.example:{port}"})[0] == 421
        assert post(port, rpc("tools/list"), {"Origin": "http://evil.example"})[0] == 403
        assert post(port, rpc("tools/list"), {"Content-Type": "text/plain"})[0] == 400
        assert dir_bytes(session_dir) == before  # nothing above reached the session
        status, body = post(port, rpc("tools/call", {"name": "mesh_ask", "arguments": {"question": QUESTIONS[0]}}))
        assert status == 200 and json.loads(body)["result"]["structuredContent"]["answered"] is True
        assert server.proc.poll() is None


def _ask_many(port: int, count: int, worker: int, errors: list[str], paths: list[int]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        for index in range(count):
            question = QUESTIONS[(index + worker) % len(QUESTIONS)]
            body = rpc("tools/call", {"name": "mesh_ask", "arguments": {"question": question}}, index)
            connection.request(
                "POST", "/mcp", body=body, headers={"Content-Type": "application/json", "Accept": "application/json"}
            )
            response = connection.getresponse()
            payload = response.read()
            if response.status != 200:
                errors.append(f"HTTP {response.status}")
                continue
            result = json.loads(payload).get("result")
            if result is None or result.get("isError"):
                errors.append(payload.decode()[:200])
                continue
            walk = result["structuredContent"]
            paths.append(len(walk["path"]) if walk["answered"] else 0)
    finally:
        connection.close()


def _hammer(port: int, clients: int, asks: int) -> tuple[list[str], list[int]]:
    errors: list[str] = []
    paths: list[int] = []
    threads = [threading.Thread(target=_ask_many, args=(port, asks, w, errors, paths)) for w in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors, paths


def _session_resource(port: int) -> dict[str, Any]:
    status, body = post(port, rpc("resources/read", {"uri": "contextmesh://session"}))
    assert status == 200
    return json.loads(json.loads(body)["result"]["contents"][0]["text"])  # type: ignore[no-any-return]


@pytest.mark.slow
def test_eight_http_clients_asking_two_hundred_times_each_lose_nothing(session_dir: Path, feed: Path) -> None:
    start = Session.load(session_dir, registry=demo_registry(feed))
    walks_on_disk, _ = telemetry(start)
    with ServerProcess(["--session", str(session_dir), "--checkpoint", "on-exit"], env=env(feed)) as server:
        before = _session_resource(server.port)
        errors, paths = _hammer(server.port, 8, 200)
        after = _session_resource(server.port)
        assert errors == [] and len(paths) == 1600
        assert after["served"]["walks_in_process"] - before["served"]["walks_in_process"] == 1600
        assert after["served"]["node_walks"] - before["served"]["node_walks"] == sum(paths)
        assert after["checkpoints"]["pending"] == 1600 and after["generation"] == start.generation
    assert server.proc.returncode == 0
    assert any("checkpointed" in line for line in server.stderr)
    restored = Session.load(session_dir, registry=demo_registry(feed))
    assert restored.generation == start.generation + 1  # one commit, on the clean stop
    assert telemetry(restored)[0] == walks_on_disk + sum(paths)


def test_concurrent_asks_under_every_ask_are_all_committed_grouped_after_their_replies(
    session_dir: Path, feed: Path
) -> None:
    start = Session.load(session_dir, registry=demo_registry(feed))
    walks_on_disk, _ = telemetry(start)
    with ServerProcess(["--session", str(session_dir)], env=env(feed)) as server:
        errors, paths = _hammer(server.port, 8, 5)
        deadline = time.monotonic() + 30
        while (after := _session_resource(server.port))["checkpoints"]["pending"] and time.monotonic() < deadline:
            time.sleep(0.05)  # the last commit runs after the last reply
        on_disk = Session.load(session_dir, registry=demo_registry(feed))  # while the server still runs
    assert errors == [] and len(paths) == 40
    assert after["checkpoints"]["pending"] == 0 and after["checkpoints"]["conflicts"] == 0
    # every ask committed, several to a generation (one commit in flight, the rest grouped)
    assert start.generation < after["generation"] < start.generation + 40
    assert on_disk.generation == after["generation"]
    assert telemetry(on_disk)[0] == walks_on_disk + sum(paths)


# -- the whole path against a served deployment, then a restart --------------------------------------


async def test_the_full_write_path_over_http_then_a_restart_answers_identically(session_dir: Path, feed: Path) -> None:
    plan_source = slug(f"execution plan: {PLAN_NAME}", "source")
    with ServerProcess(["--session", str(session_dir)], env=env(feed)) as server:
        async with Client(server.url) as client:
            stored = await call(
                client,
                "mesh_submit_evidence",
                {
                    "text": ADVISORY,
                    "source_id": plan_source,
                    "metadata": {"kind": "advisory", "package": "argon2-cffi"},
                },
            )
            recheck = await call(client, "mesh_recheck")
            (invalidation,) = recheck["invalidations"]
            assert invalidation["evidence_id"] == stored["evidence_id"]  # the auditor cites the submission
            fallen = invalidation["assumption_id"]
            already = await call(client, "mesh_blast_radius", {"assumption_id": fallen})
            assert already["blast_radius"] == 0 and "already rejected" in already["note"]
            repair = await call(
                client,
                "mesh_repair",
                {"task": "hashing", "worker_key": BCRYPT, "assumes": "bcrypt has no open advisory"},
            )
            replacement = repair["assumption_id"]
            nothing = await call(client, "mesh_blast_radius", {"assumption_id": replacement})
            assert nothing["blast_radius"] == 0 and nothing["status"] == "active"
            resume = await call(client, "mesh_resume")
            assert resume["executed"] == ["hashing", "routes", "rate_limit"]
            assert resume["cached"] == ["schema", "tokens"]
            # The same process answers from the new generation, without a restart.
            session = json.loads((await client.read_resource("contextmesh://session")).contents[0].text)  # type: ignore[union-attr]
            assert session["plan"]["round"] == 3 and session["generation"] == resume["generation"]
            lineage = await call(client, "mesh_lineage", {"assumption_id": replacement})
            assert [(r["id"], r["status"]) for r in lineage["chain"]] == [(fallen, "rejected"), (replacement, "active")]
            decision_id = next(
                e["src"]
                for e in (await call(client, "mesh_get_node", {"node_id": replacement}))["in_edges"]
                if e["type"] == "depends_on"
            )
            assert decision_id == slug(f"{PLAN_NAME}|hashing|v2", "decision")
            node = await call(client, "mesh_get_node", {"node_id": decision_id})
            assert node["live"] and node["attrs"]["worker_key"] == BCRYPT
            follow_up = await call(
                client, "mesh_submit_evidence", {"text": "bcrypt 4.2 released", "source_id": plan_source}
            )
            assert follow_up["committed"] and follow_up["generation"] == resume["generation"] + 1
            answers = {
                "node": await call(client, "mesh_get_node", {"node_id": decision_id}),
                "lineage": lineage,
                "radius": await call(client, "mesh_blast_radius", {"assumption_id": replacement}),
                "health": await call(client, "mesh_health"),
            }
    with ServerProcess(["--session", str(session_dir)], env=env(feed)) as again:
        async with Client(again.url) as client:
            assert await call(client, "mesh_get_node", {"node_id": decision_id}) == answers["node"]
            assert await call(client, "mesh_lineage", {"assumption_id": replacement}) == answers["lineage"]
            assert await call(client, "mesh_blast_radius", {"assumption_id": replacement}) == answers["radius"]
            health = await call(client, "mesh_health")
    # The one thing a restart does not restore: the in-process walk list behind dead_ends.
    strip = lambda h: {**h, "signals": [s for s in h["signals"] if s["kind"] != "dead_ends"]}  # noqa: E731
    assert strip(health) == strip(answers["health"])


# -- the same figures as the CLI -------------------------------------------------------------------


def cli_ask(question: str, *session: str) -> dict[str, Any]:
    """``contextmesh ask QUESTION --json`` (on ``--session DIR`` when given) as a subprocess; its JSON."""
    command = [PYTHON, "-m", "contextmesh", "ask", question, "--json", *session]
    done = subprocess.run(command, capture_output=True, timeout=120, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)  # type: ignore[no-any-return]


WALK_FIGURES = ("answer", "hops", "tokens", "flat_tokens", "dead_end")


@pytest.mark.parametrize("served", ["session", "demo"])
async def test_a_walk_over_mcp_reports_the_figures_the_cli_does(
    served: str, session_dir: Path, feed: Path, tmp_path: Path
) -> None:
    # The CLI and the server walk copies of one session (or each its own --demo build): the same
    # question must give the same answer, path size, path tokens and flat top-k tokens.
    question = QUESTIONS[0]
    if served == "session":
        cli_dir = tmp_path / "cli-session"
        shutil.copytree(session_dir, cli_dir)
        expected = cli_ask(question, "--session", str(cli_dir), "--feed", str(feed))
        args = [str(LAUNCHER), "--session", str(session_dir), "--feed", str(feed)]
    else:
        expected = cli_ask(question)
        args = [str(LAUNCHER), "--demo"]
    assert expected["flat_tokens"] > 0
    params = StdioServerParameters(command=PYTHON, args=args, cwd=str(ROOT))
    async with Client(params, read_timeout_seconds=60) as client:
        answer = await call(client, "mesh_ask", {"question": question})
    assert {k: answer[k] for k in WALK_FIGURES} == {k: expected[k] for k in WALK_FIGURES}

"""Slow HTTP clients cannot lock the others out (issue 15, item 4).

A client that sends half a request and stalls used to hold one of uvicorn's ``limit_concurrency``
slots for good: eighty of them answered every honest client 503. Now each whole request is due
within ``--read-timeout`` seconds (408 past it) and one client address holds at most 64
connections, a newcomer evicting the oldest unfinished one (503) — never a running request.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from mcp import Client
from mcp_helpers import QUESTIONS, ServerProcess, wait_until
from slow_clients import BODY_CUT, HEADERS_CUT, SlowClients, response, status_of

from contextmesh.mcp.connections import DEFAULT_LIMITS

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def env(feed: Path) -> dict[str, str]:
    return {"CONTEXTMESH_DEMO_FEED": str(feed)}


def ask_bytes(port: int, question: str) -> bytes:
    body = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "mesh_ask", '
        b'"arguments": {"question": "' + question.encode() + b'"}}}'
    )
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def read_reply(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (or 30 s pass)."""
    sock.settimeout(30)
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except (TimeoutError, ConnectionResetError):
        pass
    return b"".join(chunks)


async def test_eighty_half_sent_requests_do_not_lock_out_a_hundred_honest_asks(session_dir: Path, feed: Path) -> None:
    with ServerProcess(["--session", str(session_dir), "--checkpoint", "on-exit"], env=env(feed)) as server:
        assert server.url is not None
        with SlowClients(server.port, 80) as slow:
            answers, attacking = [], []
            async with Client(server.url) as client:
                for index in range(100):
                    question = QUESTIONS[index % len(QUESTIONS)]
                    result = await client.call_tool("mesh_ask", {"question": question})
                    assert not result.is_error, result.content
                    assert result.structured_content is not None
                    walk = result.structured_content
                    answers.append((walk["question"], walk["answered"] or walk["dead_end"] is not None))
                    attacking.append(slow.open_now)
        assert answers == [(QUESTIONS[i % len(QUESTIONS)], True) for i in range(100)]
        # The attack never lapsed: after every honest answer, dozens of half-sent requests were open.
        assert min(attacking) >= DEFAULT_LIMITS.per_client // 2, attacking
        # The per-client cap made room by cutting the attacker's oldest unfinished requests, with 503.
        assert slow.cut_off["503"] >= 80 - DEFAULT_LIMITS.per_client
        assert set(slow.cut_off) <= {"503", "408"}
    assert server.proc.returncode == 0


def test_a_request_that_does_not_arrive_in_time_is_cut_off_with_408(session_dir: Path, feed: Path) -> None:
    args = ["--session", str(session_dir), "--checkpoint", "never", "--read-timeout", "1"]
    with ServerProcess(args, env=env(feed)) as server:
        port = server.port
        silent = socket.create_connection(("127.0.0.1", port))
        cut_headers = socket.create_connection(("127.0.0.1", port))
        cut_headers.sendall(HEADERS_CUT.replace(b"{port}", str(port).encode()))
        cut_body = socket.create_connection(("127.0.0.1", port))
        cut_body.sendall(BODY_CUT.replace(b"{port}", str(port).encode()))
        trickle = socket.create_connection(("127.0.0.1", port))
        request = ask_bytes(port, QUESTIONS[0])
        sent = 0
        trickle.settimeout(0.2)
        reply = b""
        for byte in request:  # one byte every 0.2 s: the deadline is for the whole request, not per read
            try:
                trickle.sendall(bytes([byte]))
                sent += 1
                reply = trickle.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
            if reply:
                break
        reply += read_reply(trickle)
        assert status_of(reply) == "408" and sent < len(request), (sent, reply[:80])
        for sock in (silent, cut_headers, cut_body):
            assert status_of(read_reply(sock)) == "408"
            sock.close()
        trickle.close()
        # A client that sends its request whole is answered, and kept alive past the deadline.
        honest = socket.create_connection(("127.0.0.1", port))
        for question in QUESTIONS[1:3]:
            honest.sendall(ask_bytes(port, question))
            status, body = response(honest)
            assert status == 200 and json.loads(body)["result"]["structuredContent"]["question"] == question
            time.sleep(0.3)  # idle between requests, within the deadline: the connection is kept
        honest.close()
        assert server.proc.poll() is None


def test_the_oldest_unfinished_connection_makes_room_for_a_new_one(session_dir: Path, feed: Path) -> None:
    cap = DEFAULT_LIMITS.per_client
    with ServerProcess(["--session", str(session_dir), "--checkpoint", "never"], env=env(feed)) as server:
        port = server.port
        slow = []
        for _ in range(cap + 6):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(HEADERS_CUT.replace(b"{port}", str(port).encode()))
            slow.append(sock)
            time.sleep(0.005)  # arrival order is the eviction order
        for sock in slow[:6]:
            reply = read_reply(sock)
            assert status_of(reply) == "503" and b"too many connections" in reply
        for sock in slow[6:]:
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):  # still open, nothing sent: the younger ones are kept
                sock.recv(1)
        honest = socket.create_connection(("127.0.0.1", port))
        honest.sendall(ask_bytes(port, QUESTIONS[3]))
        assert response(honest)[0] == 200
        honest.close()
        # The newcomer's room came from the oldest of the remaining slow connections.
        slow[6].setblocking(True)
        assert status_of(read_reply(slow[6])) == "503"
        assert wait_until(lambda: server.proc.poll() is None)
        for sock in slow:
            sock.close()


def test_a_long_kept_alive_connection_is_not_taken_for_a_slow_one(session_dir: Path, feed: Path) -> None:
    cap = DEFAULT_LIMITS.per_client
    with ServerProcess(["--session", str(session_dir), "--checkpoint", "never"], env=env(feed)) as server:
        port = server.port
        honest = socket.create_connection(("127.0.0.1", port))  # the oldest connection of all
        honest.sendall(ask_bytes(port, QUESTIONS[0]))
        assert response(honest)[0] == 200
        slow = []
        for _ in range(cap - 1):  # fill the address's cap: the honest connection is idle, the rest reading
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(HEADERS_CUT.replace(b"{port}", str(port).encode()))
            slow.append(sock)
        time.sleep(0.2)
        request = ask_bytes(port, QUESTIONS[1])
        honest.sendall(request[:40])  # its next request has begun, after every slow one began
        time.sleep(0.2)
        newcomer = socket.create_connection(("127.0.0.1", port))  # past the cap: someone must make room
        newcomer.sendall(HEADERS_CUT.replace(b"{port}", str(port).encode()))
        assert status_of(read_reply(slow[0])) == "503"  # the request that has been reading longest
        honest.sendall(request[40:])
        status, body = response(honest)
        assert status == 200 and json.loads(body)["result"]["structuredContent"]["question"] == QUESTIONS[1]
        for sock in (honest, newcomer, *slow):
            sock.close()

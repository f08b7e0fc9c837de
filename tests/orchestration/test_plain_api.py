"""The CLI's plain-HTTP calls to Prefect's API (plain_api): retries a busy server as Prefect's client does,
and refuses the rest by name.

A real HTTP server on loopback (the standard library's) stands in for a Prefect API that is busy:
it answers ``503`` with ``Retry-After: 0`` a given number of times before it answers. Prefect's own
server does that when its SQLite database is locked under load (seen in test_serve_e2e, issue 20).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from contextmesh.core.errors import ExecutionError
from contextmesh.orchestration.plain_api import MAX_RETRIES, QUICK_RETRIES, PlainApi, backoff


class _Busy(ThreadingHTTPServer):
    def __init__(self, busy: int, status: int) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.busy, self.status, self.seen, self.drops = busy, status, 0, 0
        self.retry_after: str | None = "0"
        self.headers_seen: list[dict[str, str]] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Busy

    def do_GET(self) -> None:
        self.server.seen += 1
        self.server.headers_seen.append(dict(self.headers))
        if self.server.seen <= self.server.drops:  # the connection reset before any reply
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if self.server.seen <= self.server.busy:
            after = self.server.retry_after
            self._reply(503, {"exception_message": "Service Unavailable"}, {"Retry-After": after} if after else {})
        else:
            self._reply(self.server.status, {"id": "run-1", "state": {"type": "COMPLETED", "name": "Completed"}})

    def _reply(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def serve_busy() -> Iterator[Any]:
    made: list[_Busy] = []

    def start(busy: int, status: int = 200) -> tuple[_Busy, str]:
        server = _Busy(busy, status)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        made.append(server)
        return server, f"http://127.0.0.1:{server.server_address[1]}/api"

    yield start
    for server in made:
        server.shutdown()
        server.server_close()


def test_a_busy_server_is_asked_again_until_it_answers(serve_busy: Any) -> None:
    server, api = serve_busy(busy=2)
    with PlainApi(api, environ={"PREFECT_API_KEY": "pnu_key"}) as plain:
        assert plain.flow_run("run-1")["state"]["type"] == "COMPLETED"
    assert server.seen == 3
    assert {h.get("Authorization") for h in server.headers_seen} == {"Bearer pnu_key"}


def test_a_connection_reset_before_the_reply_is_asked_again_as_prefects_client_does(serve_busy: Any) -> None:
    # Seen at load 18: the local server reset a connection mid-request, and the slot's release failed
    # with httpx.ReadError where Prefect's own client would have sent it again (a reset before any reply
    # reads as RemoteProtocolError; both are a dropped connection).
    server, api = serve_busy(busy=0)
    server.drops = 2
    with PlainApi(api, environ={}) as plain:
        assert plain.flow_run("run-1")["state"]["type"] == "COMPLETED"
    assert server.seen == 3


def test_a_server_busy_past_the_retries_is_refused_naming_the_call_and_the_answer(serve_busy: Any) -> None:
    server, api = serve_busy(busy=MAX_RETRIES + 1)
    with PlainApi(api, environ={}) as plain, pytest.raises(ExecutionError, match=r"GET /flow_runs/run-1 with 503"):
        plain.flow_run("run-1")
    assert server.seen == MAX_RETRIES + 1


def test_a_refused_key_and_a_missing_run_are_said_by_name(serve_busy: Any) -> None:
    _, api = serve_busy(busy=0, status=401)
    with PlainApi(api, environ={}) as plain, pytest.raises(ExecutionError, match=r"refused GET .*PREFECT_API_KEY"):
        plain.flow_run("run-1")
    _, api = serve_busy(busy=0, status=404)
    with PlainApi(api, environ={}) as plain, pytest.raises(ExecutionError, match=r"no flow run run-1 on"):
        plain.flow_run("run-1")


def test_a_busy_answer_is_asked_again_soon_first_then_on_prefects_schedule() -> None:
    # SQLite's write conflict behind most 503s of the local server is gone a moment later (ADR 0032):
    # quick tries, then Prefect's 2, 4, 8, 16, 16 s with jitter; a Retry-After always wins.
    quick = [backoff(attempt) for attempt in range(len(QUICK_RETRIES))]
    assert quick == [0.05, 0.1, 0.15, 0.2, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25]
    slow = [backoff(attempt) for attempt in range(len(QUICK_RETRIES), MAX_RETRIES)]
    assert all(b <= s <= b * 1.2 for s, b in zip(slow, (2, 4, 8, 16, 16), strict=True))
    assert backoff(0, "3") == 3.0
    assert backoff(4, "0") == 0.0


def test_the_api_of_this_process_is_the_one_its_prefect_settings_name(serve_busy: Any) -> None:
    import prefect.settings as ps

    server, api = serve_busy(busy=0)
    updates = {ps.PREFECT_API_URL: api, ps.PREFECT_API_KEY: "pnu_flow"}
    with ps.temporary_settings(updates=updates), PlainApi.of_this_process() as plain:
        assert plain.flow_run("run-1")["id"] == "run-1"
    assert server.headers_seen[-1].get("Authorization") == "Bearer pnu_flow"


def test_a_server_busy_for_two_seconds_is_ridden_out_without_a_two_second_sleep(
    serve_busy: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ADR 0037: after a round's burst the local server refused the slot holder's record delete three
    # times in a row in most resumes of the 1,000-task plan, and the third refusal cost Prefect's 2 s
    # step. Busy answers without Retry-After, for about two seconds of quick tries: no sleep of a
    # second or more before the answer.
    from contextmesh.orchestration import plain_api

    slept: list[float] = []
    monkeypatch.setattr(plain_api.time, "sleep", slept.append)
    server, api = serve_busy(busy=len(QUICK_RETRIES))
    server.retry_after = None
    with PlainApi(api, environ={}) as plain:
        assert plain.flow_run("run-1")["state"]["type"] == "COMPLETED"
    assert server.seen == len(QUICK_RETRIES) + 1
    assert max(slept) < 1.0, slept
    assert sum(slept) >= 2.0, "the quick tries span the two seconds the server was seen busy"

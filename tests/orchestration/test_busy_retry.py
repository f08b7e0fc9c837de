"""A Prefect client request the server answers "busy" (503) goes again soon and keeps Prefect's patience.

A real HTTP server on a loopback port stands in for a SQLite Prefect server in the middle of
digesting a burst: it answers 503 to the first ``busy`` requests of a ``DELETE /variables/name/…``
(what the writer slot's release sends) and 204 after that. Prefect's own client counts every such
answer against ``PREFECT_CLIENT_MAX_RETRIES`` and sleeps ``2 ** attempt`` seconds between them; the
busy client retries on short pauses that Prefect does not count, then falls back to Prefect's
back-off.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from prefect.client.orchestration import get_client
from prefect.settings import PREFECT_API_URL, PREFECT_CLIENT_MAX_RETRIES, temporary_settings

from contextmesh.orchestration.busy_retry import BUSY_PAUSES, QUICK_BUDGET_SECONDS, busy_client, shorten_busy_wait


class _Busy(ThreadingHTTPServer):
    """Answers 503 to the first ``busy`` DELETEs, then 204; records the ``Retry-After`` it was not sent."""

    def __init__(self, busy: int) -> None:
        self.busy = busy
        self.seen: list[str] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Busy

    def do_DELETE(self) -> None:
        self.server.seen.append(self.path)
        status = 503 if len(self.server.seen) <= self.server.busy else 204
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # the client's CSRF probe, answered as by a server without CSRF
        body = b'{"detail": "CSRF protection is disabled."}'
        self.send_response(422)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return


@pytest.fixture
def busy_api() -> Iterator[_Busy]:
    server = _Busy(busy=8)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/api"
    # One retry only: Prefect's client gives up after the second busy answer, the busy client must not.
    with temporary_settings(updates={PREFECT_API_URL: url, PREFECT_CLIENT_MAX_RETRIES: 1}):
        yield server
    server.shutdown()
    server.server_close()


def test_busy_answers_beyond_prefects_retries_are_retried_until_the_request_goes_through(busy_api: _Busy) -> None:
    with busy_client() as client:
        client.delete_variable_by_name("contextmesh-slot-x")
    assert busy_api.seen == ["/api/variables/name/contextmesh-slot-x"] * 9  # 8 busy answers, then 204


def test_prefects_own_client_gives_up_on_the_same_server(busy_api: _Busy) -> None:
    """The contrast: without the hook the second busy answer is final (after a 2 s back-off)."""
    with get_client(sync_client=True) as client, pytest.raises(httpx.HTTPStatusError, match="503"):
        client.delete_variable_by_name("contextmesh-slot-x")
    assert len(busy_api.seen) == 2


def _answer(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=httpx.Request("DELETE", "http://127.0.0.1/api/x"))


def test_the_hook_pauses_briefly_then_leaves_prefects_back_off_alone() -> None:
    response = _answer(503)
    pauses = []
    while True:
        response.headers.pop("Retry-After", None)
        response.headers.pop("Prefect-Maintenance", None)
        shorten_busy_wait(response)
        if "Retry-After" not in response.headers:
            break
        assert response.headers["Prefect-Maintenance"] == "true"
        pauses.append(float(response.headers["Retry-After"]))
    assert pauses[: len(BUSY_PAUSES)] == list(BUSY_PAUSES)
    assert set(pauses[len(BUSY_PAUSES) :]) == {BUSY_PAUSES[-1]}
    assert QUICK_BUDGET_SECONDS - BUSY_PAUSES[-1] < sum(pauses) <= QUICK_BUDGET_SECONDS


@pytest.mark.parametrize(("status", "headers"), [(200, None), (500, None), (503, {"Retry-After": "7"})])
def test_the_hook_leaves_other_answers_as_they_are(status: int, headers: dict[str, str] | None) -> None:
    response = _answer(status, headers)
    before = dict(response.headers)
    shorten_busy_wait(response)
    assert dict(response.headers) == before

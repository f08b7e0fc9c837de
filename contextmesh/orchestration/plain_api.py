"""The few Prefect REST calls a dispatched write makes, over plain HTTP: no ``import prefect`` in the CLI.

``contextmesh repair`` and ``contextmesh resume`` on a served session only create a flow run of a
deployment, wait for it and read the report it published (ADR 0008). Importing Prefect's client
for that cost about 7 s of wall time per command on a loaded 2-core machine (issue 20; 1.2 s of
CPU), paid twice through repair and resume. These calls are the same requests Prefect's client
sends — ``POST /deployments/{id}/create_flow_run`` with the idempotency key ADR 0006's resume uses,
``GET /flow_runs/{id}``, ``POST /artifacts/filter`` — made with ``httpx`` (Prefect's own HTTP
client, installed with it).

The address and credentials come from the served record and the environment:
``PREFECT_API_KEY`` (sent as a bearer token) or ``PREFECT_API_AUTH_STRING`` (HTTP basic), as
Prefect's client sends them. Credentials kept only in a Prefect profile are not read here; with
``CONTEXTMESH_DISPATCH=prefect`` the writes go through Prefect's client instead (which reads
profiles), the path before this module.
"""

from __future__ import annotations

import base64
import os
import random
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from contextmesh.core.errors import ExecutionError

__all__ = ["DISPATCH_SETTING", "MAX_RETRIES", "QUICK_RETRIES", "PlainApi", "backoff", "dispatch_over_http"]

DISPATCH_SETTING = "CONTEXTMESH_DISPATCH"
# A busy server (its SQLite locked, a proxy restarting) answers 429/502/503 or drops the connection.
# Prefect's client sends the request again after 2, 4, 8, 16, 16 s. Most 503s of the local SQLite
# server are a write refused because another write committed since the request's transaction read
# ("database is locked" on a stale snapshot, ADR 0032): a new request a moment later meets no
# conflict. So quick tries come first, then Prefect's schedule for a server that is really down; a
# Retry-After the server sends is always honoured. The quick tries span two seconds (ADR 0037): right
# after a round's burst the server digests its events for a second or two, and the slot holder's
# record delete met three 503s in a row there in most resumes of the 1,000-task plan, then slept
# Prefect's first 2 s step with the server long free again.
RETRY_CODES = frozenset({429, 502, 503})
# A connection the server (or a proxy) dropped mid-request: Prefect's client sends such a request
# again too (ReadError is a reset while reading, RemoteProtocolError uvicorn closing a kept-alive
# connection). A timeout is not among them: no request here is cut short by one (see slots.py).
_DROPPED_NAMES = ("ReadError", "WriteError", "RemoteProtocolError", "LocalProtocolError")
QUICK_RETRIES = (0.05, 0.1, 0.15, 0.2, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25)
MAX_RETRIES = len(QUICK_RETRIES) + 5


def dispatch_over_http(environ: Mapping[str, str] | None = None) -> bool:
    """Whether dispatched writes use plain HTTP (``CONTEXTMESH_DISPATCH``: ``http``, the default, or ``prefect``)."""
    text = (environ if environ is not None else os.environ).get(DISPATCH_SETTING, "http")
    if text not in ("http", "prefect"):
        raise ExecutionError(
            f"{DISPATCH_SETTING}={text!r}: the rule is http (plain HTTP, no Prefect import) or prefect (its client)"
        )
    return text == "http"


def _auth_headers(environ: Mapping[str, str]) -> dict[str, str]:
    if key := environ.get("PREFECT_API_KEY"):
        return {"Authorization": f"Bearer {key}"}
    if auth := environ.get("PREFECT_API_AUTH_STRING"):
        return {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()}
    return {}


def backoff(attempt: int, retry_after: str | None = None) -> float:
    """Seconds before try ``attempt + 1``: the server's ``Retry-After`` (in seconds), else the quick
    tries (0.05 s rising to 0.25 s, two seconds in all), then 2, 4, 8, 16, 16 with jitter."""
    if retry_after is not None:
        try:
            return min(max(float(retry_after), 0.0), 60.0)
        except ValueError:
            pass  # an HTTP date: back off as if none was given
    if attempt < len(QUICK_RETRIES):
        return QUICK_RETRIES[attempt]
    slow = attempt - len(QUICK_RETRIES)
    return float(min(2 ** (slow + 1), 16)) * random.uniform(1.0, 1.2)  # noqa: S311 - jitter, not secrecy


# One HTTP client per API (and credentials) for the flow runs of a process (PlainApi.of_this_process):
# each new client builds a TLS context from the CA bundle, 20-70 ms of CPU here, and opens new
# connections; httpx's client is safe to share between threads.
_SHARED: dict[tuple[str, tuple[tuple[str, str], ...], float], Any] = {}
_SHARED_LOCK = threading.Lock()


class PlainApi:
    """A Prefect API at ``api_url`` (``…/api``), spoken to with ``httpx`` alone."""

    def __init__(
        self, api_url: str, *, timeout: float = 30.0, environ: Mapping[str, str] | None = None, http: Any = None
    ) -> None:
        import httpx  # noqa: PLC0415 - installed with the orchestration extra, only when dispatching

        self.api_url = api_url.rstrip("/")
        self._shared = http is not None
        headers = _auth_headers(environ if environ is not None else os.environ)
        self._http = http or httpx.Client(base_url=self.api_url, headers=headers, timeout=timeout)

    @classmethod
    def of_this_process(cls) -> PlainApi:
        """The API this process's Prefect settings name, with their credentials and request timeout
        (``PREFECT_API_REQUEST_TIMEOUT``), as Prefect's client would use them (inside a flow run)."""
        from prefect.settings import get_current_settings  # noqa: PLC0415 - only where Prefect runs

        api = get_current_settings().api
        if not api.url:
            raise ExecutionError("PREFECT_API_URL is not set: no Prefect API to call")
        environ = {}
        if api.key is not None:
            environ["PREFECT_API_KEY"] = api.key.get_secret_value()
        elif api.auth_string is not None:
            environ["PREFECT_API_AUTH_STRING"] = api.auth_string.get_secret_value()
        key = (api.url, tuple(sorted(environ.items())), api.request_timeout)
        with _SHARED_LOCK:
            http = _SHARED.get(key)
            if http is None:
                import httpx  # noqa: PLC0415

                http = httpx.Client(base_url=api.url.rstrip("/"), headers=_auth_headers(environ), timeout=key[2])
                _SHARED[key] = http
        return cls(api.url, http=http)

    def __enter__(self) -> PlainApi:
        return self

    def __exit__(self, *_: object) -> None:
        if not self._shared:  # a process's shared client stays open for its next call
            self._http.close()

    def send(self, method: str, path: str, **request: Any) -> Any:
        """One request, sent again while the server is busy (see :func:`backoff`); the ``httpx`` reply."""
        import httpx  # noqa: PLC0415

        dropped = tuple(getattr(httpx, name) for name in _DROPPED_NAMES)
        for attempt in range(MAX_RETRIES + 1):
            try:
                reply = self._http.request(method, path, **request)
            except (httpx.ConnectError, *dropped):
                if attempt == MAX_RETRIES:
                    raise
                time.sleep(backoff(attempt))
                continue
            if reply.status_code not in RETRY_CODES or attempt == MAX_RETRIES:
                return reply
            time.sleep(backoff(attempt, reply.headers.get("Retry-After")))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _answer(self, method: str, path: str, **request: Any) -> Any:
        reply = self.send(method, path, **request)
        if reply.status_code in (401, 403):
            raise ExecutionError(
                f"the Prefect API at {self.api_url} refused {method} {path} ({reply.status_code}): set PREFECT_API_KEY "
                f"or PREFECT_API_AUTH_STRING, or {DISPATCH_SETTING}=prefect to use Prefect's client and its profile"
            )
        if reply.status_code == 404:
            return None
        if reply.status_code >= 400:
            raise ExecutionError(
                f"the Prefect API at {self.api_url} answered {method} {path} with {reply.status_code}: "
                f"{reply.text[:300]}"
            )
        return reply.json()

    def deployment_id(self, name: str) -> str:
        """The id of deployment ``<flow>/<deployment>``; refused, naming it, when there is none."""
        flow, _, deployment = name.partition("/")
        found = self._answer("GET", f"/deployments/name/{quote(flow, safe='')}/{quote(deployment, safe='')}")
        if not isinstance(found, dict) or "id" not in found:
            raise ExecutionError(f"no deployment {name!r} on {self.api_url}: is the session still served?")
        return str(found["id"])

    def create_run(
        self,
        deployment: str,
        parameters: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        tags: Sequence[str] = (),
    ) -> dict[str, Any]:
        """A flow run of ``deployment`` due now (its default parameters under ``parameters``), as
        ``run_deployment(timeout=0)`` makes it; under a key Prefect has seen, the run it made then."""
        deployment_id = self.deployment_id(deployment)
        return self.create_run_of(deployment_id, parameters, idempotency_key=idempotency_key, tags=tags)

    def create_run_of(
        self,
        deployment_id: str,
        parameters: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        tags: Sequence[str] = (),
    ) -> dict[str, Any]:
        """:meth:`create_run` for the deployment with this id (no lookup by name)."""
        body: dict[str, Any] = {"parameters": dict(parameters), "tags": list(tags)}
        if idempotency_key is not None:
            body["idempotency_key"] = idempotency_key
        made = self._answer("POST", f"/deployments/{deployment_id}/create_flow_run", json=body)
        if not isinstance(made, dict):
            raise ExecutionError(f"the Prefect API at {self.api_url} made no flow run of deployment {deployment_id}")
        return made

    def flow_run(self, flow_run_id: str) -> dict[str, Any]:
        """The flow run as the API has it now."""
        found = self._answer("GET", f"/flow_runs/{flow_run_id}")
        if not isinstance(found, dict):
            raise ExecutionError(f"no flow run {flow_run_id} on {self.api_url}")
        return found

    def newest_artifact_data(self, flow_run_id: str, artifact_type: str) -> Any:
        """The data of the newest artifact of ``artifact_type`` the flow run published, else None."""
        body = {
            "artifacts": {"flow_run_id": {"any_": [flow_run_id]}, "type": {"any_": [artifact_type]}},
            "sort": "CREATED_DESC",
            "limit": 1,
        }
        found = self._answer("POST", "/artifacts/filter", json=body)
        return found[0].get("data") if found else None

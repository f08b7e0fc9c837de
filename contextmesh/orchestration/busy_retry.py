"""A Prefect client whose requests, when the SQLite server answers "busy", go again within milliseconds.

Prefect's SQLite server runs most writes in a deferred transaction that reads first and then
writes (deleting a variable by name reads the variable, emits an event, then deletes it). When
another writer commits in between — the server's event persister and task-run recorder commit
continually while they digest a round's task runs — SQLite refuses the upgrade at once
(``SQLITE_BUSY``, a stale snapshot; no busy wait helps) and the server answers **503**. Prefect
3.9's client then sleeps ``2 ** attempt`` seconds before it sends the request again: **2 s, then
4 s**. Profiled on InvalidationBench and on the 1,000-task resume (ADR 0033), the writer slot's
release — the ``DELETE`` of its holder record right after a round's burst of task runs — met that
refusal in most runs under load, and the 2-6 s it slept were most of the "(b) tracked" and
undeclared-auditor reruns' wall time.

:func:`busy_client` is ``get_client(sync_client=True)`` with a response hook (httpx's public
``event_hooks``, passed through Prefect's ``httpx_settings``). A 503 without a ``Retry-After`` of
its own is answered, for the first :data:`QUICK_BUDGET_SECONDS` of waiting, the way Prefect's
client treats server maintenance: ``Prefect-Maintenance: true`` with a short ``Retry-After`` from
:data:`BUSY_PAUSES` (the last one repeated), which Prefect's retry loop sleeps and which does not
count against its retries. After the budget the hook stays out of the way and Prefect's own
back-off follows, so a server that stays unavailable is waited for longer than before, never
shorter. A 503 means the transaction rolled back, so sending the request again is what Prefect
does anyway; only the first pauses are shorter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
from prefect.client.orchestration import get_client

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient

__all__ = ["BUSY_PAUSES", "QUICK_BUDGET_SECONDS", "busy_client", "shorten_busy_wait"]

BUSY_PAUSES = (0.02, 0.05, 0.1, 0.2, 0.25)  # seconds before each retry of a busy answer; the last repeats
QUICK_BUDGET_SECONDS = 10.0  # how long one request is retried on short pauses before Prefect's back-off
_WAITED = "contextmesh.busy_waited"  # (retries, seconds paused) so far for this request (request.extensions)


def shorten_busy_wait(response: httpx.Response) -> None:
    """httpx response hook: a busy 503 is retried after a short pause while the quick budget lasts."""
    if response.status_code != httpx.codes.SERVICE_UNAVAILABLE or "retry-after" in response.headers:
        return
    extensions = response.request.extensions
    retries, waited = extensions.get(_WAITED, (0, 0.0))
    pause = BUSY_PAUSES[min(retries, len(BUSY_PAUSES) - 1)]
    if waited + pause > QUICK_BUDGET_SECONDS:
        return  # Prefect's own back-off from here on
    extensions[_WAITED] = (retries + 1, waited + pause)
    response.headers["Retry-After"] = f"{pause:g}"
    response.headers["Prefect-Maintenance"] = "true"  # Prefect sleeps it and does not count the retry


def busy_client() -> SyncPrefectClient:
    """A synchronous Prefect client (use it as a context manager) whose busy answers are retried soon."""
    return get_client(sync_client=True, httpx_settings={"event_hooks": {"response": [shorten_busy_wait]}})

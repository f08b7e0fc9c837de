"""The one-slot Prefect global concurrency limits a session's flow runs take: its writer slot, its recheck slot.

* ``contextmesh-session-<session id>``: every flow run that mutates the session holds it from before
  it loads the session until after its commit, so two writers never overlap (waiting for it).
* ``contextmesh-recheck-<session id>``: a recheck holds it for its whole run (ADR 0016). A run the
  scheduler made (``auto_scheduled``) that the runner started early waits until it is due, then
  tries the slot once: if another recheck still holds it, this run is skipped — not cancelled, and
  never because of the runner's early fetch. A recheck somebody asked for waits for the slot: the
  evidence they just submitted must be audited.

Both slots are leases renewed while the holder runs. A holder killed outright cannot release
one: the server frees it when the lease expires, so the lease bounds how long the next writer or
recheck of the session waits after a crash. Prefect's default is 300 s; 60 s is the shortest the
API accepts.
"""

from __future__ import annotations

import contextlib
import datetime
import time
from collections.abc import Iterator

import httpx
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.concurrency.asyncio import ConcurrencySlotAcquisitionError
from prefect.concurrency.sync import concurrency
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

__all__ = [
    "EARLY_START_WAIT_LIMIT",
    "SLOT_LEASE_SECONDS",
    "ensure_limit",
    "limit_name",
    "recheck_limit_name",
    "recheck_turn",
    "session_slot",
]

SLOT_LEASE_SECONDS = 60.0
# Prefect's runner fetches scheduled runs 10 s ahead (prefetch_seconds); a run started earlier than
# this before its due time is not waited for (its clock, or a custom runner, is not what we expect).
EARLY_START_WAIT_LIMIT = 15.0


def limit_name(session_id: str) -> str:
    """The Prefect global concurrency limit that serialises a session's writers."""
    return f"contextmesh-session-{session_id}"


def recheck_limit_name(session_id: str) -> str:
    """The Prefect global concurrency limit a session's recheck holds while it runs."""
    return f"contextmesh-recheck-{session_id}"


def ensure_limit(name: str) -> None:
    """Create the global concurrency limit ``name`` (one slot) unless it exists."""
    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            with contextlib.suppress(ObjectAlreadyExists):
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))


@contextlib.contextmanager
def session_slot(session_id: str) -> Iterator[None]:
    """Hold the session's one writer slot for the block (waits while another flow run holds it)."""
    name = limit_name(session_id)
    ensure_limit(name)
    with concurrency(name, occupy=1, strict=True, lease_duration=SLOT_LEASE_SECONDS):
        yield


def _locked(exc: ConcurrencySlotAcquisitionError) -> bool:
    """True when the acquisition was refused because the slot is held (HTTP 423), not for another error."""
    cause = exc.__cause__
    return isinstance(cause, httpx.HTTPStatusError) and cause.response.status_code == httpx.codes.LOCKED


def _wait_until(due: datetime.datetime | None) -> float:
    """Sleep until ``due`` when it is at most :data:`EARLY_START_WAIT_LIMIT` ahead; the seconds slept."""
    if due is None:
        return 0.0
    ahead = (due - datetime.datetime.now(datetime.UTC)).total_seconds()
    if not 0 < ahead <= EARLY_START_WAIT_LIMIT:
        return 0.0
    time.sleep(ahead)
    return ahead


@contextlib.contextmanager
def recheck_turn(session_id: str, *, scheduled: bool, due: datetime.datetime | None) -> Iterator[bool]:
    """Hold the session's recheck slot for the block and yield True, or yield False: skip this recheck.

    Only a ``scheduled`` run is skipped, and only when another recheck holds the slot at ``due``.
    """
    name = recheck_limit_name(session_id)
    ensure_limit(name)
    if scheduled:
        _wait_until(due)
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(
                concurrency(
                    name,
                    occupy=1,
                    strict=True,
                    lease_duration=SLOT_LEASE_SECONDS,
                    max_retries=0 if scheduled else None,
                )
            )
        except ConcurrencySlotAcquisitionError as exc:
            if not (scheduled and _locked(exc)):
                raise
            acquired = False
        else:
            acquired = True
        yield acquired

"""A session's writer slot: the one-slot Prefect global concurrency limit ``contextmesh-session-<session id>``.

Every flow run that mutates the session holds it from before it loads the session until after its
commit, so two writers never overlap (a second one waits for it).

The slot is a lease the holder renews while it runs. A holder killed outright cannot release it:
the server frees it when the lease expires, so the lease bounds how long the next writer of the
session waits after a crash. Prefect's default is 300 s; 60 s is the shortest the API accepts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.concurrency.sync import concurrency
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

__all__ = ["SLOT_LEASE_SECONDS", "ensure_limit", "limit_name", "session_slot"]

SLOT_LEASE_SECONDS = 60.0


def limit_name(session_id: str) -> str:
    """The Prefect global concurrency limit that serialises a session's writers."""
    return f"contextmesh-session-{session_id}"


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

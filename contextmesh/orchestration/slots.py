"""A session's writer slot: the one-slot Prefect global concurrency limit ``contextmesh-session-<session id>``.

Every flow run that mutates the session holds it from before it loads the session until after its
commit, so two writers never overlap (a second one waits for it).

The slot is a lease the holder renews while it runs. A holder killed outright cannot release it,
and the server frees a lease only when it lapses (Prefect's default is 300 s; 60 s, used here, is
the shortest the API accepts). So the holder also records its lease beside the limit, in the
Prefect variable ``contextmesh-slot-<session id>``: the lease id and the process holding it (its
machine, pid and start time). A writer that finds the slot taken reads the record and, when the
holder was a process of this machine that no longer runs, releases the dead holder's lease through
Prefect's API (what the server does when the lease lapses) and takes the slot at once. A holder on
another machine, or one that may still run, is left to its lease.

Releasing by the recorded lease id cannot free a live holder's slot: only a holder writes the
record (after it acquires, and it deletes it before it releases), so the record names the lease of
the process it names; a lease that is already gone releases nothing.

Renewing and releasing are Prefect's own steps of ``prefect.concurrency.sync.concurrency`` (which
keeps its lease id to itself), composed here so the lease id can be recorded; a waiting writer asks
for the slot once a second, each request answered in full (never cut short by a timeout).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import httpx
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, VariableCreate, VariableUpdate
from prefect.client.schemas.responses import ConcurrencyLimitWithLeaseResponse
from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError
from prefect.concurrency._events import emit_concurrency_acquisition_events, emit_concurrency_release_events
from prefect.concurrency._leases import maintain_concurrency_lease
from prefect.concurrency._sync import release_concurrency_slots_with_lease
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

__all__ = [
    "SLOT_LEASE_SECONDS",
    "ensure_limit",
    "holder_record_name",
    "limit_name",
    "release_dead_holder",
    "session_slot",
]

SLOT_LEASE_SECONDS = 60.0
# How often a waiting writer asks for the slot again, and looks again at who holds it: first soon
# (a recheck starts its resume while it still holds the slot, and lets go a moment later), then
# doubling up to this bound, so a long wait costs the server one request a second.
FIRST_RECHECK_SECONDS = 0.05
RECHECK_SECONDS = 1.0
_log = logging.getLogger(__name__)


def limit_name(session_id: str) -> str:
    """The Prefect global concurrency limit that serialises a session's writers."""
    return f"contextmesh-session-{session_id}"


def holder_record_name(session_id: str) -> str:
    """The Prefect variable in which the slot's holder records its lease and its process."""
    return f"contextmesh-slot-{session_id}"


def ensure_limit(name: str) -> None:
    """Create the global concurrency limit ``name`` (one slot) unless it exists."""
    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            with contextlib.suppress(ObjectAlreadyExists):
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))


def _machine() -> str | None:
    """This machine and process namespace (host name, boot id, pid namespace); None without ``/proc``."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        namespace = str(Path("/proc/self/ns/pid").readlink())
    except OSError:
        return None
    return f"{socket.gethostname()} {boot} {namespace}"


def _started(pid: int) -> str | None:
    """When process ``pid`` of this machine started (clock ticks since boot); None if it does not run.

    A zombie (killed, not yet reaped) does not run. The start time tells a reused pid apart.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]


def _own_record(lease_id: UUID) -> dict[str, str]:
    pid = os.getpid()
    return {"lease_id": str(lease_id), "machine": _machine() or "", "pid": str(pid), "started": _started(pid) or ""}


def _record(session_id: str, lease_id: UUID) -> None:
    name, value = holder_record_name(session_id), _own_record(lease_id)
    with get_client(sync_client=True) as client:
        try:
            client.create_variable(VariableCreate(name=name, value=value))
        except ObjectAlreadyExists:
            client.update_variable(VariableUpdate(name=name, value=value))


def _forget(session_id: str) -> None:
    with get_client(sync_client=True) as client, contextlib.suppress(ObjectNotFound):
        client.delete_variable_by_name(holder_record_name(session_id))


def _holder_gone(record: dict[str, str]) -> bool:
    """True when the recorded holder was a process of this machine and that process no longer runs."""
    machine = _machine()
    if machine is None or record.get("machine") != machine or not record.get("pid", "").isdigit():
        return False
    return _started(int(record["pid"])) != record.get("started")


def release_dead_holder(session_id: str) -> bool:
    """Release the session slot's lease if its recorded holder is a process of this machine that is gone.

    Returns whether a lease was released (False: no record, or a holder that may still run).
    """
    with get_client(sync_client=True) as client:
        variable = client.read_variable_by_name(holder_record_name(session_id))
        record = variable.value if variable is not None else None
        if not isinstance(record, dict) or not _holder_gone({str(k): str(v) for k, v in record.items()}):
            return False
        try:
            lease_id = UUID(str(record.get("lease_id")))
        except ValueError:
            return False
        client.release_concurrency_slots_with_lease(lease_id)  # a lease already gone releases nothing
        again = client.read_variable_by_name(holder_record_name(session_id))
        if again is not None and again.value == record:  # not yet replaced by a new holder's record
            with contextlib.suppress(ObjectNotFound):
                client.delete_variable_by_name(holder_record_name(session_id))
    _log.warning("released the writer slot of session %s: its holder, pid %s, is gone", session_id, record.get("pid"))
    return True


def _try_acquire(name: str) -> ConcurrencyLimitWithLeaseResponse | None:
    """One request for the slot: its lease, or None while another holder has it.

    No request is cut short by a timeout: a request the server granted after the client stopped
    waiting would leave a lease nobody knows, and the slot taken until it lapsed.
    """
    with get_client(sync_client=True) as client:
        try:
            response = client.increment_concurrency_slots_with_lease(
                names=[name], slots=1, mode="concurrency", lease_duration=SLOT_LEASE_SECONDS
            )
        except httpx.HTTPStatusError as error:
            if error.response.status_code == httpx.codes.LOCKED:
                return None
            raise
    acquired = ConcurrencyLimitWithLeaseResponse.model_validate(response.json())
    if not acquired.limits:
        raise ConcurrencySlotAcquisitionError(f"Concurrency limits {[name]!r} must be created before acquiring slots")
    return acquired


def _acquire(session_id: str) -> ConcurrencyLimitWithLeaseResponse:
    """Take the slot, waiting while it is held; a holder found dead meanwhile is released."""
    name, pause = limit_name(session_id), FIRST_RECHECK_SECONDS
    while True:
        release_dead_holder(session_id)
        acquired = _try_acquire(name)
        if acquired is not None:
            return acquired
        time.sleep(pause)
        pause = min(pause * 2, RECHECK_SECONDS)


@contextlib.contextmanager
def session_slot(session_id: str) -> Iterator[None]:
    """Hold the session's one writer slot for the block (waits while another flow run holds it)."""
    ensure_limit(limit_name(session_id))
    acquired = _acquire(session_id)
    emitted = emit_concurrency_acquisition_events(acquired.limits, 1)
    try:
        _record(session_id, acquired.lease_id)
        with maintain_concurrency_lease(acquired.lease_id, SLOT_LEASE_SECONDS, raise_on_lease_renewal_failure=True):
            yield
    finally:
        try:
            _forget(session_id)  # before the release: while the slot is held, no other writer records
        finally:
            release_concurrency_slots_with_lease(acquired.lease_id)
            emit_concurrency_release_events(acquired.limits, 1, emitted)

"""A session's writer slot on a real Prefect server when its holder is killed outright.

A holder process takes the slot (``contextmesh.orchestration.slots.session_slot``) and is killed with
SIGKILL, so it never releases its lease. The next writer on this machine finds the holder's record,
sees that process gone and releases its lease through Prefect's API: it takes the slot at once
instead of waiting for the lease to lapse (``SLOT_LEASE_SECONDS``, 60 s, the shortest lease the API
accepts). A holder that still runs is never released.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from contextmesh.orchestration.slots import (
    SLOT_LEASE_SECONDS,
    holder_record_name,
    limit_name,
    release_dead_holder,
    session_slot,
)

pytestmark = pytest.mark.integration

HOLD = """
import sys, time
from contextmesh.orchestration.settings import prepare_environment
prepare_environment()
from contextmesh.orchestration.slots import session_slot
with session_slot(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


def _active_slots(api: str, session_id: str) -> int:
    response = httpx.get(f"{api}/v2/concurrency_limits/{limit_name(session_id)}", timeout=30)
    response.raise_for_status()
    return int(response.json()["active_slots"])


def _record_exists(api: str, session_id: str) -> bool:
    response = httpx.get(f"{api}/variables/name/{holder_record_name(session_id)}", timeout=30)
    return response.status_code == 200


@pytest.fixture
def holder(prefect_api: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A process holding a fresh session's slot (it has printed ``held``); killed at the end."""
    session_id = str(uuid.uuid4())
    env = {**os.environ, "PREFECT_API_URL": prefect_api}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, session_id], stdout=subprocess.PIPE, env=env, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held", "the holder process did not take the slot"
        yield session_id, proc
    finally:
        proc.kill()
        proc.wait(30)
        proc.stdout.close()


def test_a_holder_that_still_runs_keeps_its_slot(prefect_api: str, holder: tuple[str, subprocess.Popen[str]]) -> None:
    session_id, proc = holder
    assert _active_slots(prefect_api, session_id) == 1
    assert _record_exists(prefect_api, session_id)
    assert release_dead_holder(session_id) is False
    assert proc.poll() is None
    assert _active_slots(prefect_api, session_id) == 1


def test_the_next_writer_takes_the_slot_of_a_sigkilled_holder_without_waiting_for_its_lease(
    prefect_api: str, holder: tuple[str, subprocess.Popen[str]]
) -> None:
    session_id, proc = holder
    assert _active_slots(prefect_api, session_id) == 1
    proc.kill()
    proc.wait(30)
    killed = time.monotonic()
    with session_slot(session_id):
        waited = time.monotonic() - killed
        assert _active_slots(prefect_api, session_id) == 1  # this writer's lease; the dead one's is gone
        assert _record_exists(prefect_api, session_id)
    # Without the release, the slot frees only when the dead holder's lease lapses (60 s after its
    # last renewal); half of that is far more than a release and an acquisition take.
    assert waited < SLOT_LEASE_SECONDS / 2, f"waited {waited:.1f} s for a dead holder's slot"
    assert _active_slots(prefect_api, session_id) == 0
    assert not _record_exists(prefect_api, session_id)

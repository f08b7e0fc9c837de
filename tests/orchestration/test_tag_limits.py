"""Tagged task runs and tag concurrency limits on a real Prefect server (tag_limits, ADR 0032).

A task run whose identity tags carry no tag concurrency limit starts without a slot request (Prefect
is told first that the set has none); a tag that a person *did* limit keeps its limit: the executor's
run of a task tagged with a limit of 0 is refused by the server, exactly as without ContextMesh (a
prefill that did not ask the server would let it complete).
"""

from __future__ import annotations

import time
import uuid

import httpx
import pytest
from prefect import flow
from prefect.concurrency import services
from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError

from contextmesh.orchestration.prefect_executor import cached_run, identity_tags
from contextmesh.orchestration.tag_limits import SNAPSHOT_SECONDS, limited_tags, no_limits_known

pytestmark = pytest.mark.integration


@flow(name="cm-tag-limits-probe")
def _one_cached_run(plan: str) -> str:
    future = cached_run(plan, "hashing", "auth.hash.v1", "assumption:a", {"digest": "x"})
    future.wait()
    state = future.state
    return f"{state.type.value} {state.name}"


def _tags(plan: str) -> list[str]:
    return identity_tags(plan, "hashing", "cached", "auth.hash.v1", "assumption:a")


def test_a_tag_set_without_limits_is_known_to_prefect_and_its_run_completes(prefect_api: str) -> None:
    plan = f"p-{uuid.uuid4().hex[:8]}"
    assert no_limits_known(_tags(plan)) is True
    assert services._no_limits_cache.get(frozenset(f"tag:{t}" for t in _tags(plan))) is True
    assert _one_cached_run(plan) == "COMPLETED Cached"
    assert no_limits_known([]) is False  # an untagged run has nothing to ask about


def test_a_limited_tag_keeps_its_limit(prefect_api: str) -> None:
    plan = f"p-{uuid.uuid4().hex[:8]}"
    limited = f"cm.plan:{plan}"
    made = httpx.post(f"{prefect_api}/v2/concurrency_limits/", json={"name": f"tag:{limited}", "limit": 0}, timeout=30)
    made.raise_for_status()
    try:
        time.sleep(SNAPSHOT_SECONDS)  # past the last read of the server's tag limits
        found = limited_tags()
        assert found is not None and limited in found
        assert no_limits_known(_tags(plan)) is False
        assert frozenset(f"tag:{t}" for t in _tags(plan)) not in services._no_limits_cache
        with pytest.raises(ConcurrencySlotAcquisitionError, match="Slots requested is greater than the limit"):
            _one_cached_run(plan)  # the server refused the run a slot of a limit of 0
    finally:
        httpx.delete(f"{prefect_api}/v2/concurrency_limits/{made.json()['id']}", timeout=30)

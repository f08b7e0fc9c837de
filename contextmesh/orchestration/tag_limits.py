"""Task runs whose tags carry no concurrency limit start without asking the server (ADR 0032).

Prefect 3.9.1 treats every task-run tag as a possible tag concurrency limit: before a tagged task
run begins, its engine asks the server for a slot on ``tag:<t>`` for each of its tags
(``POST /v2/concurrency_limits/increment-with-lease``), even when no such limit exists. On the
managed SQLite server that request reads the limits and then writes in one deferred transaction,
so any other write committed in between (another task run starting, a log batch, the event
persister) makes SQLite refuse it (``database is locked``, a stale snapshot: no busy wait helps).
The server answers 503 and Prefect's client sends the request again **two seconds later**. The
identity tags (``prefect_executor``, invariant 5) make each task run's tag set distinct, so a
recheck's five audit runs make five such requests at once and collide with each other: profiled
on ``bench/deployments.py``, one or two of them waited 1.7–2.3 s in nearly every recheck and in
most resumes, a third of the tuned stale-closure time.

Prefect already skips the request for a tag set it has recently seen answered "no limits" (its
``_no_limits_cache``, a five-second TTL). :func:`no_limits_known` puts a tag set there before the
task run is submitted, when the server's own list of tag limits — read at most once a second per
process (one request, however many task runs) — names none of its tags. A tag that *is* limited
keeps Prefect's path untouched, so a user's tag concurrency limit still holds; one created a moment
ago is seen within about the TTL, as with Prefect's own cache. If the cache or the read is not
there (another Prefect version, the API down), nothing is changed and Prefect asks as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

__all__ = ["SNAPSHOT_SECONDS", "limited_tags", "no_limits_known"]

SNAPSHOT_SECONDS = 1.0  # how long one read of the server's tag limits is trusted
_PAGE = 200


class _Snapshot:
    """The server's limited tags as last read, shared by every flow run of the process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.read_at = float("-inf")
        self.limited: frozenset[str] = frozenset()


_SNAPSHOT = _Snapshot()


def _read_limited() -> frozenset[str]:
    from prefect.client.orchestration import get_client  # noqa: PLC0415 - only where a flow runs

    found: set[str] = set()
    with get_client(sync_client=True) as client:
        offset = 0
        while True:
            page = client.read_global_concurrency_limits(limit=_PAGE, offset=offset)
            tagged = [limit.name for limit in page if limit.active and limit.name.startswith("tag:")]
            found.update(name.removeprefix("tag:") for name in tagged)
            if len(page) < _PAGE:
                return frozenset(found)
            offset += _PAGE


def limited_tags() -> frozenset[str] | None:
    """The tags that carry an active concurrency limit on the server (``tag:<t>`` limits); None when
    the server cannot be asked. Read at most once per :data:`SNAPSHOT_SECONDS`."""
    with _SNAPSHOT.lock:
        if time.monotonic() - _SNAPSHOT.read_at < SNAPSHOT_SECONDS:
            return _SNAPSHOT.limited
    try:
        limited = _read_limited()
    except Exception:  # a failed read only means Prefect asks per task run, as it always did
        return None
    with _SNAPSHOT.lock:
        _SNAPSHOT.read_at, _SNAPSHOT.limited = time.monotonic(), limited
    return limited


def no_limits_known(tags: Sequence[str]) -> bool:
    """Tell Prefect's slot service that ``tags`` carry no concurrency limit, when the server says so.

    Returns whether it was told (False: no tags, a limited tag, the server unreadable, or a Prefect
    without the cache — its task engine then asks the server itself).
    """
    if not tags:
        return False
    try:
        from prefect.concurrency import services  # noqa: PLC0415

        cache, cache_lock = services._no_limits_cache, services._cache_lock  # Prefect's own cache (module docstring)
    except (ImportError, AttributeError):
        return False
    limited = limited_tags()
    if limited is None or limited.intersection(tags):
        return False
    with cache_lock:
        cache[frozenset(f"tag:{tag}" for tag in tags)] = True
    return True

"""The recheck deployment's two schedules: a watching recheck every interval, a full one more slowly.

A recheck runs only the auditors whose watched slice changed (ADR 0019). A fingerprint that misses
part of what its auditor reads would hide that part for ever, so the deployment also runs a **full**
recheck (parameter ``full=True``: every standing auditor) every :data:`FULL_EVERY` intervals. The
full schedule is anchored half an interval after the watching one, so the two never come due at
the same moment — the deployment's one-at-a-time limit would turn one of them away.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prefect.schedules import Schedule

__all__ = ["FULL_EVERY", "recheck_schedules"]

FULL_EVERY = 10


def recheck_schedules(interval: float, *, now: datetime | None = None) -> list[Schedule]:
    """Every ``interval`` seconds a watching recheck; every ``FULL_EVERY`` intervals a full one."""
    from prefect.schedules import Interval  # noqa: PLC0415 - Prefect only when deploying

    anchor = (now or datetime.now(UTC)).replace(microsecond=0)
    return [
        Interval(timedelta(seconds=interval), anchor_date=anchor, slug="recheck"),
        Interval(
            timedelta(seconds=interval * FULL_EVERY),
            anchor_date=anchor + timedelta(seconds=interval / 2),
            parameters={"full": True},
            slug="full-recheck",
        ),
    ]

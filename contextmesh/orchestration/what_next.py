"""What happens next after a change a recheck should see: the line ``evidence add`` and ``demo advisory`` print.

A serving process (``contextmesh serve``, ``deployments/serve.py``) starts a recheck within a fraction
of a second of new evidence or a changed file it watches (ADR 0017) and records the run it started
(:mod:`contextmesh.orchestration.reactions`). A writer waits up to a few seconds for that record, so
it can name the run's page; otherwise it says the truth: a recheck is running and one more follows
it, or nothing serves the session and nothing rechecks it until somebody asks.

This module does not import Prefect.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextmesh.orchestration import reactions

__all__ = ["Next", "after_evidence", "after_feed"]

WAIT_SECONDS = 3.0


@dataclass(frozen=True)
class Next:
    """What happens next for one session: a recheck started (its run), one to follow, or none."""

    session_id: str
    served: bool
    flow_run_id: str = ""
    url: str = ""
    pid: int = 0
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "session_id": self.session_id,
            "served": self.served,
            "flow_run_id": self.flow_run_id or None,
            "url": self.url or None,
            "pid": self.pid or None,
            "text": self.text,
        }


def _served(state: reactions.Reacting, since: float, home: Path | None, wait: float) -> Next:
    started = reactions.wait_for_start(state.session_id, since, timeout=wait, home=home)
    if started is not None:
        return Next(
            state.session_id,
            True,
            started.flow_run_id,
            started.url,
            started.pid,
            f"a recheck started now under serve (pid {started.pid}): {started.url}",
        )
    return Next(
        state.session_id,
        True,
        pid=state.pid,
        text=(
            f"serve (pid {state.pid}) starts a recheck as soon as the one running ends; "
            "`contextmesh serve` prints its flow-run URL"
        ),
    )


def after_evidence(
    session_id: str, since: float, *, interval: float, home: Path | None = None, wait: float = WAIT_SECONDS
) -> Next:
    """What follows evidence committed to ``session_id`` at ``since`` (epoch seconds)."""
    state = reactions.serving(session_id, home)
    if state is not None:
        return _served(state, since, home, wait)
    return Next(
        session_id,
        False,
        text=(
            "no `contextmesh serve` is serving this session, so nothing rechecks it yet: run `contextmesh recheck` "
            f"now, or start `contextmesh serve` (it rechecks at once on new evidence, and every {interval:g} s)"
        ),
    )


def after_feed(feed: Path, since: float, *, home: Path | None = None, wait: float = WAIT_SECONDS) -> list[Next]:
    """What follows a change to ``feed``: one answer per serving process watching it (none: empty)."""
    wanted = str(feed.resolve())
    found = [state for state in reactions.read_all(home) if wanted in state.watching]
    deadline = time.monotonic() + wait
    return [_served(state, since, home, max(0.0, deadline - time.monotonic())) for state in found]

"""The demo's execute walk-through on Prefect: the demo's script over orchestration's flow-run steps.

The script is the demo's (:func:`contextmesh.demo.execute.walk_through`); the steps are
:class:`~contextmesh.orchestration.flow_steps.FlowRunSteps`, which know nothing of the demo and are
imported by path, as docs/api.md says any program may. So this is exactly what a user's own code
could write:

1. a new directory gets the demo session with its plan declared and nothing run
   (:func:`~contextmesh.demo.saved.create_demo_session`), and round 1 runs as a plan flow run;
2. the advisory is published to the feed;
3. the recheck runs as a recheck flow run (its auditor disproves the Argon2 ground);
4. ``hashing`` is repaired onto bcrypt — an engine call, committed by compare-and-swap;
5. round 3 runs as a plan flow run in resume mode: only the stale closure executes.

A session that already ran round 1 skips step 1; one already repaired runs one more round. The
result is the in-process :class:`~contextmesh.demo.execute.Walkthrough` plus each flow run's id and
UI URL by round. Prefect is imported only inside the functions, after the command has set up its
environment (:func:`~contextmesh.orchestration.commands.prefect_for_command`).
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextmesh import TaskRegistry
from contextmesh.demo.execute import Walkthrough, walk_through
from contextmesh.demo.saved import create_demo_session, default_feed, demo_registry

__all__ = ["PrefectWalkthrough", "execute_on_prefect", "run_walkthrough_on_prefect"]


@dataclass
class PrefectWalkthrough(Walkthrough):
    """The walk-through, plus where each round ran on Prefect."""

    session_dir: Path | None = None
    flow_runs: dict[int, str] = field(default_factory=dict)
    urls: dict[int, str] = field(default_factory=dict)
    task_runs: dict[int, int] = field(default_factory=dict)
    recorded: bool = False
    ui_url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The in-process document plus the flow runs by round."""
        data = super().to_dict()
        data["session_dir"] = None if self.session_dir is None else str(self.session_dir)
        data["flow_runs"] = {
            str(r): {"id": fid, "url": self.urls.get(r), "task_runs": self.task_runs.get(r)}
            for r, fid in self.flow_runs.items()
        }
        data["ui"] = self.ui_url
        return data


def _session_dir(session_dir: Path | None) -> Path:
    return session_dir or Path(tempfile.mkdtemp(prefix="contextmesh-session-"))


def run_walkthrough_on_prefect(
    session_dir: Path | None,
    feed: Path | None = None,
    *,
    registry: TaskRegistry | None = None,
    max_workers: int = 4,
    record_timeout: float = 30.0,
) -> PrefectWalkthrough:
    """Round 1, the advisory, the recheck, the repair and round 3 — each round a Prefect flow run.

    Needs a Prefect API configured; waits until the server has recorded every task run.
    """
    from contextmesh.orchestration.flow_steps import FlowRunSteps  # noqa: PLC0415 - Prefect, after the env

    directory = _session_dir(session_dir)
    feed = feed or (default_feed() if session_dir is not None else directory.parent / f"{directory.name}-feed.json")
    registry = registry or demo_registry(feed)
    steps = FlowRunSteps(directory, registry, max_workers=max_workers)
    if not directory.exists() or not any(directory.iterdir()):
        create_demo_session(directory, feed=feed)
    walk = walk_through(steps, feed)
    recorded = steps.wait_recorded(timeout=record_timeout)
    return PrefectWalkthrough(
        **{f.name: getattr(walk, f.name) for f in dataclasses.fields(Walkthrough)},
        session_dir=directory,
        flow_runs=steps.flow_runs,
        urls=steps.urls(),
        task_runs=steps.task_runs,
        recorded=recorded,
    )


def execute_on_prefect(
    session_dir: Path | None,
    feed: Path | None = None,
    *,
    threads: int = 4,
    home: Path | None = None,
    keep_server: bool = False,
) -> tuple[PrefectWalkthrough, str]:
    """The walk-through on Prefect and a note for stderr.

    Uses ``PREFECT_API_URL`` when one is configured, else the managed server: started for this
    command and stopped after its runs are recorded unless it was already running — or, with
    ``keep_server``, kept as ``contextmesh server start`` keeps it, so the runs' pages still open
    after the command (``contextmesh server stop`` stops it).
    """
    from contextmesh.orchestration.commands import prefect_for_command, server_command  # noqa: PLC0415

    with prefect_for_command(home) as handle:
        walk = run_walkthrough_on_prefect(session_dir, feed, max_workers=threads)
        for round_, flow_run_id in walk.flow_runs.items():
            handle.record(flow_run_id, walk.task_runs.get(round_, 0))
        walk.ui_url = handle.ui_url
        note = handle.note
        if keep_server and handle.started:
            server_command("start", home=home)  # the server started for this command becomes a kept one
            note = (
                f"started a Prefect server for this command at {handle.ui_url} and kept it running, so these "
                "pages open; `contextmesh server stop` stops it"
            )
    return walk, note

"""A session's plan worked step by step, each round and recheck a Prefect flow run.

:class:`FlowRunSteps` drives any plan saved in a session directory with the deployment's registry:
``run_round`` and ``resume`` are plan flow runs (modes ``run`` and ``resume``), ``recheck`` is a
recheck flow run, ``repair`` an engine call committed through the session by compare-and-swap (a
repair executes nothing, so it needs no flow run). It remembers each flow run's id and task-run
count by plan round, gives the UI address of each, and can wait until the server has recorded
every task run. It needs a Prefect API configured (``local_server.ensure_server`` or a test
fixture); it knows nothing of any particular plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contextmesh.execution.plan import Plan, RecheckReport, RoundReport
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.orchestration.flow_bodies import (
    make_plan_flow,
    make_recheck_flow,
    recheck_report_from,
    round_report_from,
)
from contextmesh.orchestration.local_server import wait_recorded
from contextmesh.orchestration.run_links import configured_api, flow_run_url
from contextmesh.session.plan_check import plan_of
from contextmesh.session.session import Session

__all__ = ["FlowRunSteps", "configured_api", "flow_run_url"]


class FlowRunSteps:
    """The plan of the session in ``session_dir``, one flow run per round and per recheck."""

    def __init__(self, session_dir: Path, registry: TaskRegistry, *, max_workers: int = 4) -> None:
        self.session_dir = session_dir
        self.registry = registry
        self.flow_runs: dict[int, str] = {}
        self.task_runs: dict[int, int] = {}
        self._plan_flow = make_plan_flow(registry, max_workers=max_workers)
        self._recheck_flow = make_recheck_flow(registry, max_workers=max_workers)

    def session(self) -> Session:
        """The session as its newest generation on disk holds it."""
        return Session.load(self.session_dir, registry=self.registry)

    def plan(self) -> Plan:
        """The plan as its newest generation on disk holds it."""
        return plan_of(self.session())

    def run_round(self) -> RoundReport:
        """A plan flow run in mode ``run``."""
        return round_report_from(self._note(self._plan_flow(session_dir=str(self.session_dir), mode="run")))

    def resume(self) -> RoundReport:
        """A plan flow run in mode ``resume``: only the stale and pending tasks."""
        return round_report_from(self._note(self._plan_flow(session_dir=str(self.session_dir), mode="resume")))

    def recheck(self) -> RecheckReport:
        """A recheck flow run: every standing auditor, nothing executed."""
        return recheck_report_from(self._note(self._recheck_flow(session_dir=str(self.session_dir))))

    def repair(self, task: str, *, assumes: str, worker_key: str, produces: Sequence[str]) -> None:
        """Put ``task`` on new ground under ``worker_key``, committed through the session."""
        self.session().apply(
            lambda s: plan_of(s).repair(task, assumes=assumes, worker_key=worker_key, produces=produces)
        )

    def urls(self, api_url: str | None = None) -> dict[int, str]:
        """The UI address of each flow run, by plan round."""
        api = api_url or configured_api()
        return {round_: flow_run_url(flow_run_id, api) for round_, flow_run_id in self.flow_runs.items()}

    def wait_recorded(self, *, timeout: float = 30.0) -> bool:
        """Wait until the server has recorded every task run of these flow runs; False on timeout."""
        return wait_recorded(
            configured_api(), list(self.flow_runs.values()), sum(self.task_runs.values()), timeout=timeout
        )

    def _note(self, result: dict[str, Any]) -> dict[str, Any]:
        round_ = int(result["round"])
        self.flow_runs[round_] = str(result["flow_run_id"])
        self.task_runs[round_] = int(result["task_runs"])
        report: dict[str, Any] = result["report"]
        return report

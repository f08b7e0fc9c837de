"""One plan round, recheck or repair of a session as one Prefect flow run started from this process.

``contextmesh run`` (and ``recheck``, ``resume``, ``repair`` on a project whose rounds run on
Prefect, when no deployment serves its session) call :func:`run_here`: the flow run executes here,
on ``PREFECT_API_URL`` when one is configured, else on the managed local server (started for the
command and stopped after its runs are recorded, unless ``contextmesh server start`` keeps one), with
the registry the caller bound from its project. The answer is the flow run's own report — the value
the flow body returned — with its id and UI address.

:func:`dispatched_report` reads the report a flow run of a served deployment published (its report
artifact, ADR 0008), so a dispatched round is reported from the run itself too.

Prefect is imported only inside the functions, after the command has set its environment
(:func:`~contextmesh.orchestration.commands.prefect_for_command`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from contextmesh.execution.reports import RecheckReport, RoundReport
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.orchestration.commands import prefect_for_command
from contextmesh.orchestration.served_record import ServedRecord
from contextmesh.orchestration.settings import client_settings

__all__ = ["Kind", "RunHere", "dispatched_report", "run_here"]

Kind = Literal["run", "resume", "recheck", "repair", "rerun"]


@dataclass(frozen=True)
class RunHere:
    """A flow run this process ran: what kind, its id and address, its report or repair result."""

    kind: Kind
    flow_run_id: str
    url: str
    report: RoundReport | RecheckReport | None
    result: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    state_name: str = "Completed"  # the run's final state's name (ADR 0016: Disproved, Blocked, ...)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``: the state's type (always COMPLETED here) and its name, as a dispatch reports."""
        return {
            "kind": self.kind,
            "flow_run_id": self.flow_run_id,
            "url": self.url,
            "state": "COMPLETED",
            "state_name": self.state_name,
        }


def _one_run(
    kind: Kind, directory: str, registry: TaskRegistry, threads: int, repair: dict[str, Any], full: bool = False
) -> tuple[dict[str, Any], str]:
    """The flow run's result dict and its final state's name."""
    from prefect.client.schemas.objects import State  # noqa: PLC0415 - Prefect, after the environment is set

    from contextmesh.orchestration import flow_bodies  # noqa: PLC0415

    if kind in ("run", "resume"):
        flow = flow_bodies.make_plan_flow(registry, max_workers=threads)
        parameters: dict[str, Any] = {"session_dir": directory, "mode": kind}
    elif kind == "rerun":  # ``repair`` carries the rerun's task and who asked (rerun_from, asked_by)
        flow = flow_bodies.make_plan_flow(registry, max_workers=threads)
        parameters = {"session_dir": directory, "mode": kind, **repair}
    elif kind == "recheck":
        flow = flow_bodies.make_recheck_flow(registry, max_workers=threads)
        parameters = {"session_dir": directory, "full": full}
    else:
        flow = flow_bodies.make_repair_flow(registry)
        parameters = {"session_dir": directory, **repair}
    state = flow(**parameters, return_state=True)
    assert isinstance(state, State)
    result = state.result()  # raises as calling the flow would, when the run failed
    assert isinstance(result, dict)
    return result, state.name or state.type.value


def run_here(
    kind: Kind,
    session_dir: Path,
    registry: TaskRegistry,
    *,
    threads: int = 4,
    repair: dict[str, Any] | None = None,
    home: Path | None = None,
    full: bool = False,
) -> RunHere:
    """Run one flow run of ``kind`` on ``session_dir`` here; ``repair`` holds task, assumes, worker_key;
    ``full`` makes a recheck run every standing auditor."""
    with prefect_for_command(home) as handle:
        result, state_name = _one_run(kind, str(session_dir), registry, threads, repair or {}, full)
        flow_run_id = str(result["flow_run_id"])
        handle.record(flow_run_id, int(result.get("task_runs", 0)))
        url = handle.flow_run_url(flow_run_id)
    report: RoundReport | RecheckReport | None = None
    if kind != "repair":
        from contextmesh.orchestration.flow_bodies import recheck_report_from, round_report_from  # noqa: PLC0415

        report = recheck_report_from(result["report"]) if kind == "recheck" else round_report_from(result["report"])
    return RunHere(kind, flow_run_id, url, report, result, handle.note, state_name)


def dispatched_report(record: ServedRecord, flow_run_id: str) -> RoundReport | RecheckReport:
    """The report a completed flow run of ``record``'s deployments published as its artifact."""
    from contextmesh.orchestration.plain_api import dispatch_over_http  # noqa: PLC0415
    from contextmesh.orchestration.run_report import read_report, read_report_over_http  # noqa: PLC0415

    url = record.flow_run_url(flow_run_id)
    if dispatch_over_http():
        return read_report_over_http(record.api_url, flow_run_id, url=url).report
    with client_settings(record.api_url, heartbeat=False):
        return read_report(flow_run_id, url=record.flow_run_url(flow_run_id)).report

"""A plan or recheck flow run's own report, published as an artifact of the run and read back from it.

After its commit, a plan round or a recheck publishes one artifact of type :data:`REPORT_ARTIFACT`
on its flow run (ADR 0008). Its data is the canonical JSON text of::

    {"kind": "round" | "recheck", "report": <report_codec.to_dict(report)>,
     "generation": <the generation the run committed>, "ledger_head": <the run ledger's head after it>}

Whoever dispatched the run (:class:`~contextmesh.mcp.deployment_dispatcher.PrefectDispatcher`)
reads that artifact back once the run is ``Completed`` — the report the engine itself returned,
not one re-derived from ledger entries. The artifact is written before the flow run returns, so a
completed run that has none was not started by these flows; reading it is refused, naming the run.
The text is read as untrusted input: strict JSON, exact fields, exact types
(:mod:`contextmesh.execution.report_codec`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import ExecutionError, SnapshotError
from contextmesh.execution import report_codec
from contextmesh.execution.plan import RecheckReport, RoundReport
from contextmesh.formats.records import exact_keys, expect_dict, field_path

__all__ = ["REPORT_ARTIFACT", "RunReport", "publish_report", "read_report", "report_from_artifact"]

REPORT_ARTIFACT = "contextmesh-report"
Kind = Literal["round", "recheck"]
_FIELDS = ("kind", "report", "generation", "ledger_head")
_WHERE = "artifact"


@dataclass(frozen=True)
class RunReport:
    """What one flow run reported: its engine report, the generation it committed, the ledger head after."""

    report: RoundReport | RecheckReport
    generation: int
    ledger_head: str | None

    @property
    def kind(self) -> Kind:
        """``round`` for a plan round, ``recheck`` for a recheck."""
        return "round" if isinstance(self.report, RoundReport) else "recheck"

    def to_dict(self) -> dict[str, Any]:
        """The artifact's data, before it is written as canonical JSON."""
        return {
            "kind": self.kind,
            "report": report_codec.to_dict(self.report),
            "generation": self.generation,
            "ledger_head": self.ledger_head,
        }


def report_from_artifact(text: Any) -> RunReport:
    """A :class:`RunReport` from an artifact's data; anything but what :func:`publish_report` wrote is refused."""
    if not isinstance(text, str):
        raise SnapshotError(_WHERE, f"{type(text).__name__} data", "a report artifact holds JSON text")
    data = expect_dict(loads(text, _WHERE), _WHERE)
    exact_keys(data, _FIELDS, _WHERE)
    kind, generation, head = data["kind"], data["generation"], data["ledger_head"]
    at = field_path(_WHERE, "report")
    report: RoundReport | RecheckReport
    if kind == "round":
        report = report_codec.round_report_from_dict(data["report"], at)
    elif kind == "recheck":
        report = report_codec.recheck_report_from_dict(data["report"], at)
    else:
        raise SnapshotError(field_path(_WHERE, "kind"), repr(kind)[:60], "a report is of kind 'round' or 'recheck'")
    if type(generation) is not int or generation < 1:
        raise SnapshotError(
            field_path(_WHERE, "generation"), repr(generation)[:60], "a committed generation is 1 or more"
        )
    if head is not None and type(head) is not str:
        raise SnapshotError(field_path(_WHERE, "ledger_head"), repr(head)[:60], "a ledger head is text or null")
    return RunReport(report, generation, head)


def publish_report(run: RunReport, *, flow_run_id: str, description: str) -> None:
    """Attach ``run`` to the flow run ``flow_run_id`` as its report artifact (call inside that run)."""
    from prefect.client.orchestration import get_client  # noqa: PLC0415
    from prefect.client.schemas.actions import ArtifactCreate  # noqa: PLC0415

    artifact = ArtifactCreate(
        type=REPORT_ARTIFACT,
        description=description,
        flow_run_id=uuid.UUID(flow_run_id),
        data=file_bytes(run.to_dict()).decode("utf-8"),
    )
    with get_client(sync_client=True) as client:
        client.create_artifact(artifact=artifact)


def _missing(flow_run_id: str, url: str) -> ExecutionError:
    return ExecutionError(
        f"flow run {flow_run_id} completed without publishing a {REPORT_ARTIFACT} artifact, so its report is "
        f"unknown (was it started by another flow?) {url}".rstrip()
    )


def read_report_over_http(api_url: str, flow_run_id: str, *, url: str = "") -> RunReport:
    """:func:`read_report` with plain HTTP (:mod:`~contextmesh.orchestration.plain_api`): no Prefect import."""
    from contextmesh.orchestration.plain_api import PlainApi  # noqa: PLC0415

    with PlainApi(api_url) as api:
        data = api.newest_artifact_data(flow_run_id, REPORT_ARTIFACT)
    if data is None:
        raise _missing(flow_run_id, url)
    return report_from_artifact(data)


def read_report(flow_run_id: str, *, url: str = "") -> RunReport:
    """The report a finished flow run published (the newest, should a retried run have published two).

    Call under the client settings of the run's API. A run without one is refused, naming it.
    """
    from prefect.client.orchestration import get_client  # noqa: PLC0415
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterType  # noqa: PLC0415
    from prefect.client.schemas.sorting import ArtifactSort  # noqa: PLC0415

    wanted = ArtifactFilter(
        flow_run_id=ArtifactFilterFlowRunId(any_=[uuid.UUID(flow_run_id)]),
        type=ArtifactFilterType(any_=[REPORT_ARTIFACT]),
    )
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=wanted, sort=ArtifactSort.CREATED_DESC, limit=1)
    if not found:
        raise _missing(flow_run_id, url)
    return report_from_artifact(found[0].data)

"""The Prefect calls behind an MCP dispatch: probe the served deployments, start a run, read its name.

:class:`DeploymentCalls` is everything :class:`~contextmesh.mcp.deployment_dispatcher.PrefectDispatcher`
needs from Prefect for one served session (its served record,
:mod:`contextmesh.orchestration.served_record`): a probe (``serve.py`` alive for this directory, the
API's ``/health``, both deployments present), the recheck and resume starts of
:mod:`contextmesh.orchestration.deployed`, and the report a finished flow run published
(:mod:`contextmesh.orchestration.run_report`). Prefect is
imported only inside these calls, so a launcher that never dispatches never pays for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from contextmesh.orchestration import deployed
from contextmesh.orchestration.run_report import RunReport, read_report
from contextmesh.orchestration.served_record import ServedRecord, find
from contextmesh.orchestration.settings import client_settings
from contextmesh.session.session import Session

__all__ = ["DEFAULT_WAIT", "PROBE_TIMEOUT", "DeploymentCalls", "round_of"]

DEFAULT_WAIT = 60.0
PROBE_TIMEOUT = 2.0
_ROUND = re.compile(r" · round (\d+)(?: · recheck)?$")


def round_of(flow_run_name: str) -> int | None:
    """The round a plan or recheck flow run names itself after its commit (``<plan> · round <n>``).

    What a person reads in the UI; a program reads the round from the run's report instead.
    """
    found = _ROUND.search(flow_run_name)
    return int(found.group(1)) if found else None


class DeploymentCalls:
    """The Prefect API calls for the deployments ``serve.py`` serves for one session."""

    def __init__(self, record: ServedRecord, *, home: Path | None = None, probe_timeout: float = PROBE_TIMEOUT) -> None:
        self.record = record
        self.home = home
        self.probe_timeout = probe_timeout

    @contextmanager
    def _on(self) -> Iterator[None]:
        with client_settings(self.record.api_url, heartbeat=False):
            yield

    def probe(self) -> bool:
        """One uncached probe: ``serve.py`` alive for this directory, ``/health``, both deployments."""
        record = self.record
        if find(record.session_id, Path(record.session_dir), self.home) is None:
            return False
        import prefect.settings as ps  # noqa: PLC0415 - Prefect only when probing
        from prefect.client.orchestration import get_client  # noqa: PLC0415

        # No retries: a probe that waits out Prefect's backoff is not a few seconds' answer.
        no_retries = ps.temporary_settings(updates={ps.PREFECT_CLIENT_MAX_RETRIES: 0})
        with (
            self._on(),
            no_retries,
            get_client(httpx_settings={"timeout": self.probe_timeout}, sync_client=True) as client,
        ):
            if client.api_healthcheck() is not None:
                return False
            for deployment in (record.recheck, record.plan):
                client.read_deployment_by_name(deployment)  # raises ObjectNotFound: down
        return True

    def start_recheck(self, *, feed: str | None, wait: float) -> deployed.Dispatched:
        """Start the recheck flow run and wait up to ``wait`` seconds for it."""
        return deployed.dispatch_recheck(self.record, feed=feed, wait=wait)

    def start_resume(self, session: Session, *, feed: str | None, wait: float) -> deployed.Dispatched:
        """Start (or find) the resume of ``session``'s ledger head and wait up to ``wait`` seconds."""
        return deployed.dispatch_resume(self.record, session, feed=feed, wait=wait, origin="mcp")

    def observe(self, deployment: str, flow_run_id: str) -> deployed.Dispatched:
        """A flow run this session's deployments started, as it stands now (one read, no wait)."""
        return deployed.observe(self.record, deployment, flow_run_id)

    def report(self, flow_run_id: str, *, url: str = "") -> RunReport:
        """The report a finished plan or recheck flow run published (its artifact, ADR 0008)."""
        with self._on():
            return read_report(flow_run_id, url=url)

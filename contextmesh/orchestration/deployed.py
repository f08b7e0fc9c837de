"""Writes dispatched to a served session's deployments: recheck, repair and resume as flow runs.

Used by the CLI (``contextmesh recheck|repair|resume``) and by the MCP launcher when
``deployments/serve.py`` serves the session (:mod:`contextmesh.orchestration.served_record`). Each call
creates a flow run of the named deployment — a resume under the same idempotency key a recheck
uses (:mod:`contextmesh.orchestration.resume`), so a resume asked for twice on one ledger head is
one run — then waits a bounded time. The answer is the flow run's id, UI address and state, and
``finished``; the run itself commits to the session directory, which the caller re-reads.

The calls go over plain HTTP (:mod:`~contextmesh.orchestration.plain_api`), so a CLI write does not
import Prefect (issue 20: about 7 s a command on a loaded machine); ``CONTEXTMESH_DISPATCH=prefect``
makes them with Prefect's client, as before.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextmesh.core.errors import ExecutionError
from contextmesh.orchestration.plain_api import PlainApi, dispatch_over_http
from contextmesh.orchestration.resume import Create, ResumeTrigger
from contextmesh.orchestration.served_record import ServedRecord, peek
from contextmesh.orchestration.settings import client_settings

if TYPE_CHECKING:
    from contextmesh.orchestration.run_report import RunReport
    from contextmesh.session.session import Session

__all__ = [
    "PLAN_DEPLOYMENT",
    "RECHECK_DEPLOYMENT",
    "REPAIR_DEPLOYMENT",
    "Dispatched",
    "configured_record",
    "dispatch_recheck",
    "dispatch_repair",
    "dispatch_rerun",
    "dispatch_resume",
    "dispatched_report",
    "observe",
    "pending_work",
    "require_api",
]

TERMINAL = frozenset({"COMPLETED", "FAILED", "CANCELLED", "CRASHED"})
PLAN_DEPLOYMENT = "contextmesh-plan/plan"
RECHECK_DEPLOYMENT = "contextmesh-recheck/recheck"
REPAIR_DEPLOYMENT = "contextmesh-repair/repair"


@dataclass(frozen=True)
class Dispatched:
    """A flow run started on a deployment, as far as the bounded wait saw it."""

    deployment: str
    flow_run_id: str
    url: str
    state: str
    state_name: str
    finished: bool
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json`` and MCP."""
        return asdict(self)


def require_api(api_url: str, *, timeout: float = 5.0) -> None:
    """Refuse, naming it, a Prefect API address that is not http(s) or does not answer at all.

    Checked before anything is dispatched or run, so an unreachable API is one clear refusal
    instead of a connection traceback from deep in Prefect's client. Any HTTP answer counts as
    reachable (a server that wants a key still answers); only a transport failure is refused.
    """
    import httpx  # noqa: PLC0415 - Prefect's HTTP client, only when a command talks to an API

    if not api_url.startswith(("http://", "https://")):
        raise ExecutionError(f"the Prefect API address {api_url!r} is not an http(s) URL (PREFECT_API_URL)")
    try:
        httpx.get(api_url.rstrip("/") + "/health", timeout=timeout)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise ExecutionError(
            f"the Prefect API at {api_url} does not answer ({type(exc).__name__}: {exc or 'no detail'}); start one "
            "with `contextmesh server start` or point PREFECT_API_URL at a running server"
        ) from None


@contextmanager
def _answering(api_url: str) -> Iterator[None]:
    """An API that stops answering mid-dispatch is a refusal naming it, like one that never answered."""
    import httpx  # noqa: PLC0415

    try:
        yield
    except httpx.TransportError as exc:
        raise ExecutionError(f"the Prefect API at {api_url} stopped answering ({type(exc).__name__}: {exc})") from None


@contextmanager
def _on(record: ServedRecord) -> Iterator[None]:
    if dispatch_over_http():
        with _answering(record.api_url):
            yield
    else:
        with _answering(record.api_url), client_settings(record.api_url, heartbeat=False):
            yield


def _seen(run: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(state type, name, message)`` of a flow run as the REST API returns it."""
    state = run.get("state") or {}
    kind = str(state.get("type") or run.get("state_type") or "SCHEDULED")
    return kind, str(state.get("name") or run.get("state_name") or kind.title()), str(state.get("message") or "")


def _wait_over_http(record: ServedRecord, deployment: str, flow_run_id: str, wait: float) -> Dispatched:
    deadline = time.monotonic() + wait
    with PlainApi(record.api_url) as api:
        while True:
            state, name, message = _seen(api.flow_run(flow_run_id))
            if state in TERMINAL or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
    return Dispatched(
        deployment, flow_run_id, record.flow_run_url(flow_run_id), state, name, state in TERMINAL, message
    )


def _wait(record: ServedRecord, deployment: str, flow_run_id: str, wait: float) -> Dispatched:
    if dispatch_over_http():
        return _wait_over_http(record, deployment, flow_run_id, wait)
    from prefect.client.orchestration import get_client  # noqa: PLC0415 - Prefect only when dispatching

    deadline = time.monotonic() + wait
    state, name, message = "SCHEDULED", "Scheduled", ""
    with get_client(sync_client=True) as client:
        while True:
            run = client.read_flow_run(uuid.UUID(flow_run_id))
            if run.state is not None:
                state, name = run.state.type.value, run.state.name or run.state.type.value
                message = run.state.message or ""
            if state in TERMINAL or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
    url = record.flow_run_url(flow_run_id)
    return Dispatched(deployment, flow_run_id, url, state, name, state in TERMINAL, message)


def observe(record: ServedRecord, deployment: str, flow_run_id: str, *, wait: float = 0.0) -> Dispatched:
    """A flow run started earlier, as it stands now (waiting up to ``wait`` seconds for it to end)."""
    with _on(record):
        return _wait(record, deployment, flow_run_id, wait)


def _start(record: ServedRecord, deployment: str, parameters: Mapping[str, Any], wait: float) -> Dispatched:
    # None means "the deployment's own default", which an explicit null would override.
    given = {name: value for name, value in parameters.items() if value is not None}
    if dispatch_over_http():
        with _on(record), PlainApi(record.api_url) as api:
            made = api.create_run(deployment, given)
            return _wait(record, deployment, str(made["id"]), wait)
    from prefect.client.schemas.objects import FlowRun  # noqa: PLC0415
    from prefect.deployments import run_deployment  # noqa: PLC0415

    with _on(record):
        run = run_deployment(deployment, parameters=given, timeout=0, as_subflow=False)
        assert isinstance(run, FlowRun)  # sync call outside any event loop
        return _wait(record, deployment, str(run.id), wait)


def dispatch_recheck(
    record: ServedRecord, *, feed: str | None = None, wait: float = 120.0, full: bool = False
) -> Dispatched:
    """Start the recheck deployment for the served session (``full``: every auditor); wait up to ``wait`` s."""
    # ``full`` only when asked: a deployment made before rechecks could be full still takes the rest.
    parameters = {"session_dir": record.session_dir, "feed": feed, "full": True if full else None}
    return _start(record, record.recheck, parameters, wait)


def dispatch_rerun(
    record: ServedRecord, *, task: str, asked_by: str, feed: str | None = None, wait: float = 120.0
) -> Dispatched:
    """Start the plan deployment in mode ``rerun`` from ``task`` (ADR 0019 §7); wait up to ``wait`` seconds."""
    parameters = {"session_dir": record.session_dir, "mode": "rerun", "rerun_from": task, "asked_by": asked_by}
    return _start(record, record.plan, {**parameters, "feed": feed}, wait)


def dispatch_repair(
    record: ServedRecord,
    *,
    task: str,
    assumes: str,
    worker_key: str | None,
    feed: str | None = None,
    wait: float = 120.0,
) -> Dispatched:
    """Start the repair deployment for one task of the served session; wait up to ``wait`` seconds."""
    parameters = {
        "session_dir": record.session_dir,
        "task": task,
        "assumes": assumes,
        "worker_key": worker_key,
        "feed": feed,
    }
    return _start(record, record.repair, parameters, wait)


def pending_work(session: Session) -> tuple[str, list[str]]:
    """``(ledger head, tasks not done)`` of a loaded session: what a resume key is made of."""
    runner = session.runner
    if runner is None:
        return "", []
    return runner.ledger.head, sorted(name for name, state in runner.states().items() if state != "done")


def dispatch_resume(
    record: ServedRecord, session: Session, *, feed: str | None = None, wait: float = 120.0, origin: str = "cli"
) -> Dispatched:
    """Start (or find) the resume of ``session``'s current ledger head; wait up to ``wait`` seconds.

    ``session`` is the served session as the caller loaded it (with its registry): its ledger head
    and unfinished tasks make the idempotency key, so asking twice on one head is one run.
    """
    head, pending = pending_work(session)
    trigger = ResumeTrigger(record.plan, {"feed": feed} if feed is not None else {}, origin=origin)

    def start(create: Create | None = None) -> dict[str, Any]:
        return trigger(
            session_id=record.session_id, session_dir=record.session_dir, ledger_head=head, stale=pending, create=create
        )

    if dispatch_over_http():
        with _on(record), PlainApi(record.api_url) as api:

            def create(deployment: str, parameters: dict[str, Any], key: str, tags: list[str]) -> tuple[str, str]:
                made = api.create_run(deployment, parameters, idempotency_key=key, tags=tags)
                return str(made["id"]), _seen(made)[0]

            found = start(create)
            return _wait(record, record.plan, found["flow_run_id"], wait)
    with _on(record):
        found = start()
        return _wait(record, record.plan, found["flow_run_id"], wait)


def dispatched_report(record: ServedRecord, done: Dispatched) -> RunReport:
    """The report a completed dispatched run published (ADR 0008), read from ``record``'s API."""
    from contextmesh.orchestration.run_report import read_report, read_report_over_http  # noqa: PLC0415

    if dispatch_over_http():
        return read_report_over_http(record.api_url, done.flow_run_id, url=done.url)
    with _on(record):
        return read_report(done.flow_run_id, url=done.url)


def configured_record(session_dir: Path, api_url: str, names: Mapping[str, str] | None = None) -> ServedRecord:
    """The work-pool deployments on ``api_url`` of this session, as a record for it.

    ``names`` maps plan, recheck and repair to ``<flow>/<deployment>``: by default those of
    ``deployments/prefect.yaml``; a project's are named after it and the session (``contextmesh
    deploy``). A work-pool deployment has no serving process and so no served record;
    ``--deployment`` on the CLI names it instead. The three deployments must exist and default
    their ``session_dir`` to this directory — a deployment of another session is refused, naming it.
    """
    from prefect.client.orchestration import get_client  # noqa: PLC0415
    from prefect.exceptions import ObjectNotFound  # noqa: PLC0415

    session_id, _, _ = peek(str(session_dir))
    names = names or {"plan": PLAN_DEPLOYMENT, "recheck": RECHECK_DEPLOYMENT, "repair": REPAIR_DEPLOYMENT}
    with _answering(api_url), client_settings(api_url, heartbeat=False), get_client(sync_client=True) as client:
        for role, name in names.items():
            try:
                deployment = client.read_deployment_by_name(name)
            except ObjectNotFound:
                raise ExecutionError(
                    f"no deployment {name!r} on {api_url}: deploy this session first (`contextmesh deploy` for a "
                    "project, deployments/prefect.yaml for the bundled demo)"
                ) from None
            named = deployment.parameters.get("session_dir")
            if not isinstance(named, str) or Path(named).resolve() != session_dir.resolve():
                raise ExecutionError(
                    f"deployment {name!r} ({role}) on {api_url} serves session_dir {named!r}, not {session_dir}"
                )
    return ServedRecord(
        session_id,
        str(session_dir.resolve()),
        api_url,
        names["plan"],
        names["recheck"],
        names["repair"],
        "run-deployment",
        os.getpid(),
    )

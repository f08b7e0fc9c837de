"""A project's three deployments — plan, recheck, repair — named after the project and its session.

ADR 0009 §4: the flows are ``contextmesh-plan``, ``contextmesh-recheck`` and ``contextmesh-repair``;
each deployment is named ``<prefix>-<first 8 hex digits of the session id>``, so two projects (or two
sessions of one project) on one Prefect server never share one. The entrypoints are the project's
own ``flows/plan.py:plan``, ``flows/recheck.py:recheck`` and ``flows/repair.py:repair`` (``contextmesh
init`` writes them), which bind the registry from the project's ``contextmesh.toml``: no parameter
names a module, and the world the auditors read is the project's own ``[settings]``.

* :func:`served_deployments` — the three as the deployments ``contextmesh serve`` runs from one
  process (each flow run a subprocess in the project root), the recheck on the project's interval;
* :func:`serve_project` — ``contextmesh serve``: the three served from this process, with the
  session's served record written while they run;
* :func:`deploy_to_pool` — the same three registered on the project's process work pool
  (``contextmesh deploy``), the pool created when missing, the code pulled from the project root.

Prefect is imported only inside the functions, after the command has set its environment.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextmesh.core.errors import ExecutionError
from contextmesh.orchestration.flow_bodies import PLAN_FLOW, RECHECK_FLOW, REPAIR_FLOW
from contextmesh.orchestration.recheck_schedules import recheck_schedules
from contextmesh.orchestration.served_record import ServedRecord, peek

if TYPE_CHECKING:
    from prefect import Flow
    from prefect.deployments.runner import RunnerDeployment

    from contextmesh.project.project import Project

__all__ = [
    "ENTRYPOINTS",
    "ProjectDeployments",
    "deploy_to_pool",
    "deployment_name",
    "identify",
    "serve_project",
    "served_deployments",
    "served_flows",
]

ENTRYPOINTS = {
    "plan": ("flows/plan.py:plan", PLAN_FLOW),
    "recheck": ("flows/recheck.py:recheck", RECHECK_FLOW),
    "repair": ("flows/repair.py:repair", REPAIR_FLOW),
}


def deployment_name(prefix: str, session_id: str) -> str:
    """``<prefix>-<first 8 hex digits of the session id>``."""
    digits = "".join(c for c in session_id.lower() if c in "0123456789abcdef")[:8]
    return f"{prefix}-{digits}"


@dataclass(frozen=True)
class ProjectDeployments:
    """Where one session of a project is deployed: its id, directory and the three full names."""

    project: str
    session_id: str
    session_dir: Path
    name: str

    def full(self, role: str) -> str:
        """``<flow>/<deployment>`` of ``role`` (plan, recheck or repair)."""
        return f"{ENTRYPOINTS[role][1]}/{self.name}"

    def record(self, api_url: str, pid: int, trigger: str = "run-deployment") -> ServedRecord:
        """The served record that sends ``recheck``, ``resume`` and ``repair`` of this session here."""
        return ServedRecord(
            self.session_id,
            str(self.session_dir),
            api_url,
            self.full("plan"),
            self.full("recheck"),
            self.full("repair"),
            trigger,
            pid,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "project": self.project,
            "session_id": self.session_id,
            "session_dir": str(self.session_dir),
            "deployments": {role: self.full(role) for role in ENTRYPOINTS},
        }


def _check_entrypoints(project: Project) -> None:
    for role, (entrypoint, _) in ENTRYPOINTS.items():
        if not (project.root / entrypoint.split(":", 1)[0]).is_file():
            raise ExecutionError(
                f"{project.root / entrypoint.split(':', 1)[0]}: the {role} entrypoint of project {project.name!r} "
                "is missing; `contextmesh init DIR` writes flows/ (it adds missing files to a project and "
                "overwrites none)"
            )


def identify(project: Project, session_dir: Path) -> ProjectDeployments:
    """The deployments of ``session_dir`` (a session with a plan) of ``project``."""
    _check_entrypoints(project)
    session_id, _, _ = peek(str(session_dir))
    return ProjectDeployments(
        project.name, session_id, session_dir.resolve(), deployment_name(project.deploy.prefix, session_id)
    )


def _options(project: Project, where: ProjectDeployments, role: str) -> dict[str, Any]:
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy  # noqa: PLC0415

    tags = [f"cm.session:{where.session_id}", f"cm.project:{project.name}"]
    parameters: dict[str, Any] = {"session_dir": str(where.session_dir)}
    options: dict[str, Any] = {"name": where.name, "tags": tags}
    if role == "plan":
        parameters["mode"] = "run"
    if role == "recheck":
        parameters["resume_deployment"] = where.full("plan")
        # Every interval a watching recheck, every FULL_EVERY intervals a full one (ADR 0019).
        options["schedules"] = recheck_schedules(project.deploy.recheck_interval)
        # A recheck that comes due while one runs is cancelled, not queued: a backlog would only
        # audit the same facts again and hold up repairs and resumes behind it.
        options["concurrency_limit"] = ConcurrencyLimitConfig(
            limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW
        )
    options["parameters"] = parameters
    return options


def served_flows(project: Project) -> dict[str, Flow[..., Any]]:
    """The project's three flows by role, loaded from its entrypoints (working directory: the root)."""
    from prefect.flows import load_flow_from_entrypoint  # noqa: PLC0415

    if Path.cwd().resolve() != project.root:
        raise ExecutionError(f"serving project {project.name!r} runs in its root {project.root}, not {Path.cwd()}")
    return {role: load_flow_from_entrypoint(entrypoint) for role, (entrypoint, _) in ENTRYPOINTS.items()}


def served_deployments(
    project: Project, where: ProjectDeployments, flows: dict[str, Flow[..., Any]] | None = None
) -> list[RunnerDeployment]:
    """The three deployments for Prefect's runner (``runner_loop``); the caller's working directory must be the root."""
    from prefect.deployments.runner import RunnerDeployment  # noqa: PLC0415

    flows = flows or served_flows(project)
    made: list[RunnerDeployment] = []
    for role in ENTRYPOINTS:
        deployment = flows[role].to_deployment(**_options(project, where, role))
        assert isinstance(deployment, RunnerDeployment)  # sync, outside an event loop
        made.append(deployment)
    return made


def _ensure_pool(name: str) -> None:
    from prefect.client.orchestration import get_client  # noqa: PLC0415
    from prefect.client.schemas.actions import WorkPoolCreate  # noqa: PLC0415
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound  # noqa: PLC0415

    with get_client(sync_client=True) as client:
        try:
            pool = client.read_work_pool(name)
        except ObjectNotFound:
            with contextlib.suppress(ObjectAlreadyExists):  # another deploy made it meanwhile
                client.create_work_pool(WorkPoolCreate(name=name, type="process"))
            return
    if pool.type != "process":
        raise ExecutionError(
            f"work pool {name!r} is of type {pool.type!r}; a project deploys to a process work pool "
            "([deploy] work_pool in contextmesh.toml names another)"
        )


def deploy_to_pool(project: Project, where: ProjectDeployments) -> list[str]:
    """Register the three deployments on the project's process work pool; their ids."""
    from prefect import Flow  # noqa: PLC0415
    from prefect.deployments.runner import RunnerDeployment  # noqa: PLC0415

    _ensure_pool(project.deploy.work_pool)
    ids = []
    for role, (entrypoint, _) in ENTRYPOINTS.items():
        # A sync call outside an event loop: Prefect's sync/async dispatch returns the value itself.
        flow = Flow.from_source(source=str(project.root), entrypoint=entrypoint)
        assert isinstance(flow, Flow)
        deployment = flow.to_deployment(work_pool_name=project.deploy.work_pool, **_options(project, where, role))
        assert isinstance(deployment, RunnerDeployment)
        ids.append(str(deployment.apply()))
    return ids


def serve_project(project: Project, session_dir: Path, *, say: Callable[[str], None], limit: int = 4) -> int:
    """Serve ``project``'s three deployments for ``session_dir`` from this process until SIGTERM or Ctrl-C.

    The API is ``PREFECT_API_URL`` when configured (checked to answer), else the managed server,
    started and kept running. While this runs, the session's served record sends ``contextmesh
    recheck|repair|resume`` (and the MCP server) to these deployments; it is removed on the way out.
    """
    from contextmesh.orchestration import local_server as server  # noqa: PLC0415
    from contextmesh.orchestration import served_record as served  # noqa: PLC0415
    from contextmesh.orchestration.deployed import require_api  # noqa: PLC0415
    from contextmesh.orchestration.settings import client_settings, prepare_environment  # noqa: PLC0415
    from contextmesh.orchestration.stack_dumps import dump_stacks_on_signal  # noqa: PLC0415

    prepare_environment()
    dump_stacks_on_signal()  # `kill -USR1 <pid>`: where every thread and asyncio task is (issue 20)
    where = identify(project, session_dir)
    api_url = server.configured_api_url()
    if api_url:
        require_api(api_url)
    else:
        info = server.start(keep=True)
        api_url = info.api_url
        say(f"using the managed Prefect server at {info.ui_url} (stop it with `contextmesh server stop`)")
    os.environ["PREFECT_API_URL"] = api_url  # the runner's flow-run subprocesses inherit it
    os.chdir(project.root)  # the runner starts each flow run here: the entrypoints are flows/<name>.py
    from contextmesh.orchestration.reactor import RUNNER_POLL_WHEN_WARM, Reactor, react_seconds, reacts, warm_runs  # noqa: PLC0415
    from contextmesh.orchestration.run_watch import RunWatch, finish_seconds, start_seconds  # noqa: PLC0415
    from contextmesh.orchestration.runner_loop import serve_deployments  # noqa: PLC0415
    from contextmesh.orchestration.watched import auditor_files  # noqa: PLC0415

    tick, warm, react = react_seconds(), warm_runs(), reacts()  # a bad setting is refused before anything is registered
    watch = RunWatch(start_seconds(), finish_seconds())  # a stuck in-process run is failed (issue 20)
    with client_settings(api_url, heartbeat=True):
        flows = served_flows(project)
        deployments = served_deployments(project, where, flows)
        # Registered before the served record appears, so a dispatch that reads the record finds
        # them; the runner applies them again (an upsert) when it starts.
        ids: dict[str, uuid.UUID] = {}
        for role, deployment in zip(ENTRYPOINTS, deployments, strict=True):
            applied = deployment.apply()
            assert isinstance(applied, uuid.UUID)  # sync, outside an event loop
            ids[role] = applied
        files = auditor_files(project.root, dict(project.settings))
        reactor = Reactor(
            session_id=where.session_id,
            session_dir=where.session_dir,
            api_url=api_url,
            flows=flows,
            deployments=ids,
            files=files,
            interval=project.deploy.recheck_interval,
            say=say,
            limit=limit,
            tick=tick,
            warm=warm,
            react=react,
            watch=watch,
        )
        served.remember(where.record(api_url, os.getpid()))
        reactor.start()
        watched = ", ".join(path.name for path in files) or "no file"
        say(
            f"serving project {project.name!r} session {where.session_id} as {where.name} on {api_url}; a recheck "
            f"starts when evidence arrives or {watched} changes, and every {project.deploy.recheck_interval:g} s"
        )
        try:
            # prefetch_seconds=0 as in deployments/serve.py (ADR 0016): no run is claimed before it is due.
            # With warm runs the reactor runs them all; the runner keeps the schedules (ADR 0017).
            runner_poll: dict[str, Any] = {"query_seconds": RUNNER_POLL_WHEN_WARM} if warm else {}
            # Not prefect.serve, which registers on Prefect's global loop and can deadlock a warm run (runner_loop).
            serve_deployments(deployments, limit=limit, prefetch_seconds=0, **runner_poll)
        finally:
            reactor.stop()
            served.forget(where.session_id, pid=os.getpid())
            server.drain_workers()
            say("stopped; schedules paused, served record removed")
    return 0

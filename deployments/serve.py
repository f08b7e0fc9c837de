"""Serve one session's deployments from one process — the laptop way to run ContextMesh on Prefect.

    python deployments/serve.py --session DIR [--feed FILE] [--interval SECONDS]
                                [--trigger run-deployment|automation] [--limit N]

Three deployments, each run in a fresh subprocess by Prefect's runner:

* ``contextmesh-plan/plan``       on demand: ``mode=run`` or ``mode=resume``;
* ``contextmesh-recheck/recheck`` on an interval (default every 600 s): every standing auditor;
* ``contextmesh-repair/repair``   on demand: one task onto new ground and a registered key.

A recheck that commits a disproof starts the plan deployment in resume mode. By default the
recheck flow does it itself (``run_deployment`` under an idempotency key); with
``--trigger automation`` this script instead creates a Prefect automation on the
``contextmesh.assumption.disproved`` event of this session, and deletes it when it stops.

The Prefect API is ``$PREFECT_API_URL`` when set, else the managed local server (started and
kept running; ``contextmesh server stop`` stops it). While it runs, the session's served record
(``$CONTEXTMESH_HOME/served/<session id>.json``) tells ``contextmesh recheck|repair|resume`` and
the MCP launcher to dispatch here. SIGTERM or Ctrl-C stops it: schedules pause, the automations
it created and the served record are removed.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # flows/ and registry/ live beside this folder

from contextmesh.core.errors import ContextMeshError  # noqa: E402
from contextmesh.orchestration import local_server as server  # noqa: E402
from contextmesh.orchestration import served_record as served  # noqa: E402
from contextmesh.orchestration.settings import prepare_environment  # noqa: E402
from contextmesh.orchestration.stack_dumps import dump_stacks_on_signal  # noqa: E402

PLAN, RECHECK, REPAIR = "contextmesh-plan/plan", "contextmesh-recheck/recheck", "contextmesh-repair/repair"
EVENT = "contextmesh.assumption.disproved"


def _say(text: str) -> None:
    """A line for the person running this script (stderr: stdout stays free for Prefect's own output)."""
    sys.stderr.write(f"serve.py: {text}\n")
    sys.stderr.flush()


def automation_name(session_id: str) -> str:
    """The automation this script creates for a session (``--trigger automation``)."""
    return f"contextmesh-resume-{session_id}"


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="serve.py", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--session", type=Path, required=True, metavar="DIR", help="the session directory to serve")
    parser.add_argument("--feed", type=Path, help="the advisory feed the demo auditor reads")
    parser.add_argument("--interval", type=float, default=600.0, metavar="SECONDS", help="recheck schedule")
    parser.add_argument("--trigger", choices=("run-deployment", "automation"), default="run-deployment")
    parser.add_argument("--limit", type=int, default=4, help="flow runs this process runs at once")
    args = parser.parse_args(argv)
    if not args.interval > 0:
        parser.error(f"--interval {args.interval}: the recheck interval is a positive number of seconds")
    if args.limit < 1:
        parser.error(f"--limit {args.limit}: at least one flow run must be able to run")
    return args


def _api_url() -> str:
    named = os.environ.get("PREFECT_API_URL")
    if named:
        return named
    info = server.start(keep=True)
    _say(f"using the managed Prefect server at {info.ui_url} (stop it with `contextmesh server stop`)")
    return info.api_url


def _delete_automations(name: str) -> int:
    from prefect.client.orchestration import get_client  # noqa: PLC0415 - after the environment is set

    with get_client(sync_client=True) as client:
        found = client.read_automations_by_name(name)
        for automation in found:
            client.delete_automation(automation.id)
    return len(found)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the session's deployments until SIGTERM or Ctrl-C."""
    args = _parse(argv)
    session_dir = args.session.resolve()
    feed = str(args.feed.resolve()) if args.feed else None
    prepare_environment()
    dump_stacks_on_signal()  # `kill -USR1 <pid>`: where every thread and asyncio task is (issue 20)
    try:
        api_url = _api_url()
    except ContextMeshError as exc:
        _say(str(exc))
        return 1
    os.environ["PREFECT_API_URL"] = api_url  # before Prefect is imported: the runner's subprocesses inherit it
    os.chdir(ROOT)  # the runner starts each flow run here: entrypoints are flows/<name>.py

    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy  # noqa: PLC0415
    from prefect.events import DeploymentEventTrigger  # noqa: PLC0415

    from contextmesh.orchestration.flow_bodies import peek  # noqa: PLC0415
    from contextmesh.orchestration.recheck_schedules import recheck_schedules  # noqa: PLC0415
    from flows.plan_flow import plan  # noqa: PLC0415
    from flows.recheck_flow import recheck  # noqa: PLC0415
    from flows.repair_flow import repair  # noqa: PLC0415

    try:
        session_id, plan_name, _ = peek(str(session_dir))
    except ContextMeshError as exc:
        _say(str(exc))
        return 1
    base = {"session_dir": str(session_dir), "feed": feed}
    tags = [f"cm.session:{session_id}", f"cm.plan:{plan_name}"]
    triggers = []
    if args.trigger == "automation":
        _delete_automations(automation_name(session_id))  # left by a serve that was killed
        triggers.append(
            DeploymentEventTrigger(
                name=automation_name(session_id),
                expect={EVENT},
                match={"prefect.resource.id": "contextmesh.assumption.*", "contextmesh.session": session_id},
                parameters={"session_dir": "{{ event.payload.session_dir }}", "mode": "resume", "feed": feed},
            )
        )
    deployments = [
        plan.to_deployment(name="plan", parameters={**base, "mode": "run"}, tags=tags, triggers=triggers or None),
        recheck.to_deployment(
            name="recheck",
            schedules=recheck_schedules(args.interval),  # and a full recheck every 10 intervals (ADR 0019)
            parameters={**base, "resume_deployment": PLAN if args.trigger == "run-deployment" else ""},
            tags=tags,
            # A recheck that comes due while one runs is turned away, not queued: a backlog of rechecks
            # would only audit the same facts again, and would hold up repairs and resumes behind it.
            # The server cancels it; the recheck that ran relabels it Skipped (ADR 0016).
            concurrency_limit=ConcurrencyLimitConfig(limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW),
        ),
        repair.to_deployment(name="repair", parameters=base, tags=tags),
    ]
    record = served.ServedRecord(
        session_id, str(session_dir), api_url, PLAN, RECHECK, REPAIR, args.trigger, os.getpid()
    )
    from contextmesh.orchestration.reactor import RUNNER_POLL_WHEN_WARM, Reactor, react_seconds, reacts, warm_runs  # noqa: PLC0415
    from contextmesh.orchestration.run_watch import RunWatch, finish_seconds, start_seconds  # noqa: PLC0415
    from contextmesh.orchestration.runner_loop import serve_deployments  # noqa: PLC0415

    try:
        tick, warm, react = react_seconds(), warm_runs(), reacts()
        watch = RunWatch(start_seconds(), finish_seconds())  # a stuck in-process run is failed (issue 20)
    except ContextMeshError as exc:
        _say(str(exc))
        return 1
    # Registered before the served record appears, so a CLI or MCP dispatch that reads the record
    # finds the deployments; the runner applies them again (an upsert) when it starts.
    ids = {
        role: deployment.apply() for role, deployment in zip(("plan", "recheck", "repair"), deployments, strict=True)
    }
    # The served process itself reacts (ADR 0017): new evidence or a changed feed starts a recheck at
    # once, and every due run of these deployments runs here, warm, instead of in a fresh subprocess.
    reactor = Reactor(
        session_id=session_id,
        session_dir=session_dir,
        api_url=api_url,
        flows={"plan": plan, "recheck": recheck, "repair": repair},
        deployments=ids,
        files=[Path(feed)] if feed else [],
        interval=args.interval,
        say=_say,
        limit=args.limit,
        tick=tick,
        warm=warm,
        react=react,
        watch=watch,
    )
    served.remember(record)
    reactor.start()
    watching = f"evidence arrives or {Path(feed).name} changes" if feed else "evidence arrives"
    _say(
        f"serving session {session_id} ({session_dir}) on {api_url}; a recheck starts when {watching}, "
        f"and every {args.interval:g} s"
    )
    try:
        # prefetch_seconds=0: the runner proposes Pending when it fetches a run, and the recheck limit
        # is checked then, so a recheck fetched 10 s early (Prefect's default) was turned away while
        # the slot would have been free by its due time (ADR 0016). On-demand runs are due at once.
        # With warm runs the reactor runs every due run; the runner keeps the schedules (ADR 0017).
        runner_poll: dict[str, Any] = {"query_seconds": RUNNER_POLL_WHEN_WARM} if warm else {}
        # Not prefect.serve: it registers the deployments on Prefect's global loop, which can deadlock
        # a warm run that starts meanwhile (issue 20, runner_loop); this registers them on our own.
        serve_deployments(deployments, limit=args.limit, prefetch_seconds=0, **runner_poll)
    finally:
        reactor.stop()
        served.forget(session_id, pid=os.getpid())
        if args.trigger == "automation":
            _delete_automations(automation_name(session_id))
        server.drain_workers()
        _say("stopped; schedules paused, served record removed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The commands that run the plan or Prefect: execute, server, recheck, resume, repair, serve, demo advisory.

Writes to a session run on its served deployments when ``deployments/serve.py`` serves it (or, with
``--deployment``, on the work-pool deployments of ``PREFECT_API_URL``), else in this process. A
Prefect API is checked to answer before anything is dispatched to it, so an unreachable one is one
refusal naming the address, not a connection traceback. Prefect is imported only here, lazily.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextmesh.cli.failure import UsageError, writing
from contextmesh.cli.reads import open_session
from contextmesh.core.errors import ExecutionError
from contextmesh.session.plan_check import plan_of

if TYPE_CHECKING:
    from types import ModuleType

    from contextmesh.execution.plan import Plan, RecheckReport, RoundReport
    from contextmesh.orchestration.deployed import Dispatched
    from contextmesh.orchestration.served_record import ServedRecord
    from contextmesh.session.session import Session

__all__ = ["advisory", "execute", "recheck", "repair", "resume", "serve", "server"]

DEFAULT_WAIT = 120.0


def execute(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh execute``: the demo plan, its ground broken, repaired, rerun — on Prefect or in-process."""
    from contextmesh.cli.render import render_walkthrough  # noqa: PLC0415

    if args.executor == "prefect":
        return _execute_on_prefect(args)
    from contextmesh.demo.execute import run_session_walkthrough, run_walkthrough  # noqa: PLC0415
    from contextmesh.execution.in_process import InProcessExecutor  # noqa: PLC0415

    executor = InProcessExecutor(width=args.threads)
    if args.session is not None:
        session = open_session(args)
        walk = run_session_walkthrough(session, feed=args.feed, executor=executor)
        return walk.to_dict(), render_walkthrough(walk) + f"\n(session generation {session.generation})"
    walk = run_walkthrough(feed=args.feed, executor=executor)
    return walk.to_dict(), render_walkthrough(walk)


def _execute_on_prefect(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.cli.render import render_walkthrough  # noqa: PLC0415
    from contextmesh.cli.walkthroughs import execute_on_prefect  # noqa: PLC0415 - Prefect only there

    walk, note = execute_on_prefect(args.session, args.feed, threads=args.threads)
    text = render_walkthrough(walk, urls=walk.urls)
    if walk.session_dir is not None:
        text += f"\n(session {walk.session_dir})"
    return walk.to_dict(), text + (f"\n{note}" if note else "")


def server(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh server start|status|stop``."""
    from contextmesh.orchestration import local_server as managed  # noqa: PLC0415

    if args.action == "start":
        info = managed.start()
        return info.to_dict(), f"Prefect server running (pid {info.pid}) · UI {info.ui_url} · API {info.api_url}"
    if args.action == "stop":
        stopped = managed.stop()
        return {
            "stopped": stopped
        }, "stopped the managed Prefect server" if stopped else "no managed server was running"
    state = managed.status()
    return state.to_dict(), (
        f"running · UI {state.info.ui_url}"
        if state.running and state.info is not None
        else f"not running: {state.reason}"
    )


# -- writes to a session: on its served deployments when serve.py runs for it, else in this process --


def _served_record(args: argparse.Namespace) -> ServedRecord | None:
    """Where this write runs, by :func:`~contextmesh.orchestration.write_target.served_target`'s rule."""
    if args.local:
        return None  # decided without importing Prefect's client, which a core-only install lacks
    try:
        from contextmesh.orchestration.write_target import served_target  # noqa: PLC0415
    except ImportError as exc:
        raise ExecutionError(
            f"looking for a served deployment needs Prefect's client, which is not installed ({exc}); "
            "pass --local to run in this process"
        ) from None
    return served_target(args.session, "deployment" if args.deployment else "auto")


def _wait(args: argparse.Namespace) -> float:
    if args.wait is not None and args.local:
        raise UsageError(
            f"--wait {args.wait:g} bounds a dispatched run; --local runs in this process",
            prog=f"contextmesh {args.command}",
            path="--wait",
        )
    return DEFAULT_WAIT if args.wait is None else float(args.wait)


def _feed_text(args: argparse.Namespace) -> str | None:
    return str(args.feed.resolve()) if args.feed is not None else None


def _write(
    args: argparse.Namespace,
    what: str,
    dispatch: Callable[[ModuleType, ServedRecord, float], Dispatched],
    here: Callable[[Session], tuple[dict[str, Any], str]],
) -> tuple[Any, str]:
    """One write: ``dispatch`` (given :mod:`~contextmesh.orchestration.deployed`) to the served
    deployments when there are any, else ``here`` in this process."""
    wait = _wait(args)
    record = _served_record(args)
    if record is not None:
        from contextmesh.orchestration import deployed  # noqa: PLC0415 - Prefect only when dispatching

        return _after_dispatch(args, dispatch(deployed, record, wait), what, record)
    session = open_session(args)
    data, text = here(session)
    return {"executor": "in-process", **data, "generation": session.generation}, text + "\n" + _states_line(session)


def _reporting(step: Callable[[Plan], RecheckReport | RoundReport]) -> Callable[[Session], tuple[dict[str, Any], str]]:
    """An in-process write that runs ``step`` on the plan and reports the engine's report."""

    def here(session: Session) -> tuple[dict[str, Any], str]:
        report = session.apply(lambda s: step(plan_of(s)))
        return {"report": report.to_dict()}, _summary(plan_of(session), report, "(in-process)")

    return here


def _summary(runner: Plan, report: RecheckReport | RoundReport, how: str) -> str:
    """A recheck (what it audited, what it disproved, what fell) or a resume: every task, what it did and why."""
    from contextmesh.cli.render import render_round_rows  # noqa: PLC0415
    from contextmesh.execution.plan import RecheckReport  # noqa: PLC0415 - the engine, only when it ran
    from contextmesh.execution.run_reasons import recheck_message, round_rows  # noqa: PLC0415

    if isinstance(report, RecheckReport):
        return f"recheck {how}: " + recheck_message(runner, report).removeprefix("recheck ")
    return render_round_rows(f"resume {how}", report.round, round_rows(runner, report))


def _after_dispatch(args: argparse.Namespace, done: Dispatched, what: str, record: ServedRecord) -> tuple[Any, str]:
    data: dict[str, Any] = {"dispatched": done.to_dict(), "executor": "deployment"}
    lines = [f"{what} ran as a flow run of {done.deployment}: {done.state_name} · {done.url}"]
    if not done.finished:
        lines.append(f"still {done.state_name.lower()} after {_wait(args):g} s; watch it at the address above")
    elif what == "recheck" and (done.state == "CANCELLED" or done.state_name == "Skipped"):
        # The recheck deployment runs one at a time and turns a new run away while one is running
        # (CANCEL_NEW, relabelled Skipped afterwards): the running recheck audits the same facts.
        lines.append(f"not run: {done.message or 'another recheck of this session was running'}")
    elif done.state != "COMPLETED":
        raise ExecutionError(f"{what} flow run ended {done.state_name}: {done.message or 'no message'} ({done.url})")
    else:
        session = open_session(args)
        runner = plan_of(session)
        data["states"] = runner.states()
        data["blocked"] = runner.blocked()
        data["generation"] = session.generation
        lines.append(_dispatched_story(record, done, runner, what))
        lines.append(_states_line(session))
    return data, "\n".join(lines)


def _dispatched_story(record: ServedRecord, done: Dispatched, runner: Plan, what: str) -> str:
    """A finished resume's report, task by task with reasons; any other run's state message."""
    if what != "resume":
        return f"  {done.message}" if done.message else ""
    from contextmesh.execution.plan import RoundReport  # noqa: PLC0415
    from contextmesh.orchestration.deployed import dispatched_report  # noqa: PLC0415

    published = dispatched_report(record, done).report
    if not isinstance(published, RoundReport):
        raise ExecutionError(f"the resume flow run published a {type(published).__name__}, not a round ({done.url})")
    return _summary(runner, published, "(deployment)")


def _next_step(session: Session, args: argparse.Namespace) -> str:
    """What to run after a repair: another repair while some ground is still fallen, else resume."""
    from contextmesh.execution.task import ground_stands  # noqa: PLC0415

    runner = plan_of(session)
    fallen = [task.name for task in runner.tasks.values() if not ground_stands(runner.graph, task)]
    where = f"--session {args.session}"
    if fallen:
        return f"next: repair {', '.join(fallen)} too (their ground fell), then `contextmesh resume {where}`"
    todo = [name for name, state in runner.states().items() if state != "done"]
    return f"next: `contextmesh resume {where}` runs {', '.join(todo) or 'nothing'} (nothing runs until then)"


def _states_line(session: Session) -> str:
    runner = plan_of(session)
    blocked = runner.blocked()
    states = ", ".join(f"{name} {'blocked' if name in blocked else state}" for name, state in runner.states().items())
    return f"session generation {session.generation} · round {runner.round}: {states}"


def recheck(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh recheck``: every standing auditor once."""
    return _write(
        args,
        "recheck",
        lambda deployed, record, wait: deployed.dispatch_recheck(record, feed=_feed_text(args), wait=wait),
        _reporting(lambda plan: plan.recheck()),
    )


def resume(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh resume``: only stale and pending work whose ground stands."""

    def dispatch(deployed: ModuleType, record: ServedRecord, wait: float) -> Dispatched:
        return deployed.dispatch_resume(record, open_session(args), feed=_feed_text(args), wait=wait)  # type: ignore[no-any-return]

    return _write(args, "resume", dispatch, _reporting(lambda plan: plan.run(include_failed=False)))


def repair(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh repair TASK --assumes …``: new ground and, optionally, another registered key."""

    def here(session: Session) -> tuple[dict[str, Any], str]:
        task = session.apply(lambda s: plan_of(s).repair(args.task, assumes=args.assumes, worker_key=args.worker_key))
        text = f"repaired {task.name} (in-process): now {task.worker_key or 'its callable'} on '{task.assumes}'"
        return {"task": task.name, "worker_key": task.worker_key, "assumes": task.assumes}, text

    data, text = _write(
        args,
        f"repair of {args.task}",
        lambda deployed, record, wait: deployed.dispatch_repair(
            record, task=args.task, assumes=args.assumes, worker_key=args.worker_key, feed=_feed_text(args), wait=wait
        ),
        here,
    )
    if "dispatched" in data and not data["dispatched"]["finished"]:
        return data, text  # not committed yet: the next step is to wait for it
    step = _next_step(open_session(args), args)
    return {**data, "next": step}, f"{text}\n{step}"


def serve(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh serve``: check what serve.py needs, then become it (``exec``)."""
    import os  # noqa: PLC0415

    from contextmesh.orchestration.deployed import require_api  # noqa: PLC0415
    from contextmesh.orchestration.local_server import configured_api_url  # noqa: PLC0415
    from contextmesh.orchestration.served_record import peek  # noqa: PLC0415

    script = (Path(args.project) / "deployments" / "serve.py").resolve()
    if not script.is_file():
        raise ExecutionError(
            f"{script} does not exist: `contextmesh serve` runs the deployment's deployments/serve.py — run it "
            "from the project root or name it with --project DIR"
        )
    peek(str(args.session))  # a broken session is refused here, naming the file, before serve.py starts a server
    api_url = configured_api_url()
    if api_url:
        require_api(api_url)
    argv = [sys.executable, str(script), "--session", str(args.session.resolve())]
    argv += ["--interval", f"{args.interval:g}", "--trigger", args.trigger]
    if args.feed is not None:
        argv += ["--feed", str(args.feed.resolve())]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)  # noqa: S606 - replaces this process: serve.py is the deployment's code, never imported


def advisory(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh demo advisory publish|withdraw PACKAGE [TEXT] --feed FILE``."""
    from contextmesh.demo.auth import publish, withdraw  # noqa: PLC0415

    prog = "contextmesh demo advisory"
    if getattr(args, "rounds", None) is not None:
        raise UsageError(
            f"--rounds {args.rounds} is the demo's; an advisory builds no graph", prog=prog, path="--rounds"
        )
    if args.action == "publish":
        if args.text is None:
            raise UsageError("publish needs the advisory's text after the package", prog=prog, path="text")
        with writing(f"the advisory feed {args.feed}"):
            advisories = publish(args.feed, args.package, args.text)
        text = f"published an advisory for {args.package} to {args.feed}"
    else:
        if args.text is not None:
            raise UsageError(
                "withdraw takes no text: it removes every advisory for the package", prog=prog, path="text"
            )
        with writing(f"the advisory feed {args.feed}"):
            advisories = withdraw(args.feed, args.package)
        text = f"withdrew every advisory for {args.package} from {args.feed}"
    return {"feed": str(args.feed), "advisories": advisories}, text

"""The commands that run a project's plan: ``run``, ``recheck``, ``resume`` and ``repair``.

Each finds the project (:mod:`contextmesh.cli.projects`) and its session, then runs in one of
three places, by one rule:

* **dispatched** — the session is served (``contextmesh serve``'s record under
  ``$CONTEXTMESH_HOME/served/``, or ``--deployment``: the work-pool deployments on
  ``PREFECT_API_URL``): ``recheck``, ``resume`` and ``repair`` start a flow run of its deployment
  and wait up to ``--wait`` seconds; ``run`` always runs here;
* **a flow run here** — the project's ``[run] executor`` is ``prefect`` (the default): the round is
  one Prefect flow run started by this process, on ``PREFECT_API_URL`` or the managed local server;
* **in this process** — ``--local``, or ``[run] executor = "in-process"`` (the bundled demo): the
  plan runs with the in-process executor, no Prefect at all.

Whatever ran it, the command prints that run's own report — what executed, what was cached, what
is blocked and why, what was disproved — with the flow run's address, and exits 0 when the run
succeeded. A report is the flow body's own return value, or for a dispatched run the report
artifact the run published (ADR 0008), never one re-derived from the ledger; the ledger only adds
why each task ran (:func:`~contextmesh.execution.run_reasons.round_rows`). A dispatched run's state
message (ADR 0016) is printed under its address, and ``repair`` ends with the next step.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextmesh.cli.failure import UsageError
from contextmesh.cli.projects import Using, note, reader, session_of, using
from contextmesh.core.errors import ExecutionError
from contextmesh.session.plan_check import plan_of

if TYPE_CHECKING:
    from contextmesh.execution.calls import Executor
    from contextmesh.execution.reports import RecheckReport, RoundReport
    from contextmesh.orchestration.deployed import Dispatched
    from contextmesh.orchestration.served_record import ServedRecord
    from contextmesh.session.session import Session

__all__ = ["recheck", "repair", "resume", "run"]

DEFAULT_WAIT = 120.0


def _prog(args: argparse.Namespace) -> str:
    return f"contextmesh {args.command}"


def _wait(args: argparse.Namespace) -> float:
    wait = getattr(args, "wait", None)
    if wait is not None and args.local:
        raise UsageError(
            f"--wait {wait:g} bounds a dispatched run; --local runs in this process", prog=_prog(args), path="--wait"
        )
    return DEFAULT_WAIT if wait is None else float(wait)


def _served(args: argparse.Namespace, where: Using, directory: Path) -> ServedRecord | None:
    """The deployments a write is dispatched to, by :func:`~contextmesh.orchestration.write_target.served_target`.

    With ``--deployment``, a project's are the ones ``contextmesh deploy`` named after it and the
    session; the bundled demo's are ``deployments/prefect.yaml``'s.
    """
    if args.local:
        return None  # decided without importing Prefect's client, which a core-only install lacks
    try:
        from contextmesh.orchestration.write_target import served_target  # noqa: PLC0415
    except ImportError as exc:
        raise ExecutionError(
            f"looking for a served deployment needs Prefect's client, which is not installed ({exc}); "
            "pass --local to run in this process"
        ) from None
    on_pool = getattr(args, "deployment", False)
    names = None
    if on_pool and not where.bundled:
        from contextmesh.orchestration.project_deployments import identify  # noqa: PLC0415

        named = identify(where.project, directory)
        names = {role: named.full(role) for role in ("plan", "recheck", "repair")}
    return served_target(directory, "deployment" if on_pool else "auto", names=names)


def _feed(args: argparse.Namespace) -> str | None:
    """The bundled demo's ``--feed`` for its deployments (a project refuses ``--feed``: it has [settings])."""
    feed = getattr(args, "feed", None)
    return None if feed is None else str(feed.resolve())


def _here_on_prefect(args: argparse.Namespace, where: Using) -> bool:
    return not args.local and where.project.executor == "prefect"


def _in_process(args: argparse.Namespace) -> Executor:
    from contextmesh.execution.in_process import InProcessExecutor  # noqa: PLC0415

    return InProcessExecutor(width=getattr(args, "threads", 4))


def _states_line(session: Session) -> str:
    runner = plan_of(session)
    blocked = runner.blocked()
    states = ", ".join(f"{name} {'blocked' if name in blocked else state}" for name, state in runner.states().items())
    return f"session generation {session.generation} · round {runner.round}: {states}"


def _after(args: argparse.Namespace, where: Using, data: dict[str, Any], lines: list[str]) -> tuple[Any, str]:
    """The session as the run left it, read with no registry (its keys need not resolve here)."""
    session = reader(args, where)
    runner = plan_of(session)
    data.update(
        project=where.describe(),
        session_dir=str(session.directory),
        states=runner.states(),
        blocked=runner.blocked(),
        generation=session.generation,
    )
    return data, "\n".join([*lines, _states_line(session)])


def _report_text(args: argparse.Namespace, where: Using, report: RoundReport | RecheckReport, url: str | None) -> str:
    """The run's report; a round lists every task with what it did and why (its reason off the ledger)."""
    from contextmesh.cli.render import render_recheck, render_round  # noqa: PLC0415
    from contextmesh.execution.reports import RoundReport  # noqa: PLC0415
    from contextmesh.execution.run_reasons import round_rows  # noqa: PLC0415

    runner = plan_of(reader(args, where))
    if isinstance(report, RoundReport):
        return render_round(report, url=url, rows=round_rows(runner, report))
    receipts = runner.ledger.receipts()
    reasons = {r["ground"]["assumption_id"]: r["reason"] for r in receipts}
    return render_recheck(report, url=url, reasons=reasons)


def _dispatched(
    args: argparse.Namespace, where: Using, record: ServedRecord, what: str, done: Dispatched
) -> tuple[Any, str]:
    data: dict[str, Any] = {"executor": "deployment", "dispatched": done.to_dict()}
    lines = [f"{what} ran as a flow run of {done.deployment}: {done.state_name} · {done.url}"]
    if not done.finished:
        lines.append(f"still {done.state_name.lower()} after {_wait(args):g} s; watch it at the address above")
        data["project"] = where.describe()
        return data, "\n".join(lines)
    if what == "recheck" and (done.state == "CANCELLED" or done.state_name == "Skipped"):
        # The recheck deployment runs one at a time and turns a new run away while one is running
        # (CANCEL_NEW, relabelled Skipped afterwards): the running recheck audits the same facts.
        lines.append(f"not run: {done.message or 'another recheck of this session was running'}")
        return _after(args, where, data, lines)
    if done.state != "COMPLETED":
        raise ExecutionError(f"{what} flow run ended {done.state_name}: {done.message or 'no message'} ({done.url})")
    if done.message and what != "resume":  # a resume's rows say the same, task by task
        lines.append(f"  {done.message}")
    if what in ("recheck", "resume"):
        from contextmesh.orchestration.runs_here import dispatched_report  # noqa: PLC0415

        report = dispatched_report(record, done.flow_run_id)
        data["report"] = report.to_dict()
        lines.append(_report_text(args, where, report, done.url))
    return _after(args, where, data, lines)


def _round(
    args: argparse.Namespace,
    kind: str,
    here: Callable[[Session], RoundReport | RecheckReport],
    dispatch: Callable[[Any, ServedRecord, float], Dispatched] | None,
) -> tuple[Any, str]:
    """One round, recheck or resume: dispatched, a flow run here, or in this process."""
    wait = _wait(args)
    where = using(args)
    directory = session_of(args, where)
    record = _served(args, where, directory) if dispatch is not None else None
    if record is not None and dispatch is not None:
        from contextmesh.orchestration import deployed  # noqa: PLC0415 - Prefect only when dispatching

        return _dispatched(args, where, record, kind, dispatch(deployed, record, wait))
    if _here_on_prefect(args, where):
        from contextmesh.orchestration.runs_here import run_here  # noqa: PLC0415 - Prefect only here

        full = bool(getattr(args, "full", False))
        done = run_here(kind, directory, where.project.registry(), threads=args.threads, full=full)  # type: ignore[arg-type]
        if done.note:
            note(args, f"contextmesh: {done.note}")
        assert done.report is not None
        data = {"executor": "prefect", "flow_run": done.to_dict(), "report": done.report.to_dict()}
        return _after(args, where, data, [_report_text(args, where, done.report, done.url)])
    session = where.project.open_session(directory, executor=_in_process(args))
    report = session.apply(here)
    data = {"executor": "in-process", "report": report.to_dict()}
    return _after(args, where, data, [_report_text(args, where, report, None)])


def run(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh run``: one plan round — every pending, stale or failed task whose ground stands."""
    return _round(args, "run", lambda s: plan_of(s).run(), None)


def recheck(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh recheck [--full]``: the auditors whose watched slice changed (``--full``: every
    standing one) once; a disproof is committed with its receipt."""
    full = bool(getattr(args, "full", False))
    return _round(
        args,
        "recheck",
        lambda s: plan_of(s).recheck(full=full),
        lambda deployed, record, wait: deployed.dispatch_recheck(record, feed=_feed(args), wait=wait, full=full),
    )


def resume(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh resume``: only the stale and pending work whose ground stands."""

    def dispatch(deployed: Any, record: ServedRecord, wait: float) -> Dispatched:
        where = using(args)
        session = where.project.open_readonly(session_of(args, where))
        return deployed.dispatch_resume(record, session, feed=_feed(args), wait=wait)  # type: ignore[no-any-return]

    return _round(args, "resume", lambda s: plan_of(s).run(include_failed=False), dispatch)


def repair(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh repair TASK --assumes …``: new ground and, optionally, another registered key;
    it ends with the next step (another repair while some ground is still fallen, else resume)."""
    data, text = _repair(args)
    if data.get("executor") == "deployment" and not data["dispatched"]["finished"]:
        return data, text  # not committed yet: the next step is to wait for it
    step = _next_step(args)
    return {**data, "next": step}, f"{text}\n{step}"


def _next_step(args: argparse.Namespace) -> str:
    """What to run after a repair, named as this command was (``--project``, ``--session``)."""
    from contextmesh.execution.task import ground_stands  # noqa: PLC0415

    runner = plan_of(reader(args, using(args)))
    fallen = [task.name for task in runner.tasks.values() if not ground_stands(runner.graph, task)]
    named = [(flag, getattr(args, flag, None)) for flag in ("project", "session")]
    resume = " ".join(["contextmesh resume", *(f"--{flag} {value}" for flag, value in named if value is not None)])
    if fallen:
        return f"next: repair {', '.join(fallen)} too (their ground fell), then `{resume}`"
    todo = [name for name, state in runner.states().items() if state != "done"]
    return f"next: `{resume}` runs {', '.join(todo) or 'nothing'} (nothing runs until then)"


def _repair(args: argparse.Namespace) -> tuple[Any, str]:
    wait = _wait(args)
    where = using(args)
    directory = session_of(args, where)
    what = f"repair of {args.task}"
    record = _served(args, where, directory)
    if record is not None:
        from contextmesh.orchestration import deployed  # noqa: PLC0415

        done = deployed.dispatch_repair(
            record, task=args.task, assumes=args.assumes, worker_key=args.worker_key, feed=_feed(args), wait=wait
        )
        return _dispatched(args, where, record, what, done)
    if _here_on_prefect(args, where):
        from contextmesh.orchestration.runs_here import run_here  # noqa: PLC0415

        asked = {"task": args.task, "assumes": args.assumes, "worker_key": args.worker_key}
        done_here = run_here("repair", directory, where.project.registry(), repair=asked)
        if done_here.note:
            note(args, f"contextmesh: {done_here.note}")
        result = done_here.result
        text = f"repaired {result['task']} as flow run {done_here.url}: now {result['worker_key']} on '{args.assumes}'"
        data = {"executor": "prefect", "flow_run": done_here.to_dict(), **_repaired(result, args.assumes)}
        return _after(args, where, data, [text])
    session = where.project.open_session(directory)
    task = session.apply(lambda s: plan_of(s).repair(args.task, assumes=args.assumes, worker_key=args.worker_key))
    text = f"repaired {task.name} (in-process): now {task.worker_key or 'its callable'} on '{task.assumes}'"
    data = {"executor": "in-process", "task": task.name, "worker_key": task.worker_key, "assumes": task.assumes}
    return _after(args, where, data, [text])


def _repaired(result: dict[str, Any], assumes: str) -> dict[str, Any]:
    return {"task": result["task"], "worker_key": result["worker_key"], "assumes": assumes}

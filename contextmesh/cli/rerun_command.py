"""``contextmesh rerun-from TASK [--dry-run]``: re-run a task whose output is suspect, and all it feeds.

First the preview — the blast radius: the task and every done task downstream of it, plus any stale
or pending work a resume would run anyway, minus what is blocked — computed from the session as it
is, changing nothing (``--dry-run`` stops there). Then exactly that runs, where ``resume`` runs
(:mod:`contextmesh.cli.plan_rounds`): as a flow run of the plan deployment (mode ``rerun``) when
the session is served or deployed, else one flow run here on Prefect, else (``--local``, a project
whose rounds run in-process) in this process — and the command says which. The round's ledger
starts with a ``requested`` entry naming who asked (``cli:<login name>``). The command ends by
comparing what executed with the prediction (ADR 0019 §7).
"""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from contextmesh.cli.plan_rounds import (
    _after,
    _dispatched,
    _feed,
    _here_on_prefect,
    _in_process,
    _report_text,
    _served,
    _wait,
)
from contextmesh.cli.projects import Using, note, reader, session_of, using
from contextmesh.core.errors import ExecutionError
from contextmesh.execution.reports import RoundReport
from contextmesh.execution.rerun import RerunPreview
from contextmesh.session.plan_check import plan_of

__all__ = ["asked_by", "rerun_from"]


def asked_by() -> str:
    """Who asks, as the ledger records it: ``cli:<login name>`` (``cli:unknown`` when there is none)."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no login name and no $USER: a container's nameless uid
        name = "unknown"
    return f"cli:{name or 'unknown'}"


def _preview_lines(preview: RerunPreview) -> list[str]:
    lines = [
        f"RERUN FROM {preview.task} · {len(preview.predicted)} task(s) would run: {', '.join(preview.predicted)}",
        f"  closure ({len(preview.closure)}): {', '.join(preview.closure)}",
    ]
    if preview.also:
        lines.append(f"  also runnable now, so it runs too: {', '.join(preview.also)}")
    lines += [f"  blocked {name} — {reason}" for name, reason in preview.blocked.items()]
    return lines


def _verdict(preview: RerunPreview, report: RoundReport) -> tuple[bool, str]:
    exact = sorted(report.executed) == sorted(preview.predicted)
    if exact:
        return True, f"re-ran exactly the predicted {len(preview.predicted)} task(s)"
    missing = sorted(set(preview.predicted) - set(report.executed))
    extra = sorted(set(report.executed) - set(preview.predicted))
    return (
        False,
        f"differs from the prediction: not run {', '.join(missing) or '-'}; also ran {', '.join(extra) or '-'}",
    )


def rerun_from(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh rerun-from TASK [--dry-run]``: the preview, then exactly that as one round."""
    where = using(args)
    directory = session_of(args, where)
    preview = plan_of(reader(args, where)).rerun_preview(args.task)  # refuses an unknown or unfinished task
    lines = _preview_lines(preview)
    if args.dry_run:
        data = {"dry_run": True, "preview": preview.to_dict(), "project": where.describe()}
        return data, "\n".join([*lines, "dry run: nothing ran, nothing changed"])
    who = asked_by()
    data, text, report = _run(args, where, directory, who)
    if report is None:  # a dispatched run still running when --wait ran out
        return {**data, "preview": preview.to_dict(), "asked_by": who}, "\n".join([*lines, text])
    exact, said = _verdict(preview, report)
    data.update(preview=preview.to_dict(), asked_by=who, exact=exact)
    return data, "\n".join([*lines, text, said])


def _run(
    args: argparse.Namespace, where: Using, directory: Any, who: str
) -> tuple[dict[str, Any], str, RoundReport | None]:
    """The rerun as a dispatched flow run, a flow run here, or in this process — saying which."""
    wait = _wait(args)
    record = _served(args, where, directory)
    if record is not None:
        from contextmesh.orchestration import deployed  # noqa: PLC0415 - Prefect only when dispatching
        from contextmesh.orchestration.runs_here import dispatched_report  # noqa: PLC0415

        done = deployed.dispatch_rerun(record, task=args.task, asked_by=who, feed=_feed(args), wait=wait)
        data, text = _dispatched(args, where, record, f"rerun from {args.task}", done)
        if not (done.finished and done.state == "COMPLETED"):
            return data, text, None
        found = dispatched_report(record, done.flow_run_id)
        if not isinstance(found, RoundReport):
            raise ExecutionError(f"the rerun flow run {done.url} published no round report")
        data["report"] = found.to_dict()
        return data, f"{text}\n{_report_text(args, where, found, done.url)}", found
    if _here_on_prefect(args, where):
        from contextmesh.orchestration.runs_here import run_here  # noqa: PLC0415

        asked = {"rerun_from": args.task, "asked_by": who}
        ran = run_here("rerun", directory, where.project.registry(), threads=args.threads, repair=asked)
        if ran.note:
            note(args, f"contextmesh: {ran.note}")
        if not isinstance(ran.report, RoundReport):
            raise ExecutionError(f"the rerun flow run {ran.url} returned no round report")
        data = {"executor": "prefect", "flow_run": ran.to_dict(), "report": ran.report.to_dict()}
        return (*_after(args, where, data, [_report_text(args, where, ran.report, ran.url)]), ran.report)
    session = where.project.open_session(directory, executor=_in_process(args))
    report = session.apply(lambda s: plan_of(s).rerun_from(args.task, asked_by=who))
    data = {"executor": "in-process", "report": report.to_dict()}
    lines = [f"ran in this process (no Prefect): {_report_text(args, where, report, None)}"]
    return (*_after(args, where, data, lines), report)

"""``contextmesh init``, ``evidence add`` and ``blast-radius``: making a project, telling it what was
observed, and asking what a ground's fall would take down.

* ``init DIR [--name NAME]`` writes a runnable project (:func:`contextmesh.project.scaffold.init_project`);
* ``evidence add TEXT --source ORIGIN [--title T]`` records an observation from the source that lives
  at ``ORIGIN`` (found, or recorded with that origin and title), committed through the session; the
  project's auditors decide what it means at the next recheck, which ``contextmesh serve`` starts at
  once (the command names that run, or says nothing serves the session);
* ``blast-radius ASSUMPTION`` reports, changing nothing, what would fall with an assumption named by
  its id, its statement, a task whose ground it is, or a part of its statement that names exactly one
  live assumption; it reads the session with no registry.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from contextmesh.cli.failure import UsageError, writing
from contextmesh.cli.projects import Using, reader, using, writer
from contextmesh.core.errors import NotFoundError

if TYPE_CHECKING:
    from contextmesh.core.model import AssumptionRecord
    from contextmesh.session.session import Session

__all__ = ["blast_radius", "evidence_add", "init", "pick_assumption"]

_LISTED = 5


def init(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh init DIR [--name NAME]``."""
    from contextmesh.project.scaffold import init_project  # noqa: PLC0415

    with writing(f"the project {args.dir}"):
        made = init_project(args.dir, name=args.name)
    if not made.written:
        text = f"{made.root} already holds project {made.name!r} whole; nothing written"
    else:
        text = f"made project {made.name!r} in {made.root}: {len(made.written)} files"
        if made.kept:
            text += f" written, {len(made.kept)} already there"
        text += (
            f"\n  plan: {made.module}/plan.py · world: world.json · documents: docs/ · flows: flows/"
            f"\n  next: cd {args.dir} && contextmesh run"
        )
    return {"project": made.to_dict()}, text


def evidence_add(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh evidence add TEXT --source ORIGIN|ID [--title T] | --document FILE [--name N]``."""
    if (args.source is None) == (args.document is None):
        raise UsageError(
            "name where the observation came from: --source ORIGIN (or a source's id), or --document FILE; one of them",
            prog="contextmesh evidence add",
            path="--source",
        )
    for option, needs in (("title", "source"), ("name", "document")):
        if getattr(args, option) is not None and getattr(args, needs) is None:
            raise UsageError(f"--{option} goes with --{needs}", prog="contextmesh evidence add", path=f"--{option}")
    where = using(args)
    session = writer(args, where)
    if args.document is not None:
        return _evidence_from_document(args, where, session)
    from contextmesh.cli.evidence_command import what_next  # noqa: PLC0415
    from contextmesh.project.sourced_evidence import add_evidence  # noqa: PLC0415

    since = time.time()
    added = session.apply(lambda s: add_evidence(s.graph, args.text, origin=args.source, title=args.title))
    data = {**added.to_dict(), "project": where.describe(), "generation": session.generation}
    source = "new source" if added.source_created else "source"
    stored = "recorded" if added.submission.created else "already recorded (the same observation)"
    text = (
        f"evidence {added.submission.node.id} {stored}\n"
        f"  from {source} {added.source.label!r} ({args.source}) · session generation {session.generation}"
    )
    if added.submission.created:
        data["next"], line = what_next(session, where, since)
        text += f"\n{line}"
    return data, text


def _evidence_from_document(args: argparse.Namespace, where: Using, session: Session) -> tuple[Any, str]:
    """The document ingested as the observation's source (a revision if it changed), then the evidence."""
    from contextmesh.belief.evidence import submit  # noqa: PLC0415
    from contextmesh.cli.evidence_command import document_source, what_next  # noqa: PLC0415

    since = time.time()
    document = document_source(session, args)
    stored = submit(session.graph, args.text, document.source_id)
    changed = stored.created or document.wrote
    if changed:  # the same observation from the same document again commits nothing
        with writing(f"the session {session.directory}"):
            session.commit()
    data = {
        "evidence_id": stored.node.id,
        "evidence_created": stored.created,
        "source_id": document.source_id,
        "document_wrote": document.wrote,
        "superseded": document.superseded,
        "stale": document.stale,
        "project": where.describe(),
        "generation": session.generation,
    }
    lines = [
        f"evidence {stored.node.id} {'recorded' if stored.created else 'already recorded (the same observation)'}",
        f"  from document {document.source_id}" + (" (a new revision)" if document.wrote else ""),
    ]
    lines += [f"  superseded: {claim}" for claim in document.superseded]
    if document.stale:
        lines.append(f"  now stale: {', '.join(document.stale)} (`contextmesh resume` re-runs them)")
    if changed:
        lines.append(f"  session generation {session.generation}")
        data["next"], line = what_next(session, where, since)
        lines.append(line)
    else:
        lines.append("  nothing changed; nothing committed")
    return data, "\n".join(lines)


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def pick_assumption(session: Session, named: str) -> AssumptionRecord:
    """The assumption ``named`` means, tried in this order: its id, its whole statement (case and
    spacing aside), a task of the plan (its current ground), a part of exactly one live statement."""
    records = session.graph.assumptions
    if named in records:
        return records[named]
    wanted = _norm(named)
    for record in records.values():
        if _norm(record.statement) == wanted:
            return record
    runner = session.runner
    if runner is not None and named in runner.tasks:
        return records[runner.tasks[named].assumption_id]
    live = [r for r in records.values() if r.status != "rejected"]
    partial = [r for r in live if wanted in _norm(r.statement)]
    if len(partial) == 1:
        return partial[0]
    if not partial:
        known = "; ".join(r.statement for r in live[:_LISTED]) or "none"
        raise NotFoundError(
            f"no assumption is named {named!r} (by id, statement, task, or part of one live statement); "
            f"live ones: {known}"
        )
    shown = "; ".join(f"{r.id} ({r.statement})" for r in partial[:_LISTED])
    raise NotFoundError(f"{named!r} is part of {len(partial)} live statements, so it is ambiguous: {shown}; give more")


def blast_radius(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh blast-radius ASSUMPTION``: what its fall would take down; nothing changes."""
    from contextmesh.belief.assumptions import Assumptions  # noqa: PLC0415
    from contextmesh.cli.render import render_invalidation  # noqa: PLC0415

    where = using(args)
    session = reader(args, where)
    record = pick_assumption(session, args.assumption)
    report = Assumptions(session.graph).blast_radius(record.id)
    data = {
        **report.to_dict(),
        "status": record.status,
        "project": where.describe(),
        "generation": session.generation,
    }
    head = f"ASSUMPTION {record.id} [{record.status}] v{record.version}"
    return data, head + "\n" + render_invalidation(report, dry_run=True)

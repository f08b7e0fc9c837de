"""``contextmesh ingest PATH… --session DIR``: a user's documents into a session, incrementally.

The session is created when ``DIR`` is absent or empty, else loaded with the registry of the
nearest project at or above the working directory, else the bundled example project's (so a saved
session of it keeps its plan's keys). One run is one increment
(:func:`~contextmesh.belief.ingestion.ingest`): unchanged files cost a hash each and commit nothing;
new, revised and deleted files are written, the claims a revision no longer makes are superseded,
and every task of the session's plan whose decision fell with them is made stale (the next
``resume`` re-runs exactly those). ``--dry-run`` says what would be added, superseded and
invalidated and writes nothing. ``--embedder SPEC`` (default: the nearest project's ``[project]
embedder``, else hashed) embeds the new text; a session made by another embedder is refused
(ADR 0031). ``--suggest-entities FILE`` writes an editable entities file (and
its candidate list beside it) from the documents instead.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextmesh.cli.failure import UsageError, writing

if TYPE_CHECKING:
    from contextmesh.belief.ingestion import Ingestion
    from contextmesh.project.project import Project

__all__ = ["ingest", "render_ingestion"]


def _new_or_empty(directory: Path) -> bool:
    return not directory.exists() or (directory.is_dir() and not any(directory.iterdir()))


def _suggest(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.knowledge.candidates import suggest_entities  # noqa: PLC0415
    from contextmesh.knowledge.folder import read_documents  # noqa: PLC0415

    read = read_documents(args.paths, root=args.root, entities=args.entities)
    with writing(f"the entities file {args.suggest_entities}"):
        out, sidecar = suggest_entities(read.documents, args.suggest_entities, registered=read.registered)
    data = {"entities_file": str(out), "candidates_file": str(sidecar), "documents": len(read.documents)}
    return data, f"wrote {out} (edit it, then ingest with --entities {out}) and {sidecar}"


def _embedding_project(args: argparse.Namespace) -> Project:
    """The project whose registry opens the session and whose embedder embeds (ADR 0031): the nearest
    one at or above the working directory, else the bundled one (a saved demo session's plan);
    ``--embedder`` overrides its ``[project] embedder``."""
    from contextmesh.cli.extensions import given_settings  # noqa: PLC0415
    from contextmesh.project.bundled import bundled_project  # noqa: PLC0415
    from contextmesh.project.project import find_project  # noqa: PLC0415

    nearest = find_project()
    given = given_settings(args)
    if nearest is not None and given:
        name = next(iter(given))
        raise UsageError(
            f"--{name} is a setting of the bundled example project; project {nearest.name!r} ({nearest.file}) "
            "reads its own [settings]",
            prog="contextmesh ingest",
            path=f"--{name}",
        )
    project = nearest if nearest is not None else bundled_project(given)
    return project if args.embedder is None else project.with_embedder(args.embedder)


def ingest(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh ingest``: see the module docstring."""
    if args.suggest_entities is not None:
        if args.dry_run or args.session is not None:
            raise UsageError(
                "--suggest-entities writes a file and ingests nothing; it takes neither --session nor --dry-run",
                prog="contextmesh ingest",
                path="--suggest-entities",
            )
        return _suggest(args)
    if args.session is None:
        raise UsageError(
            "ingest needs --session DIR (a new one is created)", prog="contextmesh ingest", path="--session"
        )
    from contextmesh.core.graph import ContextGraph  # noqa: PLC0415
    from contextmesh.knowledge.resolve import Resolver  # noqa: PLC0415
    from contextmesh.project.embedding import record  # noqa: PLC0415
    from contextmesh.session.ingest_session import ingest_into  # noqa: PLC0415
    from contextmesh.session.session import Session  # noqa: PLC0415

    project = _embedding_project(args)
    created = _new_or_empty(args.session)
    if created:
        session = Session(ContextGraph(), Resolver(), embedder=project.embedder())
    else:
        session = project.open_session(args.session)  # refused when the session was built with another embedder
    result, stale = ingest_into(session, args.paths, root=args.root, entities=args.entities, dry_run=args.dry_run)
    if result.wrote and not args.dry_run:
        with writing(f"the session {args.session}"):
            if created:
                Session.create(args.session, session)
                record(args.session, project.embedder(), project.embedder_spec)
            else:
                session.commit()
    data = {**result.to_dict(), "stale_tasks": stale, "generation": session.generation, "created": created}
    return data, render_ingestion(result, stale=stale, generation=session.generation, directory=args.session)


def _drops(result: Ingestion) -> list[str]:
    """Every drop, named: one line per stage and reason, listing the items dropped for it."""
    lines = []
    for stage in result.increment.report.stages:
        by_reason: dict[str, list[str]] = {}
        for drop in stage.drops:
            by_reason.setdefault(drop.reason, []).append(drop.item)
        for reason, items in by_reason.items():
            lines.append(f"  {stage.name} dropped {len(items)} ({reason}): {', '.join(dict.fromkeys(items))}")
    return lines


def render_ingestion(result: Ingestion, *, stale: list[str], generation: int, directory: Path) -> str:
    """The documents by status, the six stages with every drop counted, and what was superseded and fell."""
    from contextmesh.cli.render import render_build  # noqa: PLC0415

    increment = result.increment
    found = increment.survey
    counts = ", ".join(f"{found.count(s)} {s}" for s in ("new", "revised", "deleted", "unchanged"))
    lines = [f"INGEST {found.root}: {counts}"]
    if not result.wrote:
        lines.append("nothing changed; nothing committed")
        return "\n".join(lines)
    lines.append(render_build(increment.report))
    lines += _drops(result)
    lines.append(f"claims: {len(increment.new_claims)} new, {len(increment.carried_claims)} carried")
    new_entities = len(increment.entities.new_entities)
    lines.append(f"entities: {new_entities} new, aliases added to {len(increment.entities.new_aliases)}")
    lines += [f"  diverges: {line}" for line in increment.divergences]
    lines += [f"  warning: {warning}" for warning in increment.warnings]
    verb = "would supersede" if result.dry_run else "superseded"
    lines += [f"{verb}: {s.document}: {s.text}" for s in result.fallout.superseded]
    fall = "would fall" if result.dry_run else "fell"
    lines += [f"{fall}: {result.fallout.why(node)}" for node in result.fallout.invalidated]
    if stale:
        lines.append(f"{'would be stale' if result.dry_run else 'now stale'}: {', '.join(stale)}")
    lines.append("dry run: nothing committed" if result.dry_run else f"committed {directory} generation {generation}")
    return "\n".join(lines)

"""``contextmesh evidence add TEXT --document FILE``: the document an observation came from, ingested.

With ``--document`` the evidence is attributed to the document itself: it is ingested as a source
(named ``--name NAME`` or by the file's own name) — a changed one is a new revision whose removed
claims are superseded, and the plan's tasks resting on them go stale — exactly as
``mesh_submit_evidence`` does with ``document``. ``project_commands.evidence_add`` decides which
origin was named; this module is the document branch, and :func:`what_next` the line both end with:
a recheck ``contextmesh serve`` started for the new evidence (its flow-run URL), or that nothing
serves the session (ADR 0017).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextmesh.cli.projects import Using
    from contextmesh.session.session import Session

__all__ = ["DocumentSource", "document_source", "what_next"]


@dataclass(frozen=True)
class DocumentSource:
    """The source node of the document's current revision, and what ingesting it changed."""

    source_id: str
    wrote: bool
    superseded: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)


def document_source(session: Session, args: argparse.Namespace) -> DocumentSource:
    """Ingest ``args.document`` into ``session`` (not committed) and name its current revision."""
    from contextmesh.knowledge.decoding import MAX_DOCUMENT_BYTES, decode_document, read_bounded  # noqa: PLC0415
    from contextmesh.knowledge.revisions import current_revisions  # noqa: PLC0415
    from contextmesh.session.ingest_session import ingest_text_into  # noqa: PLC0415

    name = args.name or args.document.name
    text = decode_document(name, read_bounded(args.document, name, MAX_DOCUMENT_BYTES))
    result, stale = ingest_text_into(session, name, text)
    return DocumentSource(
        source_id=current_revisions(session.graph)[name].id,
        wrote=result.wrote,
        superseded=[s.claim_id for s in result.fallout.superseded],
        stale=list(stale),
    )


def what_next(session: Session, where: Using, since: float) -> tuple[dict[str, Any], str]:
    """What follows evidence committed at ``since``: the serving process's recheck, or who must ask for one."""
    from contextmesh.orchestration.what_next import after_evidence  # noqa: PLC0415 - no Prefect: files only

    interval = where.project.deploy.recheck_interval
    found = after_evidence(session.session_id, since, interval=interval)
    return found.to_dict(), f"  next: {found.text}"

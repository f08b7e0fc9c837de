"""``contextmesh evidence add TEXT --session DIR``: an observation into a session, from a source or a document.

The evidence is attributed to an existing source node (``--source ID``) or to the document it came
from (``--document FILE``, named ``--name NAME`` or by the file's own name): the document is
ingested as a source — a changed one is a new revision whose removed claims are superseded, and the
plan's tasks resting on them go stale — exactly as ``mesh_submit_evidence`` does with ``document``.
The observation expresses no verdict; a ``recheck`` interprets it. The same payload again commits
nothing.
"""

from __future__ import annotations

import argparse
from typing import Any

from contextmesh.cli.failure import UsageError, writing

__all__ = ["evidence_add"]


def evidence_add(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh evidence add``: see the module docstring."""
    if (args.source is None) == (args.document is None) or (args.name is not None and args.document is None):
        raise UsageError(
            "name where the observation came from: --source ID, or --document FILE (with --name), not both",
            prog="contextmesh evidence add",
            path="--source",
        )
    from contextmesh.belief.evidence import submit  # noqa: PLC0415
    from contextmesh.cli.reads import open_session  # noqa: PLC0415
    from contextmesh.knowledge.decoding import MAX_DOCUMENT_BYTES, decode_document, read_bounded  # noqa: PLC0415
    from contextmesh.knowledge.revisions import current_revisions  # noqa: PLC0415
    from contextmesh.session.ingest_session import ingest_text_into  # noqa: PLC0415

    session = open_session(args)
    source, wrote = args.source, False
    superseded: list[str] = []
    stale: list[str] = []
    if args.document is not None:
        name = args.name or args.document.name
        text = decode_document(name, read_bounded(args.document, name, MAX_DOCUMENT_BYTES))
        result, stale = ingest_text_into(session, name, text)
        source, wrote = current_revisions(session.graph)[name].id, result.wrote
        superseded = [s.claim_id for s in result.fallout.superseded]
    stored = submit(session.graph, args.text, source)
    if stored.created or wrote:
        with writing(f"the session {args.session}"):
            session.commit()
    data = {
        "evidence_id": stored.node.id,
        "created": stored.created,
        "source_id": source,
        "superseded": superseded,
        "stale": stale,
        "generation": session.generation,
    }
    lines = [f"evidence {stored.node.id} ({'stored' if stored.created else 'already stored'}) from {source}"]
    lines += [f"superseded: {claim}" for claim in superseded]
    if stale:
        lines.append(f"now stale: {', '.join(stale)}")
    committed = stored.created or wrote
    lines.append(f"committed generation {session.generation}" if committed else "nothing changed; nothing committed")
    return data, "\n".join(lines)

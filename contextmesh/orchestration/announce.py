"""Announcing a disproof: the ``contextmesh.assumption.disproved`` event, its receipt artifact, the outbox.

A disproof is committed first (the rejection, its receipt and the ``disproved`` ledger entry, in one
generation); it is announced after the commit, so nothing is announced that did not happen. The
outbox is the committed ledger itself: every ``disproved`` entry is an announcement, identified by a
deterministic event id — ``uuid5(NAMESPACE, "<session id>|<ledger head>|<assumption id>")``, where
the ledger head is the digest the ledger had right after the disproof was recorded (the disproved
entry's own digest, which never changes). An announcement is *delivered* once its receipt artifact,
keyed ``cm-disproved-<event id>``, exists on the Prefect server: the event is emitted, the event
worker is flushed, and only then is the artifact written. When the flow run has a
:class:`~contextmesh.orchestration.resume.ResumeTrigger`, the resume is triggered (idempotent by key)
before the event, so the event's related resources name both the recheck that found the disproof
(role ``recheck``) and the resume (role ``resume``), and the receipt links to both (ADR 0016).
Every flow run that loads a session re-emits the announcements still pending, with the same id, so
re-emission is idempotent — Prefect stores an event id once and its triggers skip an id they have seen.

What this cannot do without an engine change (see the closing note of the orchestration issue): keep
a delivery mark in the session itself. The mark lives on the Prefect server, so a session moved to
a new server announces its past disproofs there once.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prefect.artifacts import create_markdown_artifact
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
from prefect.events import emit_event
from prefect.events.worker import EventsWorker

from contextmesh.formats.run_ledger import LedgerEntry, RunLedger
from contextmesh.orchestration.resume import ResumeTrigger
from contextmesh.orchestration.run_links import flow_run_url
from contextmesh.orchestration.run_logs import run_logger

__all__ = ["EVENT", "NAMESPACE", "Announcement", "Outbox", "announce_pending", "announcements", "event_id"]

EVENT = "contextmesh.assumption.disproved"
NAMESPACE = uuid.UUID("6f1d3a52-7c0e-5b8e-9d64-2a1f0c9e4b31")
MAX_RELATED = 76  # Prefect caps related resources at 100 and adds its own entries; 4 name session, evidence, runs
MAX_PAYLOAD_IDS = 1000


def event_id(session_id: str, ledger_head: str, assumption_id: str) -> uuid.UUID:
    """The deterministic id of a disproof's announcement."""
    return uuid.uuid5(NAMESPACE, f"{session_id}|{ledger_head}|{assumption_id}")


@dataclass(frozen=True)
class Announcement:
    """One committed disproof and what its event says."""

    id: uuid.UUID
    entry: LedgerEntry
    stale: tuple[str, ...]

    @property
    def receipt(self) -> dict[str, Any]:
        """The receipt the ledger entry carries."""
        assert self.entry.receipt is not None
        return self.entry.receipt

    @property
    def assumption_id(self) -> str:
        """The rejected assumption."""
        return str(self.receipt["ground"]["assumption_id"])

    @property
    def artifact_key(self) -> str:
        """The receipt artifact's key, which doubles as the delivery mark."""
        return f"cm-disproved-{self.id}"


def announcements(ledger: RunLedger, session_id: str) -> list[Announcement]:
    """Every disproof the ledger holds, oldest first, with the tasks it made stale."""
    entries = ledger.entries
    found = []
    for index, entry in enumerate(entries):
        if entry.event != "disproved" or entry.receipt is None:
            continue
        stale = [entry.task] if entry.task else []
        for follower in entries[index + 1 :]:
            if follower.event != "invalidated" or follower.round != entry.round:
                break
            if follower.task and follower.task not in stale:
                stale.append(follower.task)
        ground = entry.receipt["ground"]["assumption_id"]
        found.append(Announcement(event_id(session_id, entry.digest, ground), entry, tuple(stale)))
    return found


def _delivered(items: Sequence[Announcement]) -> set[str]:
    keys = [item.artifact_key for item in items]
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=keys)))
    return {a.key for a in found if a.key}


class Outbox:
    """One flow run's view of a session's announcements: which are delivered is asked of Prefect once.

    The first :meth:`flush` reads the delivery marks of every announcement the ledger holds; later
    flushes in the same flow run (after its own commit) emit only what appeared since, without
    another query. An announcement another writer delivered meanwhile may be emitted again — with
    the same id, so that is harmless.
    """

    def __init__(self, *, session_id: str, session_dir: str, plan: str, resume: ResumeTrigger | None = None) -> None:
        self.session_id, self.session_dir, self.plan = session_id, session_dir, plan
        self.delivered: set[str] | None = None
        self.resume = resume
        self.resumes: list[dict[str, Any]] = []

    def flush(self, ledger: RunLedger) -> list[str]:
        """Emit every announcement not yet delivered, then mark each delivered; return their event ids."""
        items = announcements(ledger, self.session_id)
        if not items:
            return []
        if self.delivered is None:
            self.delivered = _delivered(items)
        sent = []
        for item in items:
            if item.artifact_key in self.delivered:
                continue
            resumed: dict[str, Any] | None = None
            if self.resume is not None and item.stale:
                # Before the event, so the event can name the run; before the mark, so a crash here
                # re-triggers on the next flush — under the same idempotency key, onto the same run.
                resumed = self.resume(
                    session_id=self.session_id,
                    session_dir=self.session_dir,
                    ledger_head=item.entry.digest,
                    stale=item.stale,
                )
                self.resumes.append(resumed)
            resume_id = str(resumed["flow_run_id"]) if resumed else None
            _emit(item, session_id=self.session_id, session_dir=self.session_dir, plan=self.plan, resume=resume_id)
            EventsWorker.instance().wait_until_empty()  # the event left this process before the mark is written
            create_markdown_artifact(
                key=item.artifact_key,
                markdown=render_receipt(item, links=receipt_links(item, resume_id)),
                description=f"disproof of '{item.receipt['ground']['statement']}' (event {item.id})",
            )
            self.delivered.add(item.artifact_key)
            _log(item, resume_id)
            sent.append(str(item.id))
        return sent


def _log(item: Announcement, resume_id: str | None) -> None:
    logger = run_logger()
    then = f"; resume {flow_run_url(resume_id)}" if resume_id else "; no resume started by this run"
    logger.info(
        "announced the disproof of '%s' (event %s, receipt artifact %s)%s",
        item.receipt["ground"]["statement"],
        item.id,
        item.artifact_key,
        then,
    )


def receipt_links(item: Announcement, resume_id: str | None) -> list[str]:
    """Markdown links from a receipt to the recheck that found the disproof and the resume it started."""
    links = []
    found_by = (item.entry.run or {}).get("flow_run_id")
    if found_by:
        links.append(f"- **found by**: [the recheck flow run]({flow_run_url(found_by)}) `{found_by}`")
    if resume_id:
        links.append(f"- **resume**: [the resume flow run]({flow_run_url(resume_id)}) `{resume_id}`")
    return links


def announce_pending(
    ledger: RunLedger, *, session_id: str, session_dir: str, plan: str, resume: ResumeTrigger | None = None
) -> list[str]:
    """Emit every announcement of ``ledger`` not yet delivered (one query); return their event ids."""
    return Outbox(session_id=session_id, session_dir=session_dir, plan=plan, resume=resume).flush(ledger)


def _emit(item: Announcement, *, session_id: str, session_dir: str, plan: str, resume: str | None = None) -> None:
    receipt = item.receipt
    fallen = [entry["id"] for entry in receipt["invalidated"]]
    related = [
        {"prefect.resource.id": f"contextmesh.session.{session_id}", "prefect.resource.role": "session"},
        {
            "prefect.resource.id": f"contextmesh.evidence.{receipt['evidence_id']}",
            "prefect.resource.role": "evidence",
        },
    ]
    related += [
        {"prefect.resource.id": f"contextmesh.node.{node_id}", "prefect.resource.role": "invalidated"}
        for node_id in fallen[:MAX_RELATED]
    ]
    found_by = (item.entry.run or {}).get("flow_run_id")
    if found_by:
        related.append({"prefect.resource.id": f"prefect.flow-run.{found_by}", "prefect.resource.role": "recheck"})
    if resume:
        related.append({"prefect.resource.id": f"prefect.flow-run.{resume}", "prefect.resource.role": "resume"})
    emit_event(
        event=EVENT,
        resource={
            "prefect.resource.id": f"contextmesh.assumption.{item.assumption_id}",
            "prefect.resource.name": str(receipt["ground"]["statement"]),
            "contextmesh.session": session_id,
            "contextmesh.plan": plan,
        },
        related=related,
        payload={
            "session_id": session_id,
            "session_dir": session_dir,
            "plan": plan,
            "assumption_id": item.assumption_id,
            "statement": receipt["ground"]["statement"],
            "task": receipt["task"],
            "auditor": receipt["auditor"],
            "reason": receipt["reason"],
            "evidence_id": receipt["evidence_id"],
            "stale": list(item.stale),
            "blast_radius": receipt["blast_radius"],
            "invalidated": fallen[:MAX_PAYLOAD_IDS],
            "invalidated_truncated": len(fallen) > MAX_PAYLOAD_IDS,
            "preserved_count": receipt["preserved_count"],
            "preserved_digest": receipt["preserved_digest"],
            "ledger_entry": {"seq": item.entry.seq, "round": item.entry.round, "digest": item.entry.digest},
            "recheck_flow_run_id": found_by,
            "resume_flow_run_id": resume,
            "receipt_artifact": item.artifact_key,
        },
        id=item.id,
    )


def render_receipt(item: Announcement, *, links: Sequence[str] = ()) -> str:
    """The receipt as markdown, read off the ledger entry alone (``links``: lines naming its runs)."""
    receipt = item.receipt
    lines = [
        f"# Disproved: {receipt['ground']['statement']}",
        "",
        f"- **assumption**: `{item.assumption_id}`",
        f"- **task**: `{receipt['task']}` · **auditor**: `{receipt['auditor']}`",
        f"- **reason**: {receipt['reason']}",
        f"- **evidence**: `{receipt['evidence_id']}`",
        f"- **stale tasks**: {', '.join(f'`{t}`' for t in item.stale) or 'none'}",
        f"- **ledger entry**: #{item.entry.seq} (round {item.entry.round}) `{item.entry.digest}`",
        f"- **event**: `{EVENT}` id `{item.id}`",
        *links,
        "",
        f"## Fallen ({receipt['blast_radius']})",
        "",
    ]
    lines += [f"- ✗ `{entry['id']}` — {entry['chain']}" for entry in receipt["invalidated"]]
    lines += ["", f"## Preserved: {receipt['preserved_count']} (digest `{receipt['preserved_digest']}`)"]
    return "\n".join(lines)

"""A commit in three steps: stage it, write it, land it (ADR 0028).

:func:`stage_commit` runs where the session is safe to read (the caller's thread, under whatever
lock guards the session): it plans the graph's companions (ADR 0020), dumps the plan and ledger,
seals the ledger, picks the signer, drafts the manifest and takes the graph's tracked changes into
the commit. :meth:`StagedCommit.write` then runs the commit protocol (``commit_generation``) on
those bytes alone, touching nothing of the live session, so it may run on another thread while
the session answers more questions. :meth:`StagedCommit.land` (back under the lock) moves the
session to the generation that landed; :meth:`StagedCommit.give_back` returns the taken changes to
the tracker when the commit did not land, so the next commit carries them.

``Session.commit`` is the three steps run inline; :mod:`contextmesh.session.background` runs the
middle one on a thread, after an ask's reply.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from contextmesh.core.errors import InputError, SessionError
from contextmesh.execution.snapshot import dump_plan
from contextmesh.formats.run_ledger import RunLedger
from contextmesh.session.commit import commit_generation
from contextmesh.session.heads import environment_signer
from contextmesh.session.journal import CommitPlan, Staged, plan_commit
from contextmesh.session.layout import Companion, Manifest
from contextmesh.session.ledger_tree import LedgerSeal, keep, seal_ledger

if TYPE_CHECKING:
    from contextmesh.formats.signed_note import NoteSigner
    from contextmesh.session.session import Session

__all__ = ["StagedCommit", "stage_commit"]

Payload = bytes | Companion
_PLACEHOLDER = Companion("graph-" + "0" * 64 + ".json", "0" * 64, 0)


@dataclass
class StagedCommit:
    """Everything one commit writes, fixed when it was staged, and how to move the session on after it."""

    session: Session
    directory: Path
    loaded: int
    companions: dict[str, Payload]
    draft: Manifest
    plan: CommitPlan
    staged: Staged
    ledger: RunLedger | None
    seal: LedgerSeal | None
    signer: NoteSigner | None
    lock_wait: float
    pending: int  # the asks this commit carries
    published: Manifest | None = None
    written: int = 0

    @property
    def generation(self) -> int:
        """The generation this commit publishes if it lands."""
        return self.loaded + 1

    def write(self) -> None:
        """Run the commit protocol on the staged bytes (any thread); raises what ``commit_generation`` raises."""
        self.published, self.written = commit_generation(
            self.directory,
            loaded=self.loaded,
            companions=self.companions,
            manifest=self.draft,
            lock_wait=self.lock_wait,
            seal=self.seal,
            signer=self.signer,
        )

    def land(self) -> int:
        """Move the session to the generation that landed (under the session's lock); its number."""
        published = self.published
        assert published is not None, "land() follows a write() that returned"
        session = self.session
        if self.ledger is not None and self.seal is not None:
            keep(self.ledger, self.seal.frontier, self.seal.digest)  # the next commit appends to this one
        session._journal = self.plan.landed(
            session._journal, published, self.directory, session.graph, session.resolver, self.staged
        )
        session.generation = published.generation
        session.bytes_written += self.written
        session.commits += 1
        session.pending = max(0, session.pending - self.pending)
        return session.generation

    def give_back(self) -> None:
        """The commit did not land: its changes go back to the tracker, for the next commit."""
        self.staged.give_back()


def stage_commit(
    session: Session, *, lock_wait: float = 2.0, signer: NoteSigner | None = None, snapshot: bool = False
) -> StagedCommit:
    """Fix what the next commit of ``session`` writes (see the module); nothing is written yet."""
    directory = session.directory
    assert directory is not None, "the caller refused a session without a directory"
    runner = session.runner
    head = runner.ledger.head if runner is not None else None
    stored = {f.metadata["manifest"]: getattr(session, f.name) for f in fields(session) if "manifest" in f.metadata}
    stored["generation"] += 1  # the generation this commit publishes
    # Companions are named by the commit, once it has written them.
    draft = Manifest(
        **stored,
        graph=_PLACEHOLDER,
        telemetry=_PLACEHOLDER,
        resolver=_PLACEHOLDER,
        execution=None,
        runledger=None,
        ledger_head=head,
    )
    state = None if snapshot else session._journal
    try:
        plan = plan_commit(state, directory, session.graph, session.resolver)
        companions: dict[str, Payload] = dict(plan.payload)
        if runner is not None:
            companions["execution"] = dump_plan(runner)
            companions["runledger"] = runner.ledger.dump()
    except InputError as exc:  # e.g. a worker's output nested deeper than a file can hold
        raise SessionError(f"cannot commit to {directory}: the session's state cannot be written: {exc}") from None
    ledger = session.ledger
    seal = None
    if "runledger" in companions and ledger is not None:
        seal = seal_ledger(ledger, prefixes=session.generation > 0)
    return StagedCommit(
        session=session,
        directory=directory,
        loaded=session.generation,
        companions=companions,
        draft=draft,
        plan=plan,
        staged=Staged.now(session._journal, session.graph, session.resolver),
        ledger=ledger,
        seal=seal,
        signer=signer if signer is not None else environment_signer(directory),
        lock_wait=lock_wait,
        pending=session.pending,
    )

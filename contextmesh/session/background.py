"""``every-ask`` for a server: each ask's commit after its reply, asks in flight grouped (ADR 0028).

A :class:`BackgroundCheckpoints` belongs to one server and the lock that guards its session. An ask
(under that lock) counts itself pending and calls :meth:`after_ask`: with no commit in flight, the
commit is *staged* at once (:mod:`contextmesh.session.staged`: the bytes are fixed and the graph's
changes taken into it, cheap) and handed to the one background thread, which runs the unchanged
commit protocol — lock, compare-and-swap, four fsyncs, link, sweep — on those bytes alone. With a
commit in flight, the ask only stays pending: when the commit lands, one commit stages everything
pending since. A generation therefore holds one or more asks' telemetry.

Landing touches the session, so it happens under the lock: the thread takes it once its commit is
written, and any caller that holds it (the next ask, a reload check) lands a finished commit first
(:meth:`settle`). Nothing waits for the thread while holding the lock except :meth:`drain`, and the
thread marks its commit done before it asks for the lock, so the two never wait on each other.

A commit that does not land gives its changes back to the tracker and is counted as
``Session.checkpoint`` counts it (contended, conflicts, failed, ``last_skip``); the next ask stages
again. A crash between a reply and its commit loses only telemetry — the walk counters, the
resolver's new log records and learned aliases — since an ask changes nothing else.
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING

from contextmesh.core.errors import SessionError
from contextmesh.session.commit import CommitConflictError
from contextmesh.session.lock import SessionLockedError
from contextmesh.session.staged import StagedCommit, stage_commit

if TYPE_CHECKING:
    from contextmesh.session.session import Session

__all__ = ["BackgroundCheckpoints"]

# A held lock makes a background commit give up soon: the next ask stages again.
LOCK_WAIT = 0.5


class _Job:
    def __init__(self, commit: StagedCommit) -> None:
        self.commit = commit
        self.error: BaseException | None = None
        self.done = threading.Event()


class BackgroundCheckpoints:
    """One server's commits after the reply; every method but the thread's runs under ``lock``."""

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock
        self._job: _Job | None = None
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._draining = False
        self.grouped = 0  # commits that carried more than one ask

    def attach(self, session: Session) -> None:
        """Make ``session``'s every-ask checkpoints run here."""
        session.background = self

    @property
    def busy(self) -> bool:
        """True while a commit is staged and not yet landed (its manifest may already be on disk)."""
        return self._job is not None

    def after_ask(self, session: Session) -> int:
        """An ask just counted itself pending: stage its commit unless one is in flight.

        Returns the generation that will hold the ask's telemetry once its commit lands.
        """
        self.settle()
        if self._job is not None:
            return self._job.commit.generation + 1  # rides in the commit after the one in flight
        self._start(session)
        return session.generation + 1

    def settle(self) -> None:
        """Land the commit in flight if it is written; then stage the next one if asks are pending."""
        job = self._job
        if job is None or not job.done.is_set():
            return
        self._job = None
        session = job.commit.session
        if job.error is None:
            job.commit.land()
            if job.commit.pending > 1:
                self.grouped += 1
            session.last_skip = None
            if session.pending and not self._draining:
                self._start(session)
            return
        job.commit.give_back()
        _count(session, job.error)

    def drain(self) -> None:
        """Wait for the commit in flight and land it (the caller holds the lock); stage nothing more."""
        self._draining = True
        try:
            while self._job is not None:
                self._job.done.wait()
                self.settle()
        finally:
            self._draining = False

    def stop(self) -> None:
        """Drain and end the thread (a server closing)."""
        self.drain()
        if self._thread is not None:
            # Not joined: the caller holds the lock the thread may still be waiting for (to find
            # nothing left to land); it ends on this mark as soon as it gets it.
            self._queue.put(None)
            self._thread = None

    # -- the thread ----------------------------------------------------------------------------

    def _start(self, session: Session) -> None:
        job = _Job(stage_commit(session, lock_wait=LOCK_WAIT))
        self._job = job
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="contextmesh-checkpoint", daemon=True)
            self._thread.start()
        self._queue.put(job)

    def _run(self) -> None:
        while (job := self._queue.get()) is not None:
            try:
                job.commit.write()
            except BaseException as exc:  # handed to the lock holder, who counts it (never lost silently)
                job.error = exc
            job.done.set()
            with self.lock:
                try:
                    self.settle()
                except Exception as exc:  # staging the next commit failed: the next ask stages again
                    _count(job.commit.session, exc)


def _count(session: Session, error: BaseException) -> None:
    """Count a background commit that did not land, as ``Session.checkpoint`` counts one."""
    if isinstance(error, SessionLockedError):
        session.contended += 1
        session.last_skip = f"another writer held the lock: {error}"
    elif isinstance(error, CommitConflictError):
        session.conflicts += 1
        session.last_skip = str(error)
    elif isinstance(error, SessionError):
        session.failed += 1
        session.last_skip = str(error)
    elif isinstance(error, OSError):
        session.failed += 1
        session.last_skip = f"committing to {session.directory} failed: {error.filename or 'a file'}: {error}"
    else:
        session.failed += 1
        session.last_skip = f"committing to {session.directory} failed: {type(error).__name__}: {error}"

"""``every-ask`` for a server: each ask's commit after its reply, asks in flight grouped (ADR 0028).

A :class:`BackgroundCheckpoints` belongs to one server and the lock that guards its session. An ask
(under that lock) counts itself pending and calls :meth:`after_ask`, which wakes the one background
thread. The thread waits :data:`GROUP_WINDOW` for more asks, then *stages* the commit under the lock
(:mod:`contextmesh.session.staged`: the bytes are fixed and the graph's changes taken into it) and
runs the unchanged commit protocol — lock, compare-and-swap, four fsyncs, link, sweep — on those
bytes alone. Asks answered while a commit is in flight stay pending: when it lands, the next commit
carries everything pending since. A generation therefore holds one or more asks' telemetry.

Landing touches the session, so it happens under the lock: the thread takes it once its commit is
written, and any caller that holds it (the next ask, a reload check) lands a finished commit first
(:meth:`settle`). Nothing waits for the thread while holding the lock except :meth:`drain`, and the
thread marks its commit done before it asks for the lock, so the two never wait on each other.
A crash loses at most the asks of the window and of the commit in flight.

A commit that does not land gives its changes back to the tracker and is counted as
``Session.checkpoint`` counts it (contended, conflicts, failed, ``last_skip``); the next ask stages
again. A crash between a reply and its commit loses only telemetry — the walk counters, the
resolver's new log records and learned aliases — since an ask changes nothing else.
"""

from __future__ import annotations

import threading
import time
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
# How long the thread waits, once an ask wants a commit, for more asks to join it: the bound on
# the telemetry a crash can lose beyond the commit in flight, and what keeps a stream of asks from
# paying a commit's CPU each (on two loaded cores a commit's system calls alone cost an ask ~10 ms).
GROUP_WINDOW = 0.2


class _Job:
    def __init__(self, commit: StagedCommit) -> None:
        self.commit = commit
        self.error: BaseException | None = None
        self.done = threading.Event()


class BackgroundCheckpoints:
    """One server's commits after the reply; every method but the thread's runs under ``lock``."""

    def __init__(self, lock: threading.RLock, *, window: float = GROUP_WINDOW) -> None:
        self.lock = lock
        self.window = window
        self._job: _Job | None = None  # staged, being written or written and not yet landed
        self._wanted: Session | None = None  # a commit is wanted for this session, not staged yet
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._draining = False
        self._stopped = False
        self.grouped = 0  # commits that carried more than one ask

    def attach(self, session: Session) -> None:
        """Make ``session``'s every-ask checkpoints run here."""
        session.background = self

    @property
    def busy(self) -> bool:
        """True while a commit is staged and not yet landed (its manifest may already be on disk)."""
        return self._job is not None

    def after_ask(self, session: Session) -> int:
        """An ask just counted itself pending: want a commit, unless one not yet staged will carry it.

        Returns the generation that will hold the ask's telemetry once its commit lands.
        """
        self.settle()
        if self._job is not None:
            return self._job.commit.generation + 1  # rides in the commit after the one in flight
        self._want(session)
        return session.generation + 1

    def settle(self) -> None:
        """Land the commit in flight if it is written; then want the next one if asks are pending."""
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
                self._want(session)
            return
        job.commit.give_back()
        _count(session, job.error)

    def drain(self) -> None:
        """Land the commit in flight (waiting for it; the caller holds the lock) and want none more.

        What was pending and not staged stays pending: the caller commits it (a final checkpoint) or
        carries it (a controlled write's clone holds the live state, telemetry included).
        """
        self._draining = True
        try:
            self._wanted = None
            while self._job is not None:
                self._job.done.wait()
                self.settle()
        finally:
            self._draining = False

    def stop(self) -> None:
        """Drain and end the thread (a server closing)."""
        self.drain()
        self._stopped = True
        self._wake.set()  # not joined: the caller holds the lock the thread may be waiting for
        self._thread = None

    # -- the thread ----------------------------------------------------------------------------

    def _want(self, session: Session) -> None:
        if self._stopped:
            return
        self._wanted = session
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="contextmesh-checkpoint", daemon=True)
            self._thread.start()
        self._wake.set()

    def _stage(self) -> _Job | None:
        """Under the lock: stage the wanted commit, if one is still wanted."""
        session, self._wanted = self._wanted, None
        if session is None or self._job is not None or not session.pending:
            return None
        try:
            self._job = _Job(stage_commit(session, lock_wait=LOCK_WAIT))
        except Exception as exc:  # the state cannot be written: counted; the next ask tries again
            _count(session, exc)
        return self._job

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopped:
                return
            if self.window:
                time.sleep(self.window)  # asks answered meanwhile join this commit
            with self.lock:
                job = self._stage()
            if job is None:
                continue
            try:
                job.commit.write()
            except BaseException as exc:  # handed to the lock holder, who counts it (never lost silently)
                job.error = exc
            job.done.set()
            with self.lock:
                self.settle()


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

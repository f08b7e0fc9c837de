"""Commits after the reply (ADR 0028): staged under the lock, written on a thread, landed under the lock.

The commit protocol is the one every other suite here tests; these cases test what the staging
adds: asks answered while a commit is in flight reach the next generation (grouped), a staged
commit that does not land gives its changes back, a reload waits for the session's own commit, and
a writer killed with SIGKILL while asks stream and commits run behind them leaves a directory that
loads whole, with its structure untouched and no more telemetry than was asked. A test holds a
commit in flight by making its ``write`` wait on an event before running the real one.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from demo_cache import DemoSessions
from session_helpers import PREAMBLE, QUESTIONS, clone

from contextmesh.demo.saved import demo_registry, open_demo_session
from contextmesh.formats.resolver_file import dump_resolver
from contextmesh.session.background import BackgroundCheckpoints
from contextmesh.session.commit import latest_generation
from contextmesh.session.lock import WriterLock
from contextmesh.session.session import Session
from contextmesh.session.staged import StagedCommit
from contextmesh.session.telemetry import dump_structure, dump_telemetry


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    return demo_sessions.copy(tmp_path_factory.mktemp("background"))


def served(
    template: tuple[Path, Path], tmp_path: Path, *, window: float = 0.0
) -> tuple[Session, BackgroundCheckpoints, threading.RLock]:
    source, feed = template
    session = open_demo_session(clone(source, tmp_path / "session"), feed=feed, policy="every-ask")
    lock = threading.RLock()
    background = BackgroundCheckpoints(lock, window=window)
    background.attach(session)
    return session, background, lock


def state(session: Session) -> tuple[bytes, bytes, bytes]:
    return dump_structure(session.graph), dump_telemetry(session.graph), dump_resolver(session.resolver)


def on_disk(session: Session) -> Session:
    assert session.directory is not None
    return Session.load(session.directory, registry=session.registry, policy="never")


def until(lock: threading.RLock, background: BackgroundCheckpoints, done: Callable[[], bool]) -> None:
    """Settle under the lock (as every served request does) until ``done``; fail after 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with lock:
            background.settle()
            if done():
                return
        time.sleep(0.005)
    raise AssertionError("the background commit never got there")


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Hold every background commit before its real write until the event is set."""
    opened = threading.Event()
    real = StagedCommit.write

    def held(self: StagedCommit) -> None:
        if threading.current_thread().name == "contextmesh-checkpoint":
            assert opened.wait(30), "the test never opened the gate"
        real(self)

    monkeypatch.setattr(StagedCommit, "write", held)
    yield opened
    opened.set()


def test_asks_during_a_commit_in_flight_go_together_into_the_next_generation(
    template: tuple[Path, Path], tmp_path: Path, gate: threading.Event
) -> None:
    session, background, lock = served(template, tmp_path)
    loaded = session.generation
    with lock:  # the thread cannot stage while the lock is held: these three share one commit
        for question in QUESTIONS[:3]:
            session.ask(question)
            assert session.lands_in == loaded + 1
        assert session.pending == 3 and not background.busy
    until(lock, background, lambda: background.busy)  # staged, held at the gate
    with lock:
        session.ask(QUESTIONS[3])
        session.ask(QUESTIONS[4])
        assert session.lands_in == loaded + 2 and session.generation == loaded and session.pending == 5
        assert latest_generation(session.directory or Path()) == loaded  # nothing written yet
    gate.set()
    until(lock, background, lambda: session.generation == loaded + 2 and not background.busy)
    assert session.pending == 0 and background.grouped == 2
    assert state(on_disk(session)) == state(session)  # the journal replays to the live state


def test_asks_within_the_window_share_one_commit(template: tuple[Path, Path], tmp_path: Path) -> None:
    session, background, lock = served(template, tmp_path, window=1.0)
    loaded = session.generation
    for question in QUESTIONS[:4]:
        with lock:
            session.ask(question)
            assert session.lands_in == loaded + 1
    until(lock, background, lambda: session.generation > loaded and not background.busy)
    assert session.generation == loaded + 1 and session.pending == 0 and background.grouped == 1
    assert state(on_disk(session)) == state(session)


def test_a_background_commit_that_cannot_take_the_lock_gives_its_changes_back(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    session, background, lock = served(template, tmp_path)
    assert session.directory is not None
    loaded = session.generation
    with WriterLock(session.directory, wait=1.0):
        with lock:
            session.ask(QUESTIONS[0])
        until(lock, background, lambda: session.contended == 1)  # waited 0.5 s for the lock, gave up
    assert session.generation == loaded and session.pending == 1
    assert session.last_skip is not None and "another writer held the lock" in session.last_skip
    with lock:
        session.ask(QUESTIONS[1])  # wants a commit again, the first ask's counters with it
    until(lock, background, lambda: session.generation == loaded + 1 and not background.busy)
    assert session.pending == 0
    assert state(on_disk(session)) == state(session)  # nothing the failed commit held was lost


def test_a_reload_waits_for_the_sessions_own_commit_in_flight(
    template: tuple[Path, Path], tmp_path: Path, gate: threading.Event
) -> None:
    session, background, lock = served(template, tmp_path)
    loaded = session.generation
    with lock:
        session.ask(QUESTIONS[0])
    until(lock, background, lambda: background.busy)
    gate.set()
    deadline = time.monotonic() + 30
    while latest_generation(session.directory or Path()) == loaded and time.monotonic() < deadline:
        time.sleep(0.005)
    with lock:
        graph = session.graph
        assert session.refresh() is False  # its own generation: landed (or still landing), not reloaded
        background.drain()
        assert session.graph is graph and session.generation == loaded + 1


def test_a_drain_lands_the_commit_in_flight_and_leaves_the_rest_to_the_caller(
    template: tuple[Path, Path], tmp_path: Path, gate: threading.Event
) -> None:
    session, background, lock = served(template, tmp_path)
    loaded = session.generation
    with lock:
        session.ask(QUESTIONS[0])
    until(lock, background, lambda: background.busy)
    with lock:
        session.ask(QUESTIONS[1])
        threading.Timer(0.2, gate.set).start()
        session.commit()  # an inline commit waits for the one in flight, then follows it
        assert session.generation == loaded + 2 and session.pending == 0 and not background.busy
    assert state(on_disk(session)) == state(session)


CHILD = (
    PREAMBLE
    + """
import threading
from pathlib import Path
from contextmesh.demo.saved import open_demo_session
from contextmesh.session.background import BackgroundCheckpoints
from session_helpers import QUESTIONS
session = open_demo_session(Path(sys.argv[1]), feed=Path(sys.argv[2]), policy="every-ask")
lock = threading.RLock()
BackgroundCheckpoints(lock).attach(session)
asked = Path(sys.argv[3])
for index in range(100000):
    with lock:
        session.ask(QUESTIONS[index % len(QUESTIONS)])
    with asked.open("a") as out:
        out.write("x")
"""
)


def test_a_writer_killed_while_commits_run_behind_its_asks_leaves_a_whole_generation(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    source, feed = template
    rng = random.Random(2028)
    original = open_demo_session(clone(source, tmp_path / "original"), feed=feed, policy="never")
    structure = dump_structure(original.graph)
    walks_before = sum(node.walks for node in original.graph.nodes.values())
    for kill in range(8):
        directory = clone(source, tmp_path / f"killed-{kill}")
        asked = tmp_path / f"asked-{kill}"
        asked.write_text("")
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(directory), str(feed), str(asked)],
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        try:
            deadline = time.monotonic() + 60
            while latest_generation(directory) <= original.generation and time.monotonic() < deadline:
                assert child.poll() is None, "the asking process died"
                time.sleep(0.01)
            for _ in range(3):  # a reader under the stream loads a whole generation every time
                assert dump_structure(Session.load(directory, registry=demo_registry(feed)).graph) == structure
            time.sleep(rng.uniform(0.0, 0.3))
            os.kill(child.pid, signal.SIGKILL)
        finally:
            _, err = child.communicate(timeout=30)
        assert child.returncode == -signal.SIGKILL, err.decode()[-2000:]
        survivor = Session.load(directory, registry=demo_registry(feed), policy="never")
        assert survivor.generation > original.generation
        assert dump_structure(survivor.graph) == structure  # an ask changes no structure, landed or lost
        walked = sum(node.walks for node in survivor.graph.nodes.values()) - walks_before
        assert walked > 0  # some asks' telemetry landed; those after the last landed commit are lost

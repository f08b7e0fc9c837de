"""Writers, readers and checkpoints sharing one session directory.

* One writer at a time: a second writer waits its bound for the kernel lock and is then refused
  with :class:`SessionLockedError` naming the holder's pid and host.
* Compare-and-swap: two writers that loaded the same generation commit in turn; the second gets
  :class:`CommitConflictError` naming both generations, and ``Session.apply`` re-applies its
  mutation on the newer generation.
* Readers take no lock: a reader loading in a loop while a writer commits 200 generations never
  fails and sees generations only move forward — a reader that pins the writer's key too, though it
  also reads the generation before the one it loads, which the sweep takes away as the writer moves on.
* ``refresh()`` lets a long-lived session see another writer's commit.
* Checkpoint policies: ``every-ask``, ``on-exit``, ``never``, and lock contention counted with the
  work kept pending.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from demo_cache import DemoSessions
from session_helpers import (
    PREAMBLE,
    QUESTIONS,
    build_tiny_session,
    clone,
    listing,
    load_generation,
    sign_manifest,
    tiny_registry,
    touch_all,
)

from contextmesh.demo.saved import demo_registry, open_demo_session
from contextmesh.formats.graph_file import dump_graph
from contextmesh.formats.resolver_file import dump_resolver
from contextmesh.formats.signed_note import NoteSigner
from contextmesh.session import heads as heads_module
from contextmesh.session import load as load_module
from contextmesh.session.commit import CommitConflictError
from contextmesh.session.layout import MANIFEST
from contextmesh.session.load import load_directory
from contextmesh.session.lock import SessionLockedError, WriterLock
from contextmesh.session.session import Session

HOLD_LOCK = """
import os, time
from pathlib import Path
from contextmesh.session.lock import WriterLock
directory, ready, release = map(Path, sys.argv[1:4])
with WriterLock(directory, wait=10.0):
    ready.with_name("lock-ready.tmp").write_text(str(os.getpid()))
    ready.with_name("lock-ready.tmp").replace(ready)
    while not release.exists():
        time.sleep(0.005)
"""

READ_LOOP = """
import json
from pathlib import Path
from session_helpers import tiny_registry
from contextmesh.session import load as load_module
from contextmesh.session.load import load_directory
from contextmesh.formats.signed_note import NoteVerifier
directory, stop, out = map(Path, sys.argv[1:4])
pins = [NoteVerifier.from_vkey(text) for text in sys.argv[4:]]  # a verifier key given: a pinning reader
registry = tiny_registry()
seen, errors = [], []
while not stop.exists():
    try:
        seen.append(load_directory(directory, registry=registry, trusted_keys=pins).manifest.generation)
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
out.write_text(json.dumps({"seen": seen, "errors": errors}))
"""


@contextmanager
def lock_held_elsewhere(directory: Path, scratch: Path) -> Iterator[int]:
    """Another process holds the session's writer lock until the block ends; yields its pid."""
    ready, release = scratch / "lock-ready", scratch / "lock-release"
    ready.unlink(missing_ok=True)
    release.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", PREAMBLE + HOLD_LOCK, str(directory), str(ready), str(release)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the lock holder never took the lock"
            time.sleep(0.01)
        yield int(ready.read_text())
    finally:
        release.write_text("go")
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err


def snapshot(directory: Path) -> dict[str, bytes]:
    return {name: (directory / name).read_bytes() for name in listing(directory)}


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    directory = tmp_path / "session"
    build_tiny_session(directory)
    return directory


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    return demo_sessions.copy(tmp_path_factory.mktemp("demo"))


# -- one writer at a time ---------------------------------------------------------------------------


def test_a_second_writer_waits_its_bound_and_is_refused_naming_pid_and_host(tiny: Path, tmp_path: Path) -> None:
    session = Session.load(tiny, registry=tiny_registry(), policy="never")
    touch_all(session, 0)
    before = snapshot(tiny)
    with lock_held_elsewhere(tiny, tmp_path) as holder:
        started = time.monotonic()
        with pytest.raises(SessionLockedError) as refused:
            session.commit(lock_wait=0.4)
        waited = time.monotonic() - started
        assert 0.4 <= waited < 5.0
        assert f"pid {holder} on {socket.gethostname()}" in str(refused.value)
        assert "one writer at a time" in str(refused.value)
        assert session.generation == 1
        assert {k: v for k, v in snapshot(tiny).items() if k != "session.lock"} == {
            k: v for k, v in before.items() if k != "session.lock"
        }
    assert session.commit(lock_wait=0.0) == 2  # the holder is gone: the same work commits now


def test_a_lock_held_by_a_thread_of_this_process_refuses_a_second_writer_too(tiny: Path) -> None:
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with WriterLock(tiny, wait=5.0):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        session = Session.load(tiny, registry=tiny_registry(), policy="never")
        touch_all(session, 0)
        with pytest.raises(SessionLockedError, match=f"pid {os.getpid()} on "):
            session.commit(lock_wait=0.1)
    finally:
        release.set()
        holder.join(10)
    assert session.commit(lock_wait=0.0) == 2


# -- compare-and-swap -------------------------------------------------------------------------------


def record_from_b(session: Session) -> None:
    """A re-playable mutation: one ledger entry and one resolved mention."""
    assert session.runner is not None
    session.runner.ledger.record("audited", round=session.runner.round, detail="written by b")
    session.resolver.resolve("c0003")


def test_two_writers_of_one_generation_the_second_conflicts_then_apply_lands_it(tiny: Path, tmp_path: Path) -> None:
    registry = tiny_registry()
    first = Session.load(tiny, registry=registry, policy="never")
    second = Session.load(tiny, registry=registry, policy="never")
    third = Session.load(tiny, registry=registry, policy="never")  # the second writer, using apply()
    touch_all(first, 0)
    assert first.commit() == 2

    record_from_b(second)
    with pytest.raises(CommitConflictError) as conflict:
        second.commit()
    assert (conflict.value.loaded, conflict.value.found) == (1, 2)
    assert "generation 1" in str(conflict.value)
    assert "generation 2" in str(conflict.value)
    assert load_directory(tiny, registry=registry).manifest.generation == 2

    # apply() runs the mutation, conflicts, reloads generation 2 and runs it again there.
    third.apply(record_from_b)
    assert third.generation == 3
    assert third.conflicts == 1
    loaded = load_directory(tiny, registry=registry)
    assert loaded.manifest.generation == 3
    assert loaded.ledger is not None
    details = [e.detail for e in loaded.ledger.entries]
    assert details.count("written by b") == 1  # re-applied on the new generation, not merged twice
    assert "tick 0" in details  # the first writer's work survived
    for generation in (2, 3):  # no generation is ever half-written
        assert load_generation(tiny, generation, tmp_path / "scratch", registry=registry).manifest.generation == (
            generation
        )


def test_apply_gives_up_after_its_retries_when_every_attempt_conflicts(tiny: Path) -> None:
    registry = tiny_registry()
    stale = Session.load(tiny, registry=registry, policy="never")
    other = Session.load(tiny, registry=registry, policy="never")
    attempts = 0

    def mutate(session: Session) -> None:
        nonlocal attempts
        attempts += 1
        touch_all(other, attempts)
        other.commit()  # someone else always gets there first
        touch_all(session, 100 + attempts)

    with pytest.raises(CommitConflictError):
        stale.apply(mutate, retries=2)
    assert attempts == 3
    assert stale.conflicts == 3


# -- readers ---------------------------------------------------------------------------------------


KEY = NoteSigner.generate("contextmesh.test/concurrency")


@pytest.mark.parametrize("pinned", [False, True], ids=["unpinned", "pinning the writer's key"])
def test_a_reader_loading_in_a_loop_never_fails_while_200_generations_commit(
    tiny: Path, tmp_path: Path, pinned: bool
) -> None:
    stop, out = tmp_path / "stop", tmp_path / "reader.json"
    if pinned:
        sign_manifest(tiny, KEY)  # generation 1 as a writer holding the key signs it
    pins = [KEY.verifier().vkey()] if pinned else []
    reader = subprocess.Popen(
        [sys.executable, "-c", PREAMBLE + READ_LOOP, str(tiny), str(stop), str(out), *pins],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        writer = Session.load(tiny, registry=tiny_registry(), policy="never")
        time.sleep(0.5)  # let the reader start loading before the first commit
        for tick in range(200):
            touch_all(writer, tick)
            writer.commit(signer=KEY if pinned else None)
            time.sleep(0.01)  # commits are cheap; leave the (slower) reader room to see many of them
    finally:
        stop.write_text("stop")
        _, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    report = json.loads(out.read_text())
    assert report["errors"] == []
    seen = report["seen"]
    assert len(set(seen)) >= 20, f"the reader saw only {sorted(set(seen))}"
    assert seen == sorted(seen)  # a reader never goes back in time
    assert writer.generation == 201
    assert sorted(n for n in listing(tiny) if MANIFEST.match(n)) == ["session-000200.json", "session-000201.json"]


def test_a_reader_that_loses_the_race_with_the_sweep_reads_again(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Staged deterministically: between reading manifest 1 and opening its plan, two commits land and
    the second one's sweep deletes generation 1's files (its snapshot is carried, its plan rewritten).
    The reader starts again from generation 3."""
    registry = tiny_registry()
    writer = Session.load(tiny, registry=registry, policy="never")
    original = load_module.read_regular
    raced: list[str] = []

    def racing_read(directory: Path, name: str, *, limit: int) -> bytes:
        if name.startswith("execution-") and not raced:
            raced.append(name)
            for tick in range(2):
                touch_all(writer, tick)
                writer.commit()
            assert not (directory / name).exists()  # swept from under the reader
        return original(directory, name, limit=limit)

    monkeypatch.setattr(load_module, "read_regular", racing_read)
    loaded = load_directory(tiny, registry=registry)
    assert raced
    assert loaded.manifest.generation == 3


def test_a_pinning_reader_that_loses_the_previous_manifest_to_the_sweep_reads_again(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Staged: a reader pinning the key has read generation 2 and its companions; before it reads
    generation 1's manifest (which S50 checks against), two signed commits land and the sweep takes it."""
    registry = tiny_registry()
    writer = Session.load(tiny, registry=registry, policy="never")
    touch_all(writer, 0)
    writer.commit(signer=KEY)
    original = heads_module.read_regular
    raced: list[str] = []

    def racing_read(directory: Path, name: str, *, limit: int) -> bytes:
        if name == "session-000001.json" and not raced:
            raced.append(name)
            for tick in range(2):
                touch_all(writer, 1 + tick)
                writer.commit(signer=KEY)
            assert not (directory / name).exists()  # swept from under the reader
        return original(directory, name, limit=limit)

    monkeypatch.setattr(heads_module, "read_regular", racing_read)
    loaded = load_directory(tiny, registry=registry, trusted_keys=(KEY.verifier(),))
    assert raced
    assert loaded.manifest.generation == 4


def test_refresh_sees_another_writers_commit_after_refresh_and_not_before(tiny: Path) -> None:
    registry = tiny_registry()
    reader = Session.load(tiny, registry=registry, policy="never")
    writer = Session.load(tiny, registry=registry, policy="never")
    assert reader.refresh() is False
    touch_all(writer, 0)
    writer.commit()
    assert reader.generation == 1
    assert len(reader.resolver.log) == 0  # not before
    assert reader.refresh() is True
    assert reader.generation == 2
    assert dump_resolver(reader.resolver) == dump_resolver(writer.resolver)
    assert dump_graph(reader.graph) == dump_graph(writer.graph)
    assert reader.refresh() is False


def test_refresh_sees_a_writer_that_committed_several_generations(tiny: Path) -> None:
    registry = tiny_registry()
    reader = Session.load(tiny, registry=registry, policy="never")
    writer = Session.load(tiny, registry=registry, policy="never")
    for tick in range(3):
        touch_all(writer, tick)
        writer.commit()
    assert reader.refresh() is True
    assert reader.generation == 4


# -- checkpoint policies ---------------------------------------------------------------------------


def test_every_ask_commits_once_per_question(demo: tuple[Path, Path], tmp_path: Path) -> None:
    template, feed = demo
    directory = clone(template, tmp_path / "session")
    session = open_demo_session(directory, feed=feed, policy="every-ask")
    for number, question in enumerate(QUESTIONS[:3], start=2):
        session.ask(question)
        assert session.generation == number
        loaded = load_directory(directory, registry=demo_registry(feed))
        assert loaded.manifest.generation == number
        assert dump_resolver(loaded.resolver) == dump_resolver(session.resolver)  # what the question taught is on disk
    assert session.describe()["checkpoints"] == {
        "scope": "this process",
        "pending": 0,
        "commits": 3,
        "skipped": 0,
        "contended": 0,
        "conflicts": 0,
        "failed": 0,
        "last_skip": None,
    }


def test_on_exit_commits_once_at_close(demo: tuple[Path, Path], tmp_path: Path) -> None:
    template, feed = demo
    directory = clone(template, tmp_path / "session")
    before = snapshot(directory)
    session = open_demo_session(directory, feed=feed, policy="on-exit")
    for question in QUESTIONS[:3]:
        session.ask(question)
    assert snapshot(directory) == before
    assert session.pending == 3
    session.close()
    assert session.generation == 2
    assert session.describe()["checkpoints"] == {
        "scope": "this process",
        "pending": 0,
        "commits": 1,
        "skipped": 0,
        "contended": 0,
        "conflicts": 0,
        "failed": 0,
        "last_skip": None,
    }
    loaded = load_directory(directory, registry=demo_registry(feed))
    assert loaded.manifest.generation == 2
    assert dump_graph(loaded.graph) == dump_graph(session.graph)  # structure and telemetry
    assert dump_resolver(loaded.resolver) == dump_resolver(session.resolver)


def test_never_writes_nothing(demo: tuple[Path, Path], tmp_path: Path) -> None:
    template, feed = demo
    directory = clone(template, tmp_path / "session")
    before = snapshot(directory)
    stats = {name: (directory / name).stat().st_mtime_ns for name in before}
    session = open_demo_session(directory, feed=feed, policy="never")
    for question in QUESTIONS[:3]:
        session.ask(question)
    assert session.checkpoint() is False
    session.close()
    assert session.persistent is False
    assert snapshot(directory) == before
    assert {name: (directory / name).stat().st_mtime_ns for name in before} == stats


def test_lock_contention_is_a_counted_skip_and_the_work_stays_pending(demo: tuple[Path, Path], tmp_path: Path) -> None:
    template, feed = demo
    directory = clone(template, tmp_path / "session")
    session = open_demo_session(directory, feed=feed, policy="every-ask")
    with lock_held_elsewhere(directory, tmp_path):
        session.ask(QUESTIONS[0])
        session.ask(QUESTIONS[1])
        counters = session.describe()["checkpoints"]
        assert str(counters.pop("last_skip")).startswith("another writer held the lock: ")
        assert counters == {
            "scope": "this process",
            "pending": 2,
            "commits": 0,
            "skipped": 2,
            "contended": 2,
            "conflicts": 0,
            "failed": 0,
        }
        assert session.generation == 1
    session.ask(QUESTIONS[2])  # the lock is free again: everything pending lands in one commit
    assert session.generation == 2
    assert session.describe()["checkpoints"] == {
        "scope": "this process",
        "pending": 0,
        "commits": 1,
        "skipped": 2,
        "contended": 2,
        "conflicts": 0,
        "failed": 0,
        "last_skip": None,
    }
    loaded = load_directory(directory, registry=demo_registry(feed))
    asked = {record.mention for record in loaded.resolver.log}
    fresh = {record.mention for record in session.resolver.log}
    assert asked == fresh
    assert dump_graph(loaded.graph) == dump_graph(session.graph)  # structure and telemetry

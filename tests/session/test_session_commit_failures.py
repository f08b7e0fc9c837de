"""A commit that cannot land says so, takes back what it wrote, and loses nothing.

Every failure is a :class:`SessionError` naming the file and the cause — never a bare ``OSError``
traceback — and afterwards the directory holds exactly what it held before (no ``.tmp-`` file, no
orphaned companion), the previous generation loads, and the same commit succeeds once the cause is
gone. A ``session save`` (``Session.create``) that fails leaves its target as it found it: absent if
it was absent, empty if it was empty.

How each cause is produced, honestly:

* **A full disk** is a small tmpfs mounted for the test and filled to its last page, so the write
  fails with ``ENOSPC`` from the kernel. Mounting needs root; without it the commit runs under
  ``RLIMIT_FSIZE`` instead, where the same write fails with ``EFBIG`` — a different errno through
  the same code path (the test then expects that one).
* **A read-only directory** is ``chmod 555``. Root ignores permission bits, so as root the commit runs
  in a child that has dropped ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH`` from its capability
  bounding set before ``exec`` — it is then refused with ``EACCES`` like any other user.
* **Names in the way** (a directory under the next companion's name; a fifo or a directory under the
  next manifest's name) are made with ``mkdir`` and ``mkfifo``.

The commits that touch a file system run in a subprocess with a timeout, so no regression can hang
the suite.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from demo_cache import DemoSessions
from session_helpers import PREAMBLE, clone, listing, manifest_doc

from contextmesh.core.canonical import file_bytes, sha256_hex
from contextmesh.core.errors import SessionError
from contextmesh.demo.saved import demo_registry
from contextmesh.session.commit import CommitConflictError
from contextmesh.session.layout import companion_name, manifest_name
from contextmesh.session.load import load_directory
from contextmesh.session.session import Session

TIMEOUT = 120.0
_PR_CAPBSET_DROP = 24
_DAC_CAPABILITIES = (1, 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    return demo_sessions.copy(tmp_path_factory.mktemp("failures"))


def contents(directory: Path) -> dict[str, bytes | None]:
    """Every name in ``directory`` with the bytes of each regular file (None for anything else)."""
    return {
        name: (directory / name).read_bytes() if (directory / name).is_file() else None for name in listing(directory)
    }


def generation_on_disk(directory: Path, feed: Path) -> int:
    return load_directory(directory, registry=demo_registry(feed)).manifest.generation


# -- committing in a child ---------------------------------------------------------------------------

_CHILD = """
import json, resource, signal, sys
from pathlib import Path
target, feed, action, size_limit = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
from contextmesh.demo.saved import open_demo_session, save_demo_session
from contextmesh.core.errors import ContextMeshError
if size_limit:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (size_limit, size_limit))
try:
    if action == "save":
        session = save_demo_session(target, rounds=1, feed=feed)
    else:
        session = open_demo_session(target, feed=feed, policy="never")
        session.graph.record_walk([next(iter(session.graph.nodes))], [])  # one journal segment to write
        session.commit()
    print(json.dumps({"generation": session.generation}))
except ContextMeshError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
except BaseException as exc:  # what these tests exist to rule out
    print(json.dumps({"error": type(exc).__name__, "message": str(exc), "escaped": True}))
"""


def drop_dac_capabilities() -> None:
    """In the child before exec: as root, give up overriding permission bits (no-op for other users)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in _DAC_CAPABILITIES:
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def in_child(
    target: Path, feed: Path, action: str, *, size_limit: int = 0, preexec: Callable[[], None] | None = None
) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PREAMBLE + _CHILD, str(target), str(feed), action, str(size_limit)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        preexec_fn=preexec,  # only prctl, before exec
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    outcome: dict[str, Any] = json.loads(done.stdout)
    return outcome


# -- a disk that fills up ----------------------------------------------------------------------------


@dataclass
class Disk:
    """Where to put a session so that its next write fails, and how to make room again."""

    root: Path
    cause: str  # the errno name a failed write reports
    mounted: bool

    def fill(self) -> None:
        if self.mounted:
            with suppress(OSError), (self.root / "filler").open("wb", buffering=0) as out:
                while True:  # page by page, to the last one
                    out.write(b"\0" * 4096)

    def free(self) -> None:
        (self.root / "filler").unlink(missing_ok=True)

    @property
    def size_limit(self) -> int:
        return 0 if self.mounted else 1024  # below every companion, above an empty lock file


@contextmanager
def small_disk(tmp_path: Path) -> Iterator[Disk]:
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    try:
        mounted = (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mountpoint)], capture_output=True, check=False
            ).returncode
            == 0
        )
    except OSError:  # no mount command at all
        mounted = False
    try:
        yield Disk(mountpoint, "ENOSPC" if mounted else "EFBIG", mounted)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, check=False)


def assert_refused(outcome: dict[str, Any], *fragments: str) -> str:
    assert outcome.get("error") == "SessionError", outcome
    message: str = outcome["message"]
    for fragment in fragments:
        assert fragment in message, message
    assert "\n" not in message
    return message


# -- a full disk -------------------------------------------------------------------------------------


def test_a_full_disk_fails_the_commit_cleanly_and_a_retry_lands(template: tuple[Path, Path], tmp_path: Path) -> None:
    source, feed = template
    with small_disk(tmp_path) as disk:
        directory = clone(source, disk.root / "session")
        before = contents(directory)
        disk.fill()
        for _ in range(2):  # each failed attempt used to leave one more .tmp- file behind
            outcome = in_child(directory, feed, "commit", size_limit=disk.size_limit)
            message = assert_refused(outcome, f"({disk.cause})", "journal-", "generation 1 still loads")
            assert str(directory) in message
            assert contents(directory) == before
        assert generation_on_disk(directory, feed) == 1
        disk.free()
        assert in_child(directory, feed, "commit") == {"generation": 2}
        assert generation_on_disk(directory, feed) == 2


def test_a_save_onto_a_full_disk_leaves_no_trace_and_a_retry_saves(template: tuple[Path, Path], tmp_path: Path) -> None:
    _, feed = template
    with small_disk(tmp_path) as disk:
        disk.fill()
        target = disk.root / "new" / "session"  # neither exists yet
        outcome = in_child(target, feed, "save", size_limit=disk.size_limit)
        assert_refused(outcome, f"({disk.cause})", "the directory is as it was")
        assert not (disk.root / "new").exists()
        disk.free()
        assert in_child(target, feed, "save") == {"generation": 1}
        assert generation_on_disk(target, feed) == 1


# -- a read-only directory ---------------------------------------------------------------------------


def test_a_read_only_directory_fails_the_commit_cleanly_and_loses_nothing(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    before = contents(directory)
    directory.chmod(0o555)
    try:
        outcome = in_child(directory, feed, "commit", preexec=drop_dac_capabilities)
    finally:
        directory.chmod(0o755)
    assert_refused(outcome, "Permission denied (EACCES)", "writing journal-", "generation 1 still loads")
    assert contents(directory) == before
    assert generation_on_disk(directory, feed) == 1
    assert in_child(directory, feed, "commit") == {"generation": 2}


def test_a_save_into_a_read_only_empty_directory_leaves_it_empty(template: tuple[Path, Path], tmp_path: Path) -> None:
    _, feed = template
    target = tmp_path / "empty"
    target.mkdir()
    target.chmod(0o555)
    try:
        outcome = in_child(target, feed, "save", preexec=drop_dac_capabilities)
    finally:
        target.chmod(0o755)
    assert_refused(outcome, "Permission denied", str(target))
    assert listing(target) == []
    assert in_child(target, feed, "save") == {"generation": 1}


def test_a_save_onto_a_file_is_refused_and_the_file_is_untouched(template: tuple[Path, Path], tmp_path: Path) -> None:
    source, feed = template
    target = tmp_path / "notes.txt"
    target.write_bytes(b"not a directory\n")
    session = Session.load(clone(source, tmp_path / "session"), registry=demo_registry(feed), policy="never")
    with pytest.raises(SessionError, match="is not a directory"):
        Session.create(target, session)
    assert target.read_bytes() == b"not a directory\n"


# -- names in the way --------------------------------------------------------------------------------


def opened(template: tuple[Path, Path], tmp_path: Path) -> tuple[Session, Path]:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    session = Session.load(directory, registry=demo_registry(feed), policy="never")
    session.graph.record_walk([next(iter(session.graph.nodes))], [])  # one journal segment to write
    return session, directory


def next_segment(session: Session) -> str:
    data = session.commit_payload()["journal[0]"]
    assert isinstance(data, bytes)
    return companion_name("journal", sha256_hex(data))


def test_a_directory_under_the_next_companions_name_is_refused_naming_it(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    session, directory = opened(template, tmp_path)
    blocked = next_segment(session)
    (directory / blocked).mkdir()
    before = contents(directory)
    with pytest.raises(SessionError) as refused:
        session.commit()
    assert f"{blocked}, where this commit must write the journal[0] companion, is a directory" in str(refused.value)
    assert contents(directory) == before
    assert session.generation == 1 and generation_on_disk(directory, template[1]) == 1
    (directory / blocked).rmdir()
    assert session.commit() == 2


@dataclass(frozen=True)
class InTheWay:
    name: str
    make: Callable[[Path], None]
    words: str


IN_THE_WAY = [
    InTheWay("fifo", os.mkfifo, "a fifo"),
    InTheWay("directory", Path.mkdir, "a directory"),
]


@pytest.mark.parametrize("case", IN_THE_WAY, ids=[c.name for c in IN_THE_WAY])
def test_something_under_the_next_manifests_name_is_refused_naming_it_not_reported_as_a_conflict(
    case: InTheWay, template: tuple[Path, Path], tmp_path: Path
) -> None:
    session, directory = opened(template, tmp_path)
    blocked = directory / manifest_name(2)
    case.make(blocked)
    before = contents(directory)
    with pytest.raises(SessionError) as refused:
        session.commit()
    assert not isinstance(refused.value, CommitConflictError)  # nothing else wrote generation 2
    assert f"{manifest_name(2)}, where this commit must write the manifest of generation 2, is {case.words}" in str(
        refused.value
    )
    assert contents(directory) == before
    assert generation_on_disk(directory, template[1]) == 1
    with pytest.raises(SessionError, match="is " + case.words):
        session.apply(lambda s: None)  # not retried as a conflict either
    if blocked.is_dir():
        shutil.rmtree(blocked)
    else:
        blocked.unlink()
    assert session.commit() == 2


def test_the_generation_after_the_last_six_digit_one_is_refused_not_written_where_no_reader_looks(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    path, doc = manifest_doc(directory)
    doc["generation"] = 999_999
    path.unlink()
    (directory / manifest_name(999_999)).write_bytes(file_bytes(doc))
    session = Session.load(directory, registry=demo_registry(feed), policy="never")
    before = contents(directory)
    with pytest.raises(SessionError, match="at most 999999 generations"):
        session.commit()
    assert contents(directory) == before

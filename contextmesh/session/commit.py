"""Commit a generation: compare-and-swap under the lock, crash-safe at every step.

``commit_generation`` takes the lock only to commit. If the directory's newest generation is still
the one the writer loaded, it writes every new companion to a fresh ``O_EXCL`` file under a random
name (which cannot already exist, so cannot be a planted symlink), fsyncs it and renames it into
place (a rename replaces a link instead of following it); companions already present under their
content address are not rewritten. It then publishes the manifest under a name that did not
exist (``os.link`` refuses to replace), fsyncs the directory, replaces the ``session.json`` pointer,
and sweeps superseded generations. A crash anywhere before the manifest's publication leaves the
previous generation serving; after it, the new one.

If the directory moved on, the commit fails with :class:`CommitConflictError` naming both generations.

Crash points, for tests: with ``CONTEXTMESH_CRASH_AT=<step>`` the process kills itself with
SIGKILL when it reaches that step; with ``CONTEXTMESH_TRACE_STEPS=<file>`` it appends each step
name to that file as it passes (``save-started`` first).

What SIGKILL cannot test: a kill leaves the kernel's page cache intact, so it cannot show that the
fsyncs happen. The code fsyncs each companion and the manifest before their renames, and the
directory after the renames and after publication, so a power cut leaves a complete generation.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
from collections.abc import Mapping
from pathlib import Path

from contextmesh.canonical import file_bytes, sha256_hex
from contextmesh.errors import SessionError
from contextmesh.session.layout import (
    COMPANION_NAME,
    COMPANIONS,
    MANIFEST,
    POINTER_NAME,
    Companion,
    Manifest,
    companion_name,
    manifest_name,
)
from contextmesh.session.lock import WriterLock

__all__ = ["CRASH_ENV", "TRACE_ENV", "CommitConflictError", "commit_generation", "latest_generation", "step"]

CRASH_ENV = "CONTEXTMESH_CRASH_AT"
TRACE_ENV = "CONTEXTMESH_TRACE_STEPS"
_TMP_PREFIX = ".tmp-"


class CommitConflictError(SessionError):
    """The directory moved on since the writer loaded it."""

    def __init__(self, loaded: int, found: int) -> None:
        self.loaded, self.found = loaded, found
        super().__init__(
            f"the session moved on: this writer loaded generation {loaded}, the directory is at generation {found}"
        )


def step(name: str) -> None:
    """Mark a commit step: trace it, and die here if a test asked for a crash at it."""
    trace = os.environ.get(TRACE_ENV)
    if trace:
        with Path(trace).open("a", encoding="utf-8") as out:
            out.write(name + "\n")
            out.flush()
            os.fsync(out.fileno())
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def latest_generation(directory: Path) -> int:
    """The newest manifest generation present as a regular file (0 for none)."""
    best = 0
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise SessionError(f"cannot list the session directory {directory}: {exc.strerror}") from None
    for name in names:
        match = MANIFEST.match(name)
        if match and (directory / name).is_file() and not (directory / name).is_symlink():
            best = max(best, int(match.group(1)))
    return best


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_new(directory: Path, data: bytes) -> Path:
    """Write ``data`` to a fresh O_EXCL file under a random name; fsync it; return its path."""
    path = directory / f"{_TMP_PREFIX}{secrets.token_hex(12)}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _present(path: Path, sha: str) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    try:
        return sha256_hex(path.read_bytes()) == sha
    except OSError:
        return False


def commit_generation(
    directory: Path,
    *,
    loaded: int,
    companions: Mapping[str, bytes],
    manifest: Manifest,
    lock_wait: float = 2.0,
) -> tuple[Manifest, int]:
    """Publish generation ``loaded + 1``; return its manifest and the bytes written."""
    step("save-started")
    written = 0
    with WriterLock(directory, wait=lock_wait):
        found = latest_generation(directory)
        if found != loaded:
            raise CommitConflictError(loaded, found)
        generation = loaded + 1
        named: dict[str, Companion] = {}
        for kind in COMPANIONS:
            data = companions.get(kind)
            if data is None:
                continue
            sha = sha256_hex(data)
            name = companion_name(kind, sha)
            named[kind] = Companion(name, sha, len(data))
            final = directory / name
            if _present(final, sha):
                continue
            tmp = _write_new(directory, data)
            written += len(data)
            step(f"companion-written:{kind}")
            os.replace(tmp, final)
            step(f"companion-renamed:{kind}")
        _fsync_dir(directory)
        published = Manifest(
            manifest.session_id,
            generation,
            manifest.rounds,
            manifest.walker,
            manifest.corpus,
            named["graph"],
            named["resolver"],
            named.get("execution"),
            named.get("runledger"),
            manifest.ledger_head,
            named["telemetry"],
        )
        data = file_bytes(published.to_dict())
        tmp = _write_new(directory, data)
        written += len(data)
        step("manifest-written")
        target = directory / manifest_name(generation)
        if target.is_symlink():
            os.unlink(target)  # a planted link is removed, never followed (unlink does not follow)
        try:
            os.link(tmp, target)  # refuses to replace: the generation's name must not exist yet
        except FileExistsError:
            os.unlink(tmp)
            raise CommitConflictError(loaded, generation) from None
        os.unlink(tmp)
        _fsync_dir(directory)
        step("manifest-published")
        pointer = _write_new(directory, data)
        step("pointer-written")
        os.replace(pointer, directory / POINTER_NAME)
        _fsync_dir(directory)
        step("pointer-renamed")
        _sweep(directory, published)
    return published, written


def _sweep(directory: Path, current: Manifest) -> None:
    """Delete superseded manifests, companions the current manifest does not name, and abandoned temps."""
    keep = {c.name for c in current.companions().values()}
    step("sweep-started")
    names = sorted(os.listdir(directory))
    swept = 0
    for name in names:
        match = MANIFEST.match(name)
        doomed = (
            (match is not None and int(match.group(1)) < current.generation - 1)
            or name.startswith(_TMP_PREFIX)
            or (
                COMPANION_NAME.match(name) is not None
                and name not in keep
                and not _named_by_previous(directory, current, name)
            )
        )
        # Only our own regular files are swept: a directory or a link under a lookalike name stays.
        path = directory / name
        if doomed and path.is_file() and not path.is_symlink():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(directory / name)
            swept += 1
            if swept == 1:
                step("sweep-midway")
    step("sweep-finished")


def _named_by_previous(directory: Path, current: Manifest, name: str) -> bool:
    # The generation just superseded stays whole, so a reader that read its manifest a moment ago
    # can still open every companion it names.
    previous = directory / manifest_name(current.generation - 1)
    try:
        return name.encode() in previous.read_bytes()
    except OSError:
        return False

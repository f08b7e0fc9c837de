"""The writer lock: one kernel ``flock`` on ``session.lock``, held only to commit.

The lock file keeps one inode for its whole life (that inode is what the kernel lock attaches to),
so it is never replaced. Because a writer writes into it, it is checked before anything is written:

* opened with ``O_NOFOLLOW`` (a symlink planted under its name is refused, not followed) and
  ``O_NONBLOCK`` (a fifo under its name cannot block the open);
* ``fstat``: a regular file (not a fifo, a device or a directory) with a link count of exactly 1 —
  a hard link from ``session.lock`` to a file elsewhere would otherwise have that file truncated;
* once locked, its content must be empty or a holder line this module writes
  (``pid N on HOST``); anything else is a file ContextMesh did not write, and it is refused rather
  than truncated.

The holder writes its pid and host into the file; a writer that cannot get the lock within its
bound is refused with those. The kernel releases the lock however its holder dies.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import socket
import stat
import time
from pathlib import Path
from types import TracebackType

from contextmesh.core.errors import SessionError
from contextmesh.session.files import describe_kind, os_cause
from contextmesh.session.layout import LOCK_NAME

__all__ = ["SessionLockedError", "WriterLock", "create_lock_file"]

_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_HOLDER = re.compile(rb"pid [0-9]{1,10} on [^\n]{0,200}\n")
_HOLDER_MAX = 256


def create_lock_file(directory: Path) -> Path:
    """Create an empty ``session.lock`` that must not exist yet (``FileExistsError`` if it does).

    A new session makes its lock file first, so it knows the file is its own and can remove it if
    the first commit fails.
    """
    path = directory / LOCK_NAME
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644))
    return path


class SessionLockedError(SessionError):
    """Another writer holds the session lock past the wait bound."""


class WriterLock:
    """``with WriterLock(dir, wait=2.0):`` — exclusive, bounded wait, released on exit or death.

    ``created`` tells whether this lock made the lock file (so a failed first commit can remove it).
    """

    def __init__(self, directory: Path, *, wait: float = 2.0) -> None:
        self.path = directory / LOCK_NAME
        self.wait = wait
        self.created = False
        self._fd: int | None = None

    def _open(self) -> int:
        for _ in range(3):  # the name can vanish between the two opens; try again a bounded number of times
            try:
                fd = os.open(self.path, _FLAGS | os.O_CREAT | os.O_EXCL, 0o644)
                self.created = True
                return fd
            except FileExistsError:
                pass
            try:
                return os.open(self.path, _FLAGS)
            except FileNotFoundError:
                continue
        raise SessionError(f"cannot open the writer lock {self.path}: it keeps disappearing")

    def __enter__(self) -> WriterLock:
        try:
            fd = self._open()
        except OSError as exc:
            why = "a symlink under that name is refused, never followed" if exc.errno == errno.ELOOP else os_cause(exc)
            raise SessionError(f"cannot open the writer lock {self.path}: {why}") from None
        try:
            self._check(fd)
            self._acquire(fd)
            held = os.pread(fd, _HOLDER_MAX + 1, 0)
            if held and not _HOLDER.fullmatch(held):
                raise SessionError(
                    f"{self.path} holds {len(held)} bytes that are not a writer's 'pid N on HOST' line; "
                    "refusing to overwrite a file ContextMesh did not write (remove it if it is yours)"
                )
            # The holder line only informs a contender; on a full disk the commit itself then
            # fails, naming the file it could not write, so do not fail here first.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        except OSError as exc:
            os.close(fd)
            raise SessionError(f"cannot take the writer lock {self.path}: {os_cause(exc)}") from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def _check(self, fd: int) -> None:
        seen = os.fstat(fd)
        if not stat.S_ISREG(seen.st_mode):
            raise SessionError(
                f"{self.path} is {describe_kind(seen.st_mode)}, not a regular file; "
                "refusing to use it as the writer lock"
            )
        if seen.st_nlink != 1:
            raise SessionError(
                f"{self.path} has {seen.st_nlink} links; the writer lock must be a file of its own (link count 1), "
                "so a hard link to a file elsewhere is refused and that file is left untouched"
            )

    def _acquire(self, fd: int) -> None:
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, _HOLDER_MAX, 0).decode("utf-8", "replace").strip() or "an unknown writer"
                    raise SessionLockedError(
                        f"{self.path.parent} is being written by {holder}; one writer at a time "
                        f"(waited {self.wait:g} s)"
                    ) from None
                time.sleep(0.01)

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            except OSError:
                pass  # closing the descriptor below releases the kernel lock all the same
            finally:
                os.close(self._fd)
                self._fd = None

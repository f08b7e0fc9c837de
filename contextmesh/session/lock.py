"""The writer lock: one kernel ``flock`` on ``session.lock``, held only to commit.

The lock file keeps one inode for its whole life (that inode is what the kernel lock attaches to),
so it is never replaced: it is opened with ``O_NOFOLLOW`` — a symlink planted under its name is
refused, not followed — and checked with ``fstat`` to be a regular file (not a fifo or a device).
The holder writes its pid and host into the file; a writer that cannot get the lock within its
bound is refused with those. The kernel releases the lock however its holder dies.
"""

from __future__ import annotations

import fcntl
import os
import socket
import stat
import time
from pathlib import Path
from types import TracebackType

from contextmesh.errors import SessionError
from contextmesh.session.layout import LOCK_NAME

__all__ = ["SessionLockedError", "WriterLock"]


class SessionLockedError(SessionError):
    """Another writer holds the session lock past the wait bound."""


class WriterLock:
    """``with WriterLock(dir, wait=2.0):`` — exclusive, bounded wait, released on exit or death."""

    def __init__(self, directory: Path, *, wait: float = 2.0) -> None:
        self.path = directory / LOCK_NAME
        self.wait = wait
        self._fd: int | None = None

    def __enter__(self) -> WriterLock:
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            raise SessionError(
                f"cannot open the writer lock {self.path}: {exc.strerror} (a symlink under that name is refused)"
            ) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SessionError(f"{self.path} is not a regular file; refusing to use it as the writer lock")
            deadline = time.monotonic() + self.wait
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        holder = os.pread(fd, 256, 0).decode("utf-8", "replace").strip() or "an unknown writer"
                        raise SessionLockedError(
                            f"{self.path.parent} is being written by {holder}; one writer at a time "
                            f"(waited {self.wait:g} s)"
                        ) from None
                    time.sleep(0.01)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

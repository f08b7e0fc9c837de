"""Reading one file of a session directory as untrusted input: never blocking, never following.

Every file a session loader reads goes through :func:`read_regular`. It opens the name with
``O_NONBLOCK | O_NOFOLLOW`` and checks with ``fstat`` that what it opened is a regular file before
reading a byte, so a fifo planted under a companion's name is refused instead of blocking the reader
for good (opening a fifo for reading blocks until a writer appears; with ``O_NONBLOCK`` it returns
at once), a symlink is refused instead of followed, and a directory, socket or device is refused by
name. It reads at most ``limit + 1`` bytes, so a caller that gets more than ``limit`` back knows the
file is too large without having read all of it: the work of a read is bounded by the caller's
bound, not by whatever the file holds.

:func:`describe_kind` names what an ``lstat`` found, for the writer's refusals ("a fifo"), and
:func:`os_cause` an ``OSError``'s cause with its errno name.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from contextmesh.core.errors import SessionError, SnapshotError

__all__ = ["MANIFEST_MAX_BYTES", "SessionFileError", "describe_kind", "os_cause", "read_regular"]

# A manifest holds a fixed set of small fields (about 1.3 KB); anything near this is not one.
MANIFEST_MAX_BYTES = 64 * 1024
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
_RULE = "a session file is a regular file inside the directory, not a symlink, fifo, socket, device or directory"


class SessionFileError(SnapshotError, SessionError):
    """A session directory's file breaks a rule; ``path`` names the file and the place in it."""


def os_cause(exc: OSError) -> str:
    """The kernel's words and the errno's name, e.g. ``No space left on device (ENOSPC)``."""
    code = errno.errorcode.get(exc.errno or 0)
    return f"{exc.strerror or exc}" + (f" ({code})" if code else "")


def describe_kind(mode: int) -> str:
    """What a file of this mode is, in words: ``a fifo``, ``a directory``…"""
    for test, words in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISFIFO, "a fifo"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return words
    return "a file of an unknown kind"


def read_regular(directory: Path, name: str, *, limit: int) -> bytes:
    """The bytes of ``directory/name`` (at most ``limit + 1`` of them) if it is a regular file.

    A missing file raises :class:`FileNotFoundError` (the loader retries on it when the directory
    moved on); anything else that is not a readable regular file raises :class:`SessionFileError`
    with ``path`` = ``name``.
    """
    if not name or "/" in name or os.sep in name or name in {".", ".."}:
        raise SessionFileError(name, repr(name), "names in a session directory are plain file names")
    try:
        fd = os.open(directory / name, _FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SessionFileError(name, "a symlink, not a regular file", _RULE) from None
        if exc.errno == errno.ENXIO:  # a socket (or a fifo's peer) cannot be opened for reading
            raise SessionFileError(name, "a socket or device, not a regular file", _RULE) from None
        raise SessionFileError(name, f"unreadable: {os_cause(exc)}", _RULE) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise SessionFileError(name, f"{describe_kind(mode)}, not a regular file", _RULE)
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise SessionFileError(name, f"unreadable: {os_cause(exc)}", _RULE) from None
    finally:
        os.close(fd)

"""A managed server's home on disk: its lock, its pid file, and the record the pid file holds.

Files under a ContextMesh home (``$CONTEXTMESH_HOME``, :mod:`contextmesh.core.home`)::

    prefect/                 PREFECT_HOME: the SQLite database, profiles, local storage
    prefect-server.json      the pid file: pid, port, Prefect version, identity token, keep flag
    prefect-server.log       the server's stdout and stderr
    prefect-server.lock      flock: one start or stop at a time (the database is initialised under it)
    prefect-server.leases/   one file per command using a temporary server (see ensure_server)

A pid file that cannot be read as its five fields reads as "no server recorded", and
:mod:`contextmesh.orchestration.server_process` still checks that the process it names is this
home's server before anything trusts it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextmesh.core.errors import ExecutionError
from contextmesh.core.home import contextmesh_home

__all__ = [
    "HOST",
    "IDENTITY_VARIABLE",
    "INITIALISED",
    "LEASES_DIR",
    "LOCK_FILE",
    "LOG_FILE",
    "PID_FILE",
    "ServerError",
    "ServerInfo",
    "home_root",
    "locked",
    "prefect_home",
    "read_pid_file",
    "write_pid_file",
]

HOST = "127.0.0.1"
IDENTITY_VARIABLE = "contextmesh_server_identity"
PID_FILE = "prefect-server.json"
LOG_FILE = "prefect-server.log"
LOCK_FILE = "prefect-server.lock"
LEASES_DIR = "prefect-server.leases"
INITIALISED = ".contextmesh-initialised"


class ServerError(ExecutionError):
    """The managed Prefect server cannot be started, reached or trusted."""


@dataclass(frozen=True)
class ServerInfo:
    """What the pid file records about a running managed server."""

    home: Path
    pid: int
    port: int
    version: str
    token: str
    keep: bool

    @property
    def api_url(self) -> str:
        """The REST API root, ``http://127.0.0.1:P/api``."""
        return f"http://{HOST}:{self.port}/api"

    @property
    def ui_url(self) -> str:
        """The Prefect UI."""
        return f"http://{HOST}:{self.port}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the token is a secret of the home: left out)."""
        return {
            "home": str(self.home),
            "pid": self.pid,
            "port": self.port,
            "version": self.version,
            "keep": self.keep,
            "api_url": self.api_url,
            "ui_url": self.ui_url,
        }


def home_root(home: Path | None) -> Path:
    """``home`` (default: :func:`~contextmesh.core.home.contextmesh_home`) as an absolute path."""
    return (home or contextmesh_home()).expanduser().resolve()


def prefect_home(home: Path) -> Path:
    """The ``PREFECT_HOME`` of ``home``'s server."""
    return home / "prefect"


# -- the lock and the pid file --------------------------------------------------------------------


@contextlib.contextmanager
def locked(home: Path, timeout: float = 120.0) -> Iterator[None]:
    """Hold the home's flock for the block (one start or stop at a time); refuse after ``timeout`` s."""
    home.mkdir(parents=True, exist_ok=True)
    fd = os.open(home / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ServerError(f"{home / LOCK_FILE} is held by another command for {timeout:g} s") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def read_pid_file(home: Path) -> ServerInfo | None:
    """What the pid file records, or None when there is none or it cannot be read as one."""
    try:
        data = json.loads((home / PID_FILE).read_text(encoding="utf-8"))
        return ServerInfo(
            home,
            int(data["pid"]),
            int(data["port"]),
            str(data["version"]),
            str(data["token"]),
            bool(data["keep"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_pid_file(info: ServerInfo) -> None:
    """Replace the pid file atomically (owner-only, never through a link)."""
    body = {"pid": info.pid, "port": info.port, "version": info.version, "token": info.token, "keep": info.keep}
    tmp = info.home / f".{PID_FILE}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(body, out)
    tmp.replace(info.home / PID_FILE)

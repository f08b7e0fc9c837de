"""What a serving process reacts to, and what it last started: the file a writer reads to say what next.

``contextmesh serve`` (and the demo's ``deployments/serve.py``) starts a recheck as soon as the
session's evidence or a file its auditors read changes (ADR 0017,
:mod:`contextmesh.orchestration.reactor`). It keeps ``$CONTEXTMESH_HOME/served/react/<session id>.json``
up to date while it runs: its pid, the files it watches, and the last recheck it started with the
change that started it. ``contextmesh evidence add`` and ``contextmesh demo advisory`` read it to say
what happens next ("a recheck started under serve: <url>", or that nothing serves the session).

The file is ours but read as untrusted input: anything but the exact document, or a pid that is
gone, counts as "nothing serves it". This module does not import Prefect.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import ContextMeshError
from contextmesh.core.home import contextmesh_home
from contextmesh.orchestration.server_process import process_alive
from contextmesh.session.files import read_regular

__all__ = ["FORMAT", "Reacting", "reacting_path", "read_all", "read_one", "serving", "wait_for_start", "write"]

FORMAT = "contextmesh.reacting"
_MAX_BYTES = 256 * 1024


@dataclass(frozen=True)
class Reacting:
    """One serving process's watch: its session, the files it watches, the last recheck it started."""

    session_id: str
    session_dir: str
    pid: int
    watching: tuple[str, ...]
    interval: float
    started_at: float = 0.0  # epoch seconds of the last recheck it started (0: none yet)
    trigger: str = ""
    flow_run_id: str = ""
    url: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The document as written."""
        return {
            "format": FORMAT,
            "session_id": self.session_id,
            "session_dir": self.session_dir,
            "pid": self.pid,
            "watching": list(self.watching),
            "interval": self.interval,
            "started_at": self.started_at,
            "trigger": self.trigger,
            "flow_run_id": self.flow_run_id,
            "url": self.url,
        }


def _folder(home: Path | None) -> Path:
    return (home or contextmesh_home()) / "served" / "react"


def reacting_path(session_id: str, home: Path | None = None) -> Path:
    """The file of ``session_id``'s serving process (the id is checked by the served record first)."""
    return _folder(home) / f"{session_id}.json"


def write(state: Reacting, home: Path | None = None) -> None:
    """Write ``state`` atomically (temp file + rename)."""
    target = reacting_path(state.session_id, home)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=".react-", dir=target.parent)
    with os.fdopen(handle, "wb") as out:
        out.write(file_bytes(state.to_dict()))
    Path(tmp).replace(target)


def _parse(data: object) -> Reacting | None:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    try:
        state = Reacting(
            session_id=str(data["session_id"]),
            session_dir=str(data["session_dir"]),
            pid=int(data["pid"]),
            watching=tuple(str(p) for p in data["watching"]),
            interval=float(data["interval"]),
            started_at=float(data["started_at"]),
            trigger=str(data["trigger"]),
            flow_run_id=str(data["flow_run_id"]),
            url=str(data["url"]),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return state if state.pid > 0 else None


def read_one(path: Path) -> Reacting | None:
    """The live serving process's state in ``path``, or None (absent, unreadable, not ours, or gone)."""
    try:
        state = _parse(loads(read_regular(path.parent, path.name, limit=_MAX_BYTES)))
    except (OSError, ValueError, ContextMeshError):
        return None
    return state if state is not None and process_alive(state.pid) else None


def read_all(home: Path | None = None) -> list[Reacting]:
    """Every live serving process's state (sorted by file name, so the answer is stable)."""
    folder = _folder(home)
    if not folder.is_dir():
        return []
    found = (read_one(path) for path in sorted(folder.glob("*.json")))
    return [state for state in found if state is not None]


def wait_for_start(session_id: str, since: float, *, timeout: float = 3.0, home: Path | None = None) -> Reacting | None:
    """The state once its serving process has started a recheck at or after ``since`` (epoch), or None.

    None when nothing serves the session, or its process has not started one within ``timeout``
    seconds (it waits for a recheck that is still running to end first).
    """
    deadline = time.monotonic() + timeout
    path = reacting_path(session_id, home)
    while True:
        state = read_one(path)
        if state is None:
            return None
        if state.started_at >= since and state.flow_run_id:
            return state
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def serving(session_id: str, home: Path | None = None) -> Reacting | None:
    """The live serving process's state for ``session_id``, or None."""
    return read_one(reacting_path(session_id, home))

"""Where a session is served: the record ``deployments/serve.py`` leaves while it runs.

``serve.py`` writes ``$CONTEXTMESH_HOME/served/<session id>.json`` when its deployments are up and
removes it when it stops. The CLI's ``recheck``, ``repair`` and ``resume`` (and the MCP launcher)
read it to decide where a write runs: on the served deployments when the record names a live
process, in-process otherwise. The file is ours but read as untrusted input: an unexpected
document is refused with the file and the rule, a record whose process is gone counts as absent.

This module does not import Prefect.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import ContextMeshError, ExecutionError, InputError
from contextmesh.core.home import contextmesh_home
from contextmesh.orchestration.server_process import process_alive
from contextmesh.session.commit import latest_generation
from contextmesh.session.files import MANIFEST_MAX_BYTES, read_regular
from contextmesh.session.layout import manifest_name, parse_manifest
from contextmesh.session.load import SessionFileError
from contextmesh.session.plan_check import NoPlanError

__all__ = ["FORMAT", "ServedError", "ServedRecord", "find", "forget", "path_for", "peek", "remember"]

FORMAT = "contextmesh.served"
_FIELDS = {
    "format": str,
    "session_id": str,
    "session_dir": str,
    "api_url": str,
    "plan": str,
    "recheck": str,
    "repair": str,
    "trigger": str,
    "pid": int,
}
_TRIGGERS = ("run-deployment", "automation")
T = TypeVar("T")
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_RECORD_MAX_BYTES = 64 * 1024  # a record is a few hundred bytes


class ServedError(ExecutionError):
    """A served record that is not what ``serve.py`` writes."""


@dataclass(frozen=True)
class ServedRecord:
    """A session served by ``deployments/serve.py``: its API and the three deployment names."""

    session_id: str
    session_dir: str
    api_url: str
    plan: str
    recheck: str
    repair: str
    trigger: str
    pid: int

    @property
    def ui_url(self) -> str:
        """The UI root of the API the session is served on."""
        return self.api_url.removesuffix("/").removesuffix("/api")

    def flow_run_url(self, flow_run_id: str) -> str:
        """Where a person watches one of this session's flow runs."""
        return f"{self.ui_url}/runs/flow-run/{flow_run_id}"

    def to_dict(self) -> dict[str, Any]:
        """The record as written (with its format tag)."""
        return {"format": FORMAT, **asdict(self)}


def _served_dir(home: Path | None) -> Path:
    return (home or contextmesh_home()) / "served"


def path_for(session_id: str, home: Path | None = None) -> Path:
    """The record file of ``session_id``."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise ServedError(
            f"session id {session_id!r} cannot name a served record: the rule is letters, digits, '.', '_', '-'"
        )
    return _served_dir(home) / f"{session_id}.json"


def remember(record: ServedRecord, home: Path | None = None) -> Path:
    """Write ``record`` atomically (temp file + rename)."""
    target = path_for(record.session_id, home)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=".served-", dir=target.parent)
    with os.fdopen(handle, "wb") as out:
        out.write(file_bytes(record.to_dict()))
    Path(tmp).replace(target)
    return target


def forget(session_id: str, home: Path | None = None, *, pid: int | None = None) -> None:
    """Remove the record of ``session_id`` (only if it is ``pid``'s, when given)."""
    target = path_for(session_id, home)
    if pid is not None and target.exists():
        try:
            if parse(target).pid != pid:
                return
        except ServedError:
            pass
    target.unlink(missing_ok=True)


def parse(path: Path) -> ServedRecord:
    """Read a record file, refusing anything but exactly the fields ``serve.py`` writes."""
    try:
        data = loads(read_regular(path.parent, path.name, limit=_RECORD_MAX_BYTES))  # a fifo here must not block
    except (OSError, ValueError, ContextMeshError) as exc:
        raise ServedError(f"{path}: not a readable served record ({exc})") from None
    if not isinstance(data, dict):
        raise ServedError(f"{path}: a served record is a JSON object, not {type(data).__name__}")
    if set(data) != set(_FIELDS):
        missing, extra = sorted(set(_FIELDS) - set(data)), sorted(set(data) - set(_FIELDS))
        raise ServedError(f"{path}: a served record holds exactly {sorted(_FIELDS)}; missing {missing}, extra {extra}")
    for name, kind in _FIELDS.items():
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ServedError(f"{path}: field '{name}' is {type(value).__name__}, the rule is {kind.__name__}")
    if data["format"] != FORMAT:
        raise ServedError(f"{path}: field 'format' is {data['format']!r}, the rule is {FORMAT!r}")
    if data["trigger"] not in _TRIGGERS:
        raise ServedError(f"{path}: field 'trigger' is {data['trigger']!r}, the rule is one of {list(_TRIGGERS)}")
    if not data["api_url"].startswith(("http://", "https://")):
        raise ServedError(f"{path}: field 'api_url' is {data['api_url']!r}, the rule is an http(s) URL")
    if data["pid"] <= 0:
        raise ServedError(f"{path}: field 'pid' is {data['pid']}, the rule is a positive process id")
    del data["format"]
    return ServedRecord(**data)


def _in_file(name: str, read: Callable[[], T]) -> T:
    """``read()``, with a problem reported in the file it was found in, as the full load reports it."""
    try:
        return read()
    except SessionFileError:
        raise  # read_regular's refusal already names the file
    except InputError as exc:
        raise SessionFileError(f"{name}:{exc.path}", exc.found, exc.rule) from None
    except OSError as exc:
        raise SessionFileError(
            name, exc.strerror or "unreadable", "a session file is a readable regular file"
        ) from None


def peek(session_dir: str) -> tuple[str, str, int]:
    """``(session id, plan, round)`` from a session's newest manifest and its execution file.

    Cheap (two small files, no graph): for names, the concurrency limit and the served record,
    before the full load. The full load (``Session.load``) checks everything again.
    """
    directory = Path(session_dir)
    generation = latest_generation(directory)
    if generation == 0:
        raise ExecutionError(f"{directory} holds no session manifest (session-NNNNNN.json)")
    # Read like the full load reads: never blocking on a fifo, never following a link, bounded.
    name = manifest_name(generation)
    manifest = _in_file(
        name, lambda: parse_manifest(loads(read_regular(directory, name, limit=MANIFEST_MAX_BYTES)), generation)
    )
    if manifest.execution is None:
        raise NoPlanError(directory)
    execution_name, size = manifest.execution.name, manifest.execution.bytes
    data = read_regular(directory, execution_name, limit=size)
    if len(data) != size:  # one byte past the recorded size is enough to know, so a huge file is not read
        raise SessionFileError(execution_name, "a size other than its manifest records", f"{size} bytes")
    execution = _in_file(execution_name, lambda: loads(data))
    if not isinstance(execution, dict) or not isinstance(execution.get("plan"), str):
        raise ExecutionError(f"{directory / manifest.execution.name}: the execution file names no plan")
    round_ = execution.get("round")
    if isinstance(round_, bool) or not isinstance(round_, int):
        raise ExecutionError(
            f"{directory / manifest.execution.name}: 'round' is {round_!r}, the rule is a whole number"
        )
    return manifest.session_id, execution["plan"], round_


def find(session_id: str, session_dir: Path, home: Path | None = None) -> ServedRecord | None:
    """The live record serving this session directory, or None (absent, stale, or another directory)."""
    target = path_for(session_id, home)
    if not target.exists():
        return None
    record = parse(target)
    if not process_alive(record.pid):
        return None
    if Path(record.session_dir).resolve() != session_dir.resolve():
        return None
    return record

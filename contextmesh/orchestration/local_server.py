"""The managed local Prefect server: one per ContextMesh home, started, checked, reused and stopped.

``start(home)`` runs ``prefect server start --host 127.0.0.1 --port P`` as a subprocess in its own
session, with its own ``PREFECT_HOME`` under ``home`` (default ``$CONTEXTMESH_HOME``, else the XDG
state directory ``~/.local/state/contextmesh``) and the environment of
:func:`~contextmesh.orchestration.settings.server_environment`. Files under ``home``::

    prefect/                 PREFECT_HOME: the SQLite database, profiles, local storage
    prefect-server.json      the pid file: pid, port, Prefect version, identity token, keep flag
    prefect-server.log       the server's stdout and stderr
    prefect-server.lock      flock: one start or stop at a time (the database is initialised under it)
    prefect-server.leases/   one file per command using a temporary server (see ensure_server)

Invariants (``tests/orchestration/test_orch_server.py``):

1. A server is reused only when its identity holds: the pid file's process is alive and is
   ``prefect server start`` on the recorded port with this home's ``PREFECT_HOME``, and the API on
   that port answers ``/api/admin/version`` with the recorded version and reads back the identity
   token stored in *its* database (a variable written at start). Whatever else answers on a port is
   never adopted: ``start`` on a port held by anything else refuses, naming the port.
2. Starting and stopping happen under the home's file lock, so two commands never start two
   servers over one database, and the first start (which creates and migrates the database) happens
   once.
3. ``stop`` signals only a process whose command line and ``PREFECT_HOME`` prove it is this home's
   server, and its whole process group; it waits, escalates to SIGKILL, and leaves nothing running.
4. ``ensure_server`` stops a server it started for a command only after the command's runs are
   recorded and the client's log and event workers are drained, and only when no other command
   holds a lease on it; a server started with ``contextmesh server start`` (``keep``) is never
   stopped by a command.

This module imports Prefect only inside :func:`ensure_server` (for the client settings and the
worker drain); ``start``/``status``/``stop`` need only ``httpx``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from contextmesh.core.errors import ExecutionError
from contextmesh.core.home import contextmesh_home
from contextmesh.orchestration.settings import client_settings, server_environment

__all__ = [
    "DEFAULT_PORT",
    "ServerError",
    "ServerHandle",
    "ServerInfo",
    "ServerStatus",
    "contextmesh_home",
    "ensure_server",
    "free_port",
    "process_alive",
    "start",
    "status",
    "stop",
    "wait_recorded",
]

DEFAULT_PORT = 4200
HOST = "127.0.0.1"
IDENTITY_VARIABLE = "contextmesh_server_identity"
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "CRASHED")
_PID = "prefect-server.json"
_LOG = "prefect-server.log"
_LOCK = "prefect-server.lock"
_LEASES = "prefect-server.leases"
_INITIALISED = ".contextmesh-initialised"
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}  # servers this process started, reaped on stop


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


@dataclass(frozen=True)
class ServerStatus:
    """Whether this home's server is running, and if not, why not."""

    home: Path
    running: bool
    info: ServerInfo | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "home": str(self.home),
            "running": self.running,
            "server": None if self.info is None else self.info.to_dict(),
            "reason": self.reason,
        }


def _home(home: Path | None) -> Path:
    return (home or contextmesh_home()).expanduser().resolve()


def prefect_home(home: Path) -> Path:
    """The ``PREFECT_HOME`` of ``home``'s server."""
    return home / "prefect"


# -- the lock and the pid file --------------------------------------------------------------------


@contextlib.contextmanager
def _locked(home: Path, timeout: float = 120.0) -> Iterator[None]:
    home.mkdir(parents=True, exist_ok=True)
    fd = os.open(home / _LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ServerError(f"{home / _LOCK} is held by another command for {timeout:g} s") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _read_pid_file(home: Path) -> ServerInfo | None:
    try:
        data = json.loads((home / _PID).read_text(encoding="utf-8"))
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


def _write_pid_file(info: ServerInfo) -> None:
    body = {"pid": info.pid, "port": info.port, "version": info.version, "token": info.token, "keep": info.keep}
    tmp = info.home / f".{_PID}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(body, out)
    tmp.replace(info.home / _PID)


# -- identity -------------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _proc_text(pid: int, name: str) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return None
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def _is_our_process(info: ServerInfo) -> tuple[bool, str]:
    """Whether the pid file's process is ``prefect server start`` on this home and port (never a stranger)."""
    if not _alive(info.pid):
        return False, f"process {info.pid} from the pid file is not running"
    argv = _proc_text(info.pid, "cmdline")
    if argv is None:
        return False, f"cannot read the command line of process {info.pid}; not trusting it"
    if not ("prefect" in " ".join(argv) and "server" in argv and "start" in argv):
        return False, f"process {info.pid} is not a Prefect server ({' '.join(argv)[:80]})"
    if "--port" not in argv or argv[argv.index("--port") + 1 : argv.index("--port") + 2] != [str(info.port)]:
        return False, f"process {info.pid} is a Prefect server, but not on port {info.port}"
    environ = _proc_text(info.pid, "environ") or []
    if f"PREFECT_HOME={prefect_home(info.home)}" not in environ:
        return False, f"process {info.pid} is a Prefect server of another PREFECT_HOME"
    return True, "ok"


def _verify(info: ServerInfo) -> tuple[bool, str]:
    ours, reason = _is_our_process(info)
    if not ours:
        return False, reason
    try:
        with httpx.Client(base_url=info.api_url, timeout=5.0) as client:
            version = client.get("/admin/version")
            if version.status_code != 200 or version.json() != info.version:
                return False, f"the API on port {info.port} does not answer with version {info.version}"
            token = client.get(f"/variables/name/{IDENTITY_VARIABLE}")
            if token.status_code != 200 or token.json().get("value") != info.token:
                return False, f"the API on port {info.port} does not hold this home's identity token"
    except (httpx.HTTPError, ValueError) as exc:
        return False, f"the API on port {info.port} does not answer ({type(exc).__name__})"
    return True, "running"


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


# -- start, status, stop ----------------------------------------------------------------------------


def status(home: Path | None = None) -> ServerStatus:
    """Whether ``home``'s managed server is running and passes the identity check."""
    root = _home(home)
    info = _read_pid_file(root)
    if info is None:
        return ServerStatus(root, False, None, "no managed server has been started from this home")
    ok, reason = _verify(info)
    return ServerStatus(root, ok, info if ok else None, reason)


def start(
    home: Path | None = None, *, port: int | None = None, ui: bool = True, keep: bool = True, timeout: float = 120.0
) -> ServerInfo:
    """Start ``home``'s server, or return the running one whose identity holds.

    ``port`` None means the previously recorded port, else ``$CONTEXTMESH_SERVER_PORT``, else 4200,
    and any free port when that one is taken; a port named explicitly must be free. ``keep=False``
    marks a server started for one command (``ensure_server`` stops it); ``keep=True`` on a running
    temporary server makes it a kept one.
    """
    root = _home(home)
    with _locked(root):
        current = _read_pid_file(root)
        if current is not None:
            ok, _ = _verify(current)
            if ok and (port is None or port == current.port):
                if keep and not current.keep:
                    current = ServerInfo(root, current.pid, current.port, current.version, current.token, True)
                    _write_pid_file(current)
                return current
            if ok:
                raise ServerError(
                    f"this home's server already runs on port {current.port}; stop it before starting on port {port}"
                )
            if _is_our_process(current)[0]:
                _terminate(current.pid)  # our server, but not answering as itself: replace it
            (root / _PID).unlink(missing_ok=True)
        chosen = _choose_port(port, current)
        try:
            return _launch(root, chosen, ui=ui, keep=keep, timeout=timeout)
        except ServerError:
            if port is not None or _port_free(chosen):
                raise
            # Another process took the port between the check and the bind: take any free one.
            return _launch(root, free_port(), ui=ui, keep=keep, timeout=timeout)


def _choose_port(port: int | None, previous: ServerInfo | None) -> int:
    if port is not None:
        if not _port_free(port):
            raise ServerError(
                f"port {port} on {HOST} is held by another process; ContextMesh never adopts a server it did not "
                "start (it cannot vouch for its database) — stop that process or choose another port"
            )
        return port
    preferred = [previous.port] if previous is not None else []
    env_port = os.environ.get("CONTEXTMESH_SERVER_PORT")
    preferred.append(int(env_port) if env_port and env_port.isdigit() else DEFAULT_PORT)
    return next((p for p in preferred if _port_free(p)), None) or free_port()


def _launch(root: Path, port: int, *, ui: bool, keep: bool, timeout: float) -> ServerInfo:
    phome = prefect_home(root)
    phome.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "prefect", "server", "start", "--host", HOST, "--port", str(port), "--analytics-off"]
    argv.append("--ui" if ui else "--no-ui")
    env = server_environment(phome, ui=ui)
    # The UI asks /ui-settings where its API is; Prefect derives that from its default port, not
    # from --port, so a UI on another port would talk to whatever listens on 4200.
    env["PREFECT_SERVER_UI_API_URL"] = f"http://{HOST}:{port}/api"
    with (root / _LOG).open("ab") as log:
        proc = subprocess.Popen(  # noqa: S603 - a fixed argv: this interpreter, prefect, loopback, a port number
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=root,
        )
    _CHILDREN[proc.pid] = proc
    api = f"http://{HOST}:{port}/api"
    try:
        version = _wait_healthy(proc, api, timeout, root / _LOG)
        token = secrets.token_hex(16)
        _store_token(api, token)
    except BaseException:
        _terminate(proc.pid)
        raise
    info = ServerInfo(root, proc.pid, port, version, token, keep)
    _write_pid_file(info)
    (phome / _INITIALISED).touch()
    return info


def _wait_healthy(proc: subprocess.Popen[bytes], api: str, timeout: float, log: Path) -> str:
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=api, timeout=1.0) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ServerError(f"prefect server exited with code {proc.returncode}; see {log}:\n{_tail(log)}")
            try:
                # /health answers before the database does; /ready only once it is connectable.
                if client.get("/health").status_code == 200 and client.get("/ready").status_code == 200:
                    version = client.get("/admin/version").json()
                    return str(version)
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
    raise ServerError(f"prefect server did not become healthy within {timeout:g} s; see {log}:\n{_tail(log)}")


def _tail(log: Path, lines: int = 12) -> str:
    try:
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _store_token(api: str, token: str, *, patience: float = 30.0) -> None:
    deadline = time.monotonic() + patience
    with httpx.Client(base_url=api, timeout=10.0) as client:
        while True:
            made = client.post("/variables/", json={"name": IDENTITY_VARIABLE, "value": token})
            if made.status_code == 409:
                made = client.patch(f"/variables/name/{IDENTITY_VARIABLE}", json={"value": token})
            if made.status_code != 503 or time.monotonic() >= deadline:
                break
            time.sleep(0.5)  # a loaded server can still answer 503 just after it reported ready
        if made.status_code >= 400:
            raise ServerError(f"could not store the identity token on the new server: HTTP {made.status_code}")


def stop(home: Path | None = None, *, timeout: float = 15.0) -> bool:
    """Stop ``home``'s server if it is running (True) and remove its pid file; never touch a stranger."""
    root = _home(home)
    with _locked(root):
        return _stop_locked(root, timeout)


def _stop_locked(root: Path, timeout: float) -> bool:
    info = _read_pid_file(root)
    if info is None:
        return False
    ours, _ = _is_our_process(info)
    if ours:
        _terminate(info.pid, timeout)
    (root / _PID).unlink(missing_ok=True)
    return ours


def _terminate(pid: int, timeout: float = 15.0) -> None:
    """SIGTERM the server's process group, wait, then SIGKILL what is left; reap our own child."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not _alive(pid) and not _group_alive(pid):
                break
            time.sleep(0.05)
        else:
            continue
        break
    child = _CHILDREN.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=5.0)


def process_alive(pid: int) -> bool:
    """True while ``pid`` or any process of its group (a server's children) is still running."""
    return _alive(pid) or _group_alive(pid)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


# -- recording --------------------------------------------------------------------------------------


def wait_recorded(api_url: str, flow_run_ids: list[str], expected: int, *, timeout: float = 30.0) -> bool:
    """Poll until the server has recorded ``expected`` terminal task runs of these flow runs."""
    if not flow_run_ids:
        return True
    body = {"flow_runs": {"id": {"any_": flow_run_ids}}, "task_runs": {"state": {"type": {"any_": list(TERMINAL)}}}}
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=api_url, timeout=5.0) as client:
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                if int(client.post("/task_runs/count", json=body).json()) >= expected:
                    return True
            time.sleep(0.1)
    return False


# -- a server for one command ---------------------------------------------------------------------


@dataclass
class ServerHandle:
    """The API a command talks to; ``started`` when it was started for this command and will stop."""

    api_url: str
    started: bool
    home: Path | None
    note: str = ""
    recorded: list[tuple[str, int]] = field(default_factory=list)

    @property
    def ui_url(self) -> str:
        """The UI root (the API URL without ``/api``)."""
        return self.api_url.removesuffix("/").removesuffix("/api")

    def flow_run_url(self, flow_run_id: str) -> str:
        """Where a person watches a flow run."""
        return f"{self.ui_url}/runs/flow-run/{flow_run_id}"

    def record(self, flow_run_id: str, task_runs: int) -> None:
        """Remember a flow run and its task-run count; the handle waits for them before stopping."""
        self.recorded.append((flow_run_id, task_runs))


def configured_api_url() -> str | None:
    """``PREFECT_API_URL`` from the environment or the active Prefect profile, if any."""
    from_env = os.environ.get("PREFECT_API_URL")
    if from_env:
        return from_env
    import prefect.settings as ps  # noqa: PLC0415 - only commands that run Prefect pay for the import

    value = ps.PREFECT_API_URL.value()
    return str(value) if value else None


@contextlib.contextmanager
def ensure_server(home: Path | None = None, *, heartbeat: bool = False, ui: bool = True) -> Iterator[ServerHandle]:
    """The Prefect API for one command: the configured one, the running managed one, or one started for it.

    A server started here is stopped when the block ends — after the runs given to
    :meth:`ServerHandle.record` are recorded and the client's log and event workers have drained —
    unless another command still holds a lease on it or someone ran ``contextmesh server start``.
    """
    configured = configured_api_url()
    if configured:
        handle = ServerHandle(configured, False, None)
        with client_settings(configured, heartbeat=heartbeat):
            try:
                yield handle
            finally:
                _settle(handle)
        return
    root = _home(home)
    info = start(root, ui=ui, keep=False)
    started = not info.keep
    note = (
        ""
        if not started
        else f"started a Prefect server for this command at {info.ui_url}; it stops when the command ends — "
        "run `contextmesh server start` to keep it, and its UI, running"
    )
    handle = ServerHandle(info.api_url, started, root, note)
    lease = _take_lease(root)
    try:
        with client_settings(info.api_url, heartbeat=heartbeat):
            try:
                yield handle
            finally:
                _settle(handle)
    finally:
        _release_lease(root, lease)


def _settle(handle: ServerHandle) -> None:
    if handle.recorded:
        ids = [flow_run_id for flow_run_id, _ in handle.recorded]
        wait_recorded(handle.api_url, ids, sum(n for _, n in handle.recorded))
    drain_workers()


def drain_workers() -> None:
    """Flush this process's Prefect log and event workers (before a server it talks to goes away)."""
    from prefect.events.worker import EventsWorker  # noqa: PLC0415
    from prefect.logging.handlers import APILogWorker  # noqa: PLC0415

    with contextlib.suppress(RuntimeError):
        APILogWorker.instance().drain()
    EventsWorker.drain_all()


def _take_lease(root: Path) -> Path:
    leases = root / _LEASES
    leases.mkdir(parents=True, exist_ok=True)
    lease = leases / f"{os.getpid()}-{secrets.token_hex(4)}"
    lease.write_text(str(os.getpid()), encoding="utf-8")
    return lease


def _release_lease(root: Path, lease: Path) -> None:
    # The last user of a temporary server stops it, whichever command started it.
    lease.unlink(missing_ok=True)
    with _locked(root):
        info = _read_pid_file(root)
        if info is None or info.keep:
            return
        if not any(_lease_alive(p) for p in list((root / _LEASES).iterdir())):
            _stop_locked(root, 15.0)


def _lease_alive(path: Path) -> bool:
    try:
        pid = int(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if _alive(pid):
        return True
    path.unlink(missing_ok=True)
    return False

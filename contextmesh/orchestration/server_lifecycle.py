"""Start, check and stop a home's managed Prefect server.

Invariants 1-3 of :mod:`contextmesh.orchestration.local_server`: a running server is reused only
when its identity holds, starting and stopping happen under the home's lock, and ``stop`` signals
only a process proven to be this home's server.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from contextmesh.orchestration.server_files import (
    HOST,
    IDENTITY_VARIABLE,
    INITIALISED,
    LOG_FILE,
    PID_FILE,
    ServerError,
    ServerInfo,
    home_root,
    locked,
    prefect_home,
    read_pid_file,
    write_pid_file,
)
from contextmesh.orchestration.server_process import (
    free_port,
    is_our_process,
    port_free,
    spawn,
    terminate,
    verify,
)
from contextmesh.orchestration.settings import server_environment

__all__ = ["DEFAULT_PORT", "ServerStatus", "start", "status", "stop", "stop_locked"]

DEFAULT_PORT = 4200


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


def status(home: Path | None = None) -> ServerStatus:
    """Whether ``home``'s managed server is running and passes the identity check."""
    root = home_root(home)
    info = read_pid_file(root)
    if info is None:
        return ServerStatus(root, False, None, "no managed server has been started from this home")
    ok, reason = verify(info)
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
    root = home_root(home)
    with locked(root):
        current = read_pid_file(root)
        if current is not None:
            ok, _ = verify(current)
            if ok and (port is None or port == current.port):
                if keep and not current.keep:
                    current = ServerInfo(root, current.pid, current.port, current.version, current.token, True)
                    write_pid_file(current)
                return current
            if ok:
                raise ServerError(
                    f"this home's server already runs on port {current.port}; stop it before starting on port {port}"
                )
            if is_our_process(current)[0]:
                terminate(current.pid)  # our server, but not answering as itself: replace it
            (root / PID_FILE).unlink(missing_ok=True)
        chosen = _choose_port(port, current)
        try:
            return _launch(root, chosen, ui=ui, keep=keep, timeout=timeout)
        except ServerError:
            if port is not None or port_free(chosen):
                raise
            # Another process took the port between the check and the bind: take any free one.
            return _launch(root, free_port(), ui=ui, keep=keep, timeout=timeout)


def _choose_port(port: int | None, previous: ServerInfo | None) -> int:
    if port is not None:
        if not port_free(port):
            raise ServerError(
                f"port {port} on {HOST} is held by another process; ContextMesh never adopts a server it did not "
                "start (it cannot vouch for its database) — stop that process or choose another port"
            )
        return port
    preferred = [previous.port] if previous is not None else []
    env_port = os.environ.get("CONTEXTMESH_SERVER_PORT")
    preferred.append(int(env_port) if env_port and env_port.isdigit() else DEFAULT_PORT)
    return next((p for p in preferred if port_free(p)), None) or free_port()


def _launch(root: Path, port: int, *, ui: bool, keep: bool, timeout: float) -> ServerInfo:
    phome = prefect_home(root)
    phome.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "prefect", "server", "start", "--host", HOST, "--port", str(port), "--analytics-off"]
    argv.append("--ui" if ui else "--no-ui")
    env = server_environment(phome, ui=ui)
    # The UI asks /ui-settings where its API is; Prefect derives that from its default port, not
    # from --port, so a UI on another port would talk to whatever listens on 4200.
    env["PREFECT_SERVER_UI_API_URL"] = f"http://{HOST}:{port}/api"
    proc = spawn(argv, env, root / LOG_FILE, root)
    api = f"http://{HOST}:{port}/api"
    try:
        version = _wait_healthy(proc, api, timeout, root / LOG_FILE, phome)
        token = secrets.token_hex(16)
        _store_token(api, token)
    except BaseException:
        terminate(proc.pid)
        raise
    info = ServerInfo(root, proc.pid, port, version, token, keep)
    write_pid_file(info)
    (phome / INITIALISED).touch()
    return info


def _wait_healthy(proc: subprocess.Popen[bytes], api: str, timeout: float, log: Path, phome: Path) -> str:
    """The version of the server ``proc`` runs, once it answers ready on ``api``.

    Two homes starting at once may both find the port free; the one that loses the bind exits, but
    until it does the winner answers on that port. So the answering server must name this home's
    Prefect home in its settings — else it is somebody else's and we keep waiting for our own (or
    for it to exit, which is then reported)."""
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=api, timeout=1.0) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ServerError(f"prefect server exited with code {proc.returncode}; see {log}:\n{_tail(log)}")
            try:
                # /health answers before the database does; /ready only once it is connectable.
                if client.get("/health").status_code == 200 and client.get("/ready").status_code == 200:
                    home = client.get("/admin/settings").json().get("home")
                    if home is not None and Path(str(home)).resolve() == phome.resolve():
                        return str(client.get("/admin/version").json())
            except (httpx.HTTPError, ValueError):  # not up yet, or not a Prefect API answering
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
    root = home_root(home)
    with locked(root):
        return stop_locked(root, timeout)


def stop_locked(root: Path, timeout: float) -> bool:
    """:func:`stop` for a caller that already holds the home's lock."""
    info = read_pid_file(root)
    if info is None:
        return False
    ours, _ = is_our_process(info)
    if ours:
        terminate(info.pid, timeout)
    (root / PID_FILE).unlink(missing_ok=True)
    return ours

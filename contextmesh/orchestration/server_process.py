"""The managed server's process: is it alive, is it really this home's server, stop it and its group.

A server is trusted only when its identity holds (invariant 1 of
:mod:`contextmesh.orchestration.local_server`): the pid file's process is alive and is ``prefect
server start`` on the recorded port with this home's ``PREFECT_HOME`` (read from ``/proc``), and
the API on that port answers with the recorded version and holds the identity token stored in its
own database. ``terminate`` signals a whole process group, waits, escalates to SIGKILL, and reaps
the child when this process started it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from contextmesh.orchestration.server_files import HOST, IDENTITY_VARIABLE, ServerInfo, prefect_home

__all__ = [
    "CHILDREN",
    "alive",
    "free_port",
    "group_alive",
    "is_our_process",
    "port_free",
    "proc_text",
    "process_alive",
    "spawn",
    "terminate",
    "verify",
]

CHILDREN: dict[int, subprocess.Popen[bytes]] = {}  # servers this process started, reaped on stop


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a child this process started is polled, so it is reaped)."""
    child = CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def proc_text(pid: int, name: str) -> list[str] | None:
    """``/proc/<pid>/<name>`` split at NULs (the command line, the environment), or None."""
    try:
        raw = Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return None
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def is_our_process(info: ServerInfo) -> tuple[bool, str]:
    """Whether the pid file's process is ``prefect server start`` on this home and port (never a stranger)."""
    if not alive(info.pid):
        return False, f"process {info.pid} from the pid file is not running"
    argv = proc_text(info.pid, "cmdline")
    if argv is None:
        return False, f"cannot read the command line of process {info.pid}; not trusting it"
    if not ("prefect" in " ".join(argv) and "server" in argv and "start" in argv):
        return False, f"process {info.pid} is not a Prefect server ({' '.join(argv)[:80]})"
    if "--port" not in argv or argv[argv.index("--port") + 1 : argv.index("--port") + 2] != [str(info.port)]:
        return False, f"process {info.pid} is a Prefect server, but not on port {info.port}"
    environ = proc_text(info.pid, "environ") or []
    if f"PREFECT_HOME={prefect_home(info.home)}" not in environ:
        return False, f"process {info.pid} is a Prefect server of another PREFECT_HOME"
    return True, "ok"


def verify(info: ServerInfo) -> tuple[bool, str]:
    """Whether the pid file's server is ours and its API answers as it (version and identity token)."""
    ours, reason = is_our_process(info)
    if not ours:
        return False, reason
    # Imported here: the served-process checks (process_alive) run in the core install too, where
    # ``evidence add`` asks whether a serving process will react, and that install has no httpx.
    import httpx  # noqa: PLC0415

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


def port_free(port: int) -> bool:
    """True when nothing is bound to ``port`` on loopback."""
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


def terminate(pid: int, timeout: float = 15.0) -> None:
    """SIGTERM the server's process group, wait, then SIGKILL what is left; reap our own child."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive(pid) and not group_alive(pid):
                break
            time.sleep(0.05)
        else:
            continue
        break
    child = CHILDREN.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=5.0)


def process_alive(pid: int) -> bool:
    """True while ``pid`` or any process of its group (a server's children) is still running."""
    return alive(pid) or group_alive(pid)


def group_alive(pgid: int) -> bool:
    """True while any process of the group ``pgid`` runs."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def spawn(argv: list[str], env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session, output appended to ``log``; remembered so ``alive`` can reap it."""
    with log.open("ab") as out:
        child = subprocess.Popen(  # noqa: S603 - a fixed argv: this interpreter, prefect, loopback, a port number
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=cwd,
        )
    CHILDREN[child.pid] = child
    return child

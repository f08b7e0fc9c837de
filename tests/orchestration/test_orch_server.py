"""The managed local server: started once per home, reused only when it proves its identity, stopped clean.

These tests start their own servers in a temporary ``CONTEXTMESH_HOME`` (the session server of
``conftest.py`` is not touched). The first test runs a command in a subprocess with nothing
configured, the way ``contextmesh execute`` would; the second reuses that home's database.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from contextmesh.orchestration import local_server as server
from contextmesh.orchestration.commands import server_command

pytestmark = pytest.mark.integration

COMMAND = textwrap.dedent(
    """
    import json, sys
    from contextmesh.orchestration.settings import prepare_environment
    prepare_environment()
    from prefect import flow, task
    from contextmesh.orchestration.local_server import ensure_server, status

    @task
    def double(x: int) -> int:
        return 2 * x

    @flow(name="cm-test-command")
    def command() -> int:
        return double.submit(21).result()

    with ensure_server(ui=False) as handle:
        state = command(return_state=True)
        handle.record(str(state.state_details.flow_run_id), 1)
        running = status()
        print(json.dumps({"answer": state.result(), "started": handle.started, "note": handle.note,
                          "pid": running.info.pid if running.info else None, "api": handle.api_url}))
    """
)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("managed-home")
    yield root
    server.stop(root)


def test_a_command_with_nothing_configured_starts_a_server_and_leaves_no_process_behind(
    home: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update({"CONTEXTMESH_HOME": str(home), "PREFECT_HOME": str(tmp_path / "client-prefect-home")})
    env["CONTEXTMESH_SERVER_PORT"] = str(server.free_port())  # not 4200: other test runs may share the machine
    done = subprocess.run(
        [sys.executable, "-c", COMMAND], env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["answer"] == 42 and report["started"] is True
    assert "contextmesh server start" in report["note"]
    assert "Traceback" not in done.stderr and "Error logging to API" not in done.stderr
    assert not server.process_alive(report["pid"]), "the temporary server outlived its command"
    assert not (home / "prefect-server.json").exists()
    assert server.status(home).running is False
    assert (home / "prefect" / "prefect.db").exists()  # the database stays for the next start


def test_start_twice_reuses_one_server_and_stop_leaves_nothing_running(home: Path) -> None:
    port = server.free_port()
    first = server.start(home, port=port, ui=False, timeout=180)
    second = server.start(home, ui=False)
    assert second.pid == first.pid and second.port == port
    environ = Path(f"/proc/{first.pid}/environ").read_bytes().split(b"\0")
    ui_api = f"PREFECT_SERVER_UI_API_URL=http://127.0.0.1:{port}/api".encode()
    assert ui_api in environ, "the UI is told its own server's port, not Prefect's default 4200"
    data, text = server_command("start", home=home, ui=False)  # what `contextmesh server start` calls
    assert data["server"]["pid"] == first.pid and f"UI http://127.0.0.1:{port}" in text
    found = server.status(home)
    assert found.running and found.info is not None and found.info.pid == first.pid
    assert found.to_dict()["server"]["api_url"] == f"http://127.0.0.1:{port}/api"
    assert server.stop(home) is True
    assert not server.process_alive(first.pid)
    assert _port_free(port)
    assert server.status(home).running is False
    assert server.stop(home) is False  # nothing left to stop


class _Impostor(http.server.BaseHTTPRequestHandler):
    """Answers like a Prefect server: healthy, version 3.9.1, and any variable you ask for."""

    def do_GET(self) -> None:
        body = {"/api/health": True, "/api/admin/version": "3.9.1"}.get(self.path, {"value": "whatever"})
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def impostor() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield int(httpd.server_address[1])
    httpd.shutdown()
    httpd.server_close()


def test_a_foreign_process_listening_on_the_port_is_not_adopted(impostor: int, tmp_path: Path) -> None:
    with pytest.raises(server.ServerError, match=f"port {impostor} .* held by another process"):
        server.start(tmp_path, port=impostor, ui=False)
    assert not (tmp_path / "prefect-server.json").exists()
    # A pid file naming a live process that is not this home's server, on a port that answers like one.
    (tmp_path / "prefect-server.json").write_text(
        json.dumps({"pid": os.getpid(), "port": impostor, "version": "3.9.1", "token": "whatever", "keep": True})
    )
    found = server.status(tmp_path)
    assert found.running is False and "not a Prefect server" in found.reason
    assert server.stop(tmp_path) is False  # never signals a stranger
    assert not (tmp_path / "prefect-server.json").exists()


def _port_free(port: int) -> bool:
    """Nothing holds the port: no process listens on it or is bound to it.

    SO_REUSEADDR lets the probe bind past what the kernel keeps of closed connections (a client of
    this process still connected when the server died leaves one in FIN_WAIT or TIME_WAIT, more often
    on a loaded machine), never past a socket that is still bound or listening.
    """
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_two_homes_starting_at_once_each_end_with_their_own_server(tmp_path: Path) -> None:
    # Both find the same preferred port free; the one that loses the bind must not take the
    # winner's answer for its own server (it used to: its record then named the other home's server).
    port = server.free_port()
    homes = [tmp_path / "a", tmp_path / "b"]
    script = (
        "import sys, pathlib\n"
        "from contextmesh.orchestration import local_server as s\n"
        "s.start(pathlib.Path(sys.argv[1]), ui=False, timeout=180)\n"
    )
    env = {**os.environ, "CONTEXTMESH_SERVER_PORT": str(port)}
    starts = [subprocess.Popen([sys.executable, "-c", script, str(h)], env=env) for h in homes]
    try:
        assert [p.wait(timeout=300) for p in starts] == [0, 0]
        found = [server.status(h) for h in homes]
        assert all(f.running for f in found), [f.reason for f in found]
        ports = {f.info.port for f in found if f.info is not None}
        assert len(ports) == 2 and port in ports, ports
    finally:
        for h in homes:
            server.stop(h)

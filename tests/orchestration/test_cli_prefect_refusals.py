"""The CLI's refusals that go through Prefect's client: an API that does not answer or answers 503, a broken manifest.

Issue 15 item 6 (``execute`` and ``recheck --deployment`` with an unreachable Prefect API ended in a
connection traceback) and the CLI half of item 9 (a broken manifest met by ``recheck``, ``resume``,
``repair`` or ``serve`` was reported at ``$`` without naming the file). Each is one line on stderr,
exit 1, and under ``--json`` one error document; nothing is started and nothing is changed. These
run as real processes (``python -m contextmesh``) against a closed loopback port; they need Prefect
installed but no server.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from demo_cache import DemoSessions

from contextmesh.core.errors import ExecutionError
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.resolve import Resolver
from contextmesh.orchestration.served_record import peek
from contextmesh.session.commit import latest_generation
from contextmesh.session.layout import manifest_name
from contextmesh.session.session import Session

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> Path:
    directory, _ = demo_sessions.copy(tmp_path_factory.mktemp("cli-prefect"), rounds=0, name="session")
    return directory


def clone(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest, symlinks=True)
    return dest


def closed_api_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/api"


def run_cli(*args: str, env: dict[str, str], timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextmesh", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
        check=False,
    )


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def error_document(out: str) -> dict[str, Any]:
    document = json.loads(out)
    assert set(document) == {"error"} and set(document["error"]) == {"type", "message", "path"}, document
    return dict(document["error"])


@pytest.mark.parametrize(
    "argv",
    [
        ["execute", "--executor", "prefect"],
        ["execute", "--executor", "prefect", "--json"],
        ["recheck", "--session", "{session}", "--deployment"],
        ["resume", "--session", "{session}", "--deployment", "--json"],
        ["repair", "hashing", "--assumes", "new ground", "--session", "{session}", "--deployment"],
    ],
)
def test_an_unreachable_prefect_api_is_one_refusal_naming_it(template: Path, tmp_path: Path, argv: list[str]) -> None:
    session = clone(template, tmp_path / "session")
    api = closed_api_url()
    done = run_cli(
        *[a.format(session=session) for a in argv],
        env={"PREFECT_API_URL": api, "CONTEXTMESH_HOME": str(tmp_path / "home")},
        timeout=90,
    )
    assert done.returncode == 1, done.stderr
    line = one_line(done.stderr)
    assert api in line and "does not answer" in line and "contextmesh server start" in line
    if "--json" in argv:
        assert api in error_document(done.stdout)["message"]
    else:
        assert done.stdout == ""
    assert latest_generation(session) == 1
    assert not (tmp_path / "home" / "prefect-server.json").exists()  # no server was started for it


def _break_manifest(directory: Path) -> Path:
    path = directory / manifest_name(latest_generation(directory))
    path.write_bytes(b'["not a manifest"]\n')
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["recheck", "--session", "{session}"],
        ["resume", "--session", "{session}", "--json"],
        ["repair", "hashing", "--assumes", "new ground", "--session", "{session}"],
        ["serve", "--session", "{session}", "--project", str(ROOT)],
    ],
)
def test_a_broken_manifest_is_reported_naming_the_file(template: Path, tmp_path: Path, argv: list[str]) -> None:
    session = clone(template, tmp_path / "session")
    broken = _break_manifest(session)
    done = run_cli(
        *[a.format(session=session) for a in argv],
        env={"PREFECT_API_URL": closed_api_url(), "CONTEXTMESH_HOME": str(tmp_path / "home")},
        timeout=90,
    )
    assert done.returncode == 1, done.stderr
    line = one_line(done.stderr)
    assert f"{broken.name}:$" in line, line
    if "--json" in argv:
        error = error_document(done.stdout)
        assert error["path"] == f"{broken.name}:$"
    assert broken.read_bytes() == b'["not a manifest"]\n'


@pytest.mark.parametrize("command", ["recheck", "resume"])
def test_looking_for_a_served_deployment_of_a_session_without_a_plan_names_it(tmp_path: Path, command: str) -> None:
    directory = tmp_path / "graph-only"
    Session.create(directory, Session(ContextGraph(), Resolver()))
    env = {"PREFECT_API_URL": closed_api_url(), "CONTEXTMESH_HOME": str(tmp_path / "home")}
    done = run_cli(command, "--session", str(directory), env=env)
    assert done.returncode == 1
    assert one_line(done.stderr).endswith(f"{directory} holds no execution plan")
    with pytest.raises(ExecutionError, match=r"holds no execution plan$"):
        peek(str(directory))  # the served-record lookup reads the manifest alone: the same sentence


class _BusyApi:
    """A loopback API that is up (``/health`` answers) but refuses every other request with 503."""

    def __init__(self) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                status = 200 if self.path.endswith("/health") else 503
                body = b"true" if status == 200 else b'{"detail": "busy"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer  # noqa: N815 - http.server's names

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("argv", [["execute", "--executor", "prefect"], ["execute", "--executor", "prefect", "--json"]])
def test_an_api_that_answers_503_is_one_refusal_naming_the_request_not_an_internal_error(
    tmp_path: Path, argv: list[str]
) -> None:
    busy = _BusyApi()
    try:
        done = run_cli(
            *argv,
            env={
                "PREFECT_API_URL": busy.url,
                "PREFECT_CLIENT_MAX_RETRIES": "0",
                "CONTEXTMESH_HOME": str(tmp_path / "home"),
            },
        )
    finally:
        busy.close()
    assert done.returncode == 1, done.stderr
    line = one_line(done.stderr)
    assert "internal error" not in line and "answered 503" in line and busy.url in line, line
    assert "run the command again" in line
    if "--json" in argv:
        error = error_document(done.stdout)
        assert error["type"] == "ApiError" and error["path"] is not None and error["path"].startswith(busy.url)
    else:
        assert done.stdout == ""

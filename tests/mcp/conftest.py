"""Fixtures of the MCP tests: one demo session template per run, a private copy per test; a real
Prefect server for the dispatch tests, started only when one of them asks for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from contextmesh.orchestration.settings import prepare_environment

prepare_environment()  # before anything imports Prefect: quiet clients, no telemetry, no ephemeral server

import pytest  # noqa: E402
from mcp_helpers import copy_session  # noqa: E402

from contextmesh.demo.saved import save_demo_session  # noqa: E402
from contextmesh.orchestration import local_server as server  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo saved as a session (walk rounds run, plan round 1 executed), built once."""
    base = tmp_path_factory.mktemp("demo-template")
    save_demo_session(base / "session", feed=base / "no-advisories.json")
    return base / "session"


@pytest.fixture
def session_dir(demo_template: Path, tmp_path: Path) -> Path:
    """A private copy of the demo session."""
    return copy_session(demo_template, tmp_path / "session")


@pytest.fixture
def feed(tmp_path: Path) -> Path:
    """This test's advisory feed (absent: no advisories until a test publishes one)."""
    return tmp_path / "feed.json"


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The API URL of a real Prefect server (the managed one, in a temporary home, no UI), for this run."""
    home = tmp_path_factory.mktemp("mcp-prefect-server")
    info = server.start(home, port=server.free_port(), ui=False, keep=False, timeout=240)
    try:
        yield info.api_url
        server.drain_workers()
    finally:
        server.stop(home)
    assert not server.process_alive(info.pid), "the test server's process outlived the session"

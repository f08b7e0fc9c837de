"""A real Prefect server on loopback for the orchestration tests, started once and stopped at the end.

The server is the managed server of :mod:`contextmesh.orchestration.local_server`, in a temporary home
(its own ``PREFECT_HOME``), on a free port, analytics off, the recorder batching shortened, no UI.
The client side points at it through ``temporary_settings`` (never ``os.environ`` after Prefect is
imported, which Prefect ignores); the log and event workers are drained before the server stops,
and the test session checks that no server process is left behind.
"""

from __future__ import annotations

from collections.abc import Iterator

from contextmesh.orchestration.settings import prepare_environment

prepare_environment()  # before anything imports Prefect: quiet clients, no telemetry, no ephemeral server

import pytest  # noqa: E402

from contextmesh.orchestration import local_server as server  # noqa: E402
from contextmesh.orchestration.settings import client_settings  # noqa: E402


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The API URL of a real Prefect server for this test session."""
    home = tmp_path_factory.mktemp("prefect-server")
    info = server.start(home, port=server.free_port(), ui=False, keep=False, timeout=180)
    try:
        with client_settings(info.api_url, heartbeat=False):
            yield info.api_url
            server.drain_workers()
    finally:
        server.stop(home)
    assert not server.process_alive(info.pid), "the test server's process outlived the session"

"""Fixtures and collection rules of the whole suite.

Session fixtures, each started or built once per test run (per xdist worker) and only when a test asks:

* ``demo_sessions`` — the demo saved as a session directory, once per walk-round count; tests take
  private copies (:class:`demo_cache.DemoSessions`);
* ``demo_worlds``   — the in-memory demo world, once per walk-round count, for modules that only read
  it (:class:`demo_cache.DemoWorlds`; the module fixture checks afterwards that nothing changed it);
* ``prefect_api``   — a real Prefect server on loopback (SQLite), shared by the orchestration and MCP
  tests: the managed server of :mod:`contextmesh.orchestration.local_server` in a temporary home (its
  own ``PREFECT_HOME``), on a free port, analytics off, recorder batching shortened, no UI. The
  client side points at it through ``temporary_settings`` (never ``os.environ`` after Prefect is
  imported, which Prefect ignores); the log and event workers drain before it stops, and the session
  checks that no server process is left behind. ``tests/deployments`` overrides it with a server on
  PostgreSQL, a configuration of its own.

Collection rules (:func:`pytest_collection_modifyitems`):

* a test that starts a server, a subprocess transport or a browser must be marked ``integration``
  (:mod:`marker_audit`); the run is refused otherwise;
* under ``--leave-core-layers`` (scripts/test's main suite) the tests of layers 1-7 not marked
  ``integration`` are deselected, and their modules that mention no ``integration`` are not even
  imported: the core suite runs them (:mod:`core_layers`);
* under ``--dist loadscope`` (scripts/test runs xdist workers) each test module is one unit of
  work, and each Prefect server configuration's modules are one unit per server of it (the SQLite
  server's are split over two), handed out longest first (:mod:`xdist_units`);
* each server configuration stops after the last test that uses it, not at the end of the worker's
  run (:mod:`server_lifetime`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextmesh.orchestration.settings import prepare_environment

prepare_environment()  # before anything imports Prefect: quiet clients, no telemetry, no ephemeral server

import core_layers  # noqa: E402
import pytest  # noqa: E402
import run_notes  # noqa: E402
import xdist_units  # noqa: E402
from demo_cache import DemoSessions, DemoWorlds  # noqa: E402
from marker_audit import AUDIT, AUDIT_ENV, audit  # noqa: E402
from server_lifetime import pytest_collection_finish, pytest_runtest_teardown  # noqa: E402, F401  (hooks)


@pytest.fixture(scope="session")
def demo_sessions(tmp_path_factory: pytest.TempPathFactory) -> DemoSessions:
    """The demo saved once per walk-round count; ``.copy(root, rounds=...)`` gives a private copy."""
    # Under xdist every worker has its own base temp directory below one the run shares.
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    return DemoSessions(shared / "demo-sessions")


@pytest.fixture(scope="session")
def demo_worlds() -> DemoWorlds:
    """The demo world built once per walk-round count, shared read-only."""
    return DemoWorlds()


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The API URL of a real Prefect server for this test session."""
    from contextmesh.orchestration import local_server as server
    from contextmesh.orchestration.settings import client_settings

    home = tmp_path_factory.mktemp("prefect-server")
    info = server.start(home, port=server.free_port(), ui=False, keep=False, timeout=240)
    try:
        with client_settings(info.api_url, heartbeat=False):
            yield info.api_url
            server.drain_workers()
    finally:
        server.stop(home)
    assert not server.process_alive(info.pid), "the test server's process outlived the session"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    starting, unmarked = audit(items)
    config.stash[AUDIT] = ([item.nodeid for item in items], starting, unmarked)
    if os.environ.get(AUDIT_ENV):  # tests/test_markers.py collecting in a subprocess
        Path(os.environ[AUDIT_ENV]).write_text(json.dumps(config.stash[AUDIT]), encoding="utf-8")
    if unmarked:
        listed = "\n  ".join(unmarked)
        raise pytest.UsageError(
            f"these tests start a server, a subprocess transport or a browser but are not marked "
            f"integration (add pytestmark = pytest.mark.integration):\n  {listed}"
        )
    core_layers.leave_to_core_suite(config, items)
    xdist_units.order_and_record(config, items)


def pytest_addoption(parser: pytest.Parser) -> None:
    core_layers.add_option(parser)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return True if core_layers.not_collected(collection_path, config) else None


def pytest_configure(config: pytest.Config) -> None:
    xdist_units.start(config)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for line in run_notes.gather(config):  # what the folders left, from whichever process ran them
        terminalreporter.write_line(line)


def pytest_unconfigure(config: pytest.Config) -> None:
    xdist_units.stop(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    xdist_units.configure_node(node)


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own choice of scheduler
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return xdist_units.make_scheduler(config, log)

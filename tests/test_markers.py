"""Every test that starts a server, a subprocess transport or a browser is marked ``integration``.

The root ``conftest.py`` audits every collection (:mod:`marker_audit`) and refuses a run in which a
starting test is unmarked. These tests check the audit itself: that it finds the suite's known
starters (a Prefect server fixture, the MCP stdio transport, an HTTP server process, the Inspector,
a browser) and passes plain tests, and that it follows code into the tests' helpers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from marker_audit import AUDIT, AUDIT_ENV, TESTS_DIR, reaches_a_starter

ROOT = TESTS_DIR.parent
# One test per kind of starter, each reached a different way.
KNOWN_STARTERS = [
    "tests/orchestration/test_orch_rounds.py::test_blocked_tasks_get_no_task_run_and_are_listed_with_their_reasons",
    "tests/orchestration/test_orch_walkthrough.py::test_each_round_is_one_named_flow_run",  # via a module fixture
    "tests/deployments/test_deploy_sigkill.py::"
    "test_sigkill_of_the_flow_run_process_leaves_the_session_and_a_new_attempt_completes_the_round",
    "tests/mcp/test_mcp_transports.py::test_a_stdio_subprocess_serves_tools_and_resources",
    "tests/mcp/test_mcp_transports.py::test_the_demo_banner_says_it_is_not_persistent",  # python -m, by name
    "tests/mcp/test_mcp_transports.py::test_http_serves_json_over_post_only_on_loopback",  # ServerProcess
    "tests/mcp/test_mcp_inspector.py::test_the_inspector_lists_the_tools_and_asks_over_stdio",
    "tests/mcp/test_mcp_dispatch.py::test_the_full_path_through_mcp_alone_against_a_served_deployment",
    "tests/dashboard/test_dashboard_browser.py::test_page_is_readable_in_the_dark_scheme",  # via a module fixture
]
KNOWN_PLAIN = [
    "tests/core/test_ids.py",
    "tests/mcp/test_mcp_tools.py",  # the in-memory MCP client starts nothing
    "tests/orchestration/test_orch_units.py",
]
CORE_ONLY = bool(os.environ.get("CONTEXTMESH_CORE_ONLY"))


def _collected_audit(config: pytest.Config, tmp_path: Path) -> tuple[list[str], list[str], list[str]]:
    """This run's audit when it collected the known tests; else a collection of their files alone."""
    collected, starting, unmarked = config.stash[AUDIT]
    files = sorted({n.split("::", 1)[0] for n in KNOWN_STARTERS} | set(KNOWN_PLAIN))
    if CORE_ONLY or all(any(c.startswith(f) for c in collected) for f in files):
        return collected, starting, unmarked
    target = tmp_path / "audit.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", *files],
        cwd=ROOT,
        env={**os.environ, AUDIT_ENV: str(target)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert target.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(target.read_text())
    return found[0], found[1], found[2]


def test_every_test_that_starts_a_server_a_transport_or_a_browser_is_marked_integration(
    pytestconfig: pytest.Config, tmp_path: Path
) -> None:
    collected, starting, unmarked = _collected_audit(pytestconfig, tmp_path)
    assert unmarked == []
    if CORE_ONLY:  # the core-only venv holds none of the starting folders: nothing here may start anything
        assert [n for n in starting if n in collected] == []
        return
    assert set(KNOWN_STARTERS) <= set(collected)
    assert set(KNOWN_STARTERS) <= set(starting)
    plain = [n for n in collected if n.split("::", 1)[0] in KNOWN_PLAIN]
    assert plain and not set(plain) & set(starting)


# -- the audit's reach, on code made for it --------------------------------------------------------------


class _Starter:
    """Stands for a server's starter in the tests below (the audit is handed it; the suite never is)."""


def _starts_directly() -> object:
    return _Starter()


def _starts_through_a_helper() -> object:
    return _starts_directly()


class _Wrapper:
    def start(self) -> object:
        return _starts_through_a_helper()


def _plain() -> int:
    return len([1, 2, 3])


def test_the_audit_follows_helpers_and_classes_of_the_tests_to_a_starter() -> None:
    assert reaches_a_starter(_starts_directly, [_Starter])
    assert reaches_a_starter(_starts_through_a_helper, [_Starter])
    assert reaches_a_starter(_Wrapper, [_Starter])
    assert reaches_a_starter(lambda: _Wrapper().start(), [_Starter])
    assert not reaches_a_starter(_plain, [_Starter])
    assert not reaches_a_starter(_starts_through_a_helper, [])

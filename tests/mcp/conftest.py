"""Fixtures of the MCP tests: a private copy of the demo session per test, an absent feed.

The demo session (walk rounds run, plan round 1 executed) is saved once per test run by the root
``conftest.py`` (``demo_sessions``); the real Prefect server of the dispatch tests is the root's
``prefect_api``, shared with the orchestration tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_cache import DemoSessions
from mcp_helpers import copy_session


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def demo_template(demo_sessions: DemoSessions) -> Path:
    """The demo saved as a session (eight walk rounds, plan round 1 executed); read-only."""
    return demo_sessions.template(8)


@pytest.fixture
def session_dir(demo_template: Path, tmp_path: Path) -> Path:
    """A private copy of the demo session."""
    return copy_session(demo_template, tmp_path / "session")


@pytest.fixture
def feed(tmp_path: Path) -> Path:
    """This test's advisory feed (absent: no advisories until a test publishes one)."""
    return tmp_path / "feed.json"

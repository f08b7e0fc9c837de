"""Fixtures of the MCP tests: one demo session template per run, a private copy per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_helpers import copy_session

from contextmesh.demo.session import save_demo_session


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

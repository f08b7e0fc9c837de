"""The served-record readers (`peek`, `parse`) never block on a fifo: they read through the session's one reader.

They live in orchestration (their module imports the managed server's helpers, which need Prefect's
HTTP client), so these tests sit here rather than in tests/session/, which the core-only run covers.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from demo_cache import DemoSessions
from session_helpers import clone, manifest_doc, run_python

TIMEOUT = 60.0  # seconds; a fixed reader answers in well under one


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    return demo_sessions.copy(tmp_path_factory.mktemp("served-hostile"))


def fifo_under_the_execution_companion(directory: Path) -> str:
    _, doc = manifest_doc(directory)
    name = str(doc["execution"]["name"])
    (directory / name).unlink()
    os.mkfifo(directory / name)
    return name


# -- the served-record readers ----------------------------------------------------------------------

_PEEK = """
import sys
from contextmesh.core.errors import ContextMeshError
from contextmesh.orchestration.served_record import parse, peek
try:
    peek(sys.argv[1]) if sys.argv[2] == "peek" else parse(__import__("pathlib").Path(sys.argv[1]))
except ContextMeshError as exc:
    print(type(exc).__name__, exc)
"""


def test_peek_refuses_a_fifo_under_the_execution_companions_name(template: tuple[Path, Path], tmp_path: Path) -> None:
    source, _ = template
    directory = clone(source, tmp_path / "session")
    name = fifo_under_the_execution_companion(directory)
    done = run_python(_PEEK, str(directory), "peek", timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"SessionFileError {name}: a fifo, not a regular file"), done.stdout


def test_a_served_record_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    record = tmp_path / "served" / "0f5e1e44-2d4e-4bb5-9a36-1c1f0d7f8f11.json"
    record.parent.mkdir()
    os.mkfifo(record)
    done = run_python(_PEEK, str(record), "parse", timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"ServedError {record}: not a readable served record"), done.stdout
    assert "a fifo, not a regular file" in done.stdout

"""Lines a test folder wants printed at the end of the run, wherever its tests ran.

Under xdist the tests run in worker processes and the closing summary is printed by the controller,
which never imports a folder's conftest. So a folder leaves its lines in a file in the run's base
temp directory (:func:`leave`, at the end of its session) and the root conftest prints every such
file (:func:`gather`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

__all__ = ["gather", "leave"]


def _directory(config: pytest.Config) -> Path:
    base: Path = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    return base.parent if hasattr(config, "workerinput") else base


def leave(config: pytest.Config, name: str, lines: list[str]) -> None:
    """Keep ``lines`` for the run's summary under ``name`` (one file per name and process)."""
    if lines:
        worker = getattr(config, "workerinput", {}).get("workerid", "main")
        (_directory(config) / f"run-notes-{name}-{worker}.json").write_text(json.dumps(lines), encoding="utf-8")


def gather(config: pytest.Config) -> list[str]:
    """Every line left in this run, by file name."""
    found = sorted(_directory(config).glob("run-notes-*.json"))
    return [line for path in found for line in json.loads(path.read_text(encoding="utf-8"))]

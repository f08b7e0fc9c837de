"""recheck, resume and repair on a session saved without a plan: one line naming the directory, nothing written.

In this process (``--local``); looking for a served deployment first is in ``tests/orchestration``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import one_line, run_cli

from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.session import Session


@pytest.mark.parametrize(
    "command",
    [
        ["recheck", "--local"],
        ["resume", "--local"],
        ["repair", "hashing", "--assumes", "bcrypt is fine", "--local"],
    ],
)
def test_a_write_to_a_session_without_a_plan_is_one_line_naming_it(tmp_path: Path, command: list[str]) -> None:
    directory = tmp_path / "graph-only"
    Session.create(directory, Session(ContextGraph(), Resolver()))
    before = sorted(p.name for p in directory.iterdir())
    done = run_cli(*command, "--session", str(directory), env={"CONTEXTMESH_HOME": str(tmp_path / "home")})
    assert done.returncode != 0
    assert f"{directory} holds no execution plan" in one_line(done.stderr)
    assert sorted(p.name for p in directory.iterdir()) == before

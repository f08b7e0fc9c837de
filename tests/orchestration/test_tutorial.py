"""``docs/tutorial.md`` run as written: every ``bash`` block, in order, in one fresh shell.

The blocks are taken from the page verbatim and run by ``bash -e`` from the repository root, with
a fresh ``HOME``, ``PATH`` without the virtual environment and no Prefect or ContextMesh variables
— a new terminal. The first block starts the managed Prefect server (the real one); the last runs
an MCP SDK client against ``contextmesh-mcp --project``. Then Prefect's API must show that the
resume ran exactly the stale closure, with ``load`` ``Cached``; the server is stopped at the end.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from orch_helpers import by_role, task_runs
from pasted_shell import FLOW_RUN, ROOT, fresh_shell, run_pasted, stop_managed_server

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TUTORIAL = ROOT / "docs" / "tutorial.md"


def bash_blocks(page: Path) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```$", page.read_text(encoding="utf-8"), re.S | re.M)


def test_the_tutorial_runs_verbatim_from_init_to_an_agents_question(tmp_path: Path) -> None:
    blocks = bash_blocks(TUTORIAL)
    assert len(blocks) == 6 and "contextmesh init" in blocks[0] and "agent.py" in blocks[-1]
    assert Path(sys.prefix).resolve() == (ROOT / ".venv").resolve(), "run the tests from the repository's .venv"
    env = fresh_shell(tmp_path)
    try:
        out = run_pasted("\n".join(blocks), tmp_path, env, timeout=1200)
        assert "ROUND 1 · 3 executed, 0 cached" in out
        assert "A: Priya Shah is on call for the Data Team this week." in out  # the document added in step 2
        assert "DISPROVED prices are in euros" in out and "from new source 'Finance: currency change'" in out
        assert "would reject: the orders export lists every region" in out
        assert "ROUND 3 · 2 executed, 1 cached" in out and "ledger verifies" in out
        assert "agent asked, the mesh answered: The Data Team owns the Orders Export" in out
        assert "agent looked up: entity:" in out
        runs = FLOW_RUN.findall(out)
        assert len(runs) == 4, out  # run, recheck, repair, resume
        ui, resume_id = runs[-1]
        resumed = task_runs(f"{ui}/api", resume_id, 5)
        assert set(by_role(resumed, "worker")) == {"summarise", "publish"}
        assert {r["name"]: r["state_name"] for r in by_role(resumed, "cached").values()} == {"load · cached": "Cached"}
    finally:
        stop_managed_server(env)

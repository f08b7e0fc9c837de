"""The README's "Your own project" block, run as written in a fresh shell, against the real Prefect
server its own ``contextmesh server start`` starts.

The block is taken from README.md verbatim (the first ``bash`` block under ``## Your own project``)
and run by ``bash -e`` from the repository root in an environment a new terminal would have: a
fresh ``HOME`` (so the managed server's home is new), ``PATH`` without the virtual environment, no
``PREFECT_API_URL``, no ``CONTEXTMESH_HOME``. Every line must succeed; then Prefect's own API must
show that the resume flow run executed exactly the stale closure (``summarise``, ``publish``) and
showed ``load`` as ``Cached``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from orch_helpers import by_role, task_runs
from pasted_shell import FLOW_RUN, ROOT, fresh_shell, run_pasted, stop_managed_server

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def readme_block(heading: str = "## Your own project") -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```bash\n", 1)[1].split("```", 1)[0]


def test_the_readme_project_block_runs_as_pasted_and_resume_executes_only_the_stale_closure(tmp_path: Path) -> None:
    block = readme_block()
    assert "contextmesh init" in block and "contextmesh resume" in block
    assert (ROOT / ".venv" / "bin" / "activate").is_file(), "the block sources the venv 'Start here' makes"
    assert Path(sys.prefix).resolve() == (ROOT / ".venv").resolve(), "run the tests from the repository's .venv"
    env = fresh_shell(tmp_path)
    try:
        out = run_pasted(block, tmp_path, env, timeout=900)
        assert "DISPROVED prices are in euros" in out and "auditor: prices are in USD, not EUR" in out
        assert "would reject: the orders export lists every region" in out
        assert "ok: generation" in out and "ledger verifies" in out
        runs = FLOW_RUN.findall(out)
        assert len(runs) == 4, out  # run, recheck, repair, resume: each one flow run, each printed
        ui, resume_id = runs[-1]
        resumed = task_runs(f"{ui}/api", resume_id, 5)  # two workers, their two audits, one cached
        assert set(by_role(resumed, "worker")) == {"summarise", "publish"}
        cached = by_role(resumed, "cached")
        assert set(cached) == {"load · cached"} and {r["state_name"] for r in cached.values()} == {"Cached"}
        assert "ROUND 3 · 2 executed, 1 cached" in out
    finally:
        stop_managed_server(env)

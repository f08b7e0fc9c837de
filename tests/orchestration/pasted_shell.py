"""Running a page's shell blocks as a new user would paste them: a fresh shell, every line checked.

The README's project block and the tutorial are both run this way: ``bash -e -o pipefail`` from the
repository root with a fresh ``HOME`` (so the managed Prefect server's home is new), ``PATH``
without the virtual environment, and no Prefect or ContextMesh variables. The managed server the
blocks start is stopped afterwards, whatever happened.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FLOW_RUN = re.compile(r"flow run:? (http://127\.0\.0\.1:\d+)/runs/flow-run/([0-9a-f-]{36})")


def fresh_shell(tmp_path: Path) -> dict[str, str]:
    """The environment a new terminal has, with its own ``HOME`` and ``TMPDIR`` under ``tmp_path``."""
    home, scratch = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    scratch.mkdir()
    return {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": str(scratch), "LANG": "C.UTF-8"}


def run_pasted(script: str, tmp_path: Path, env: dict[str, str], *, timeout: float) -> str:
    """Run ``script`` as pasted; every line must succeed and nothing may print a traceback. Its stdout."""
    path = tmp_path / "pasted.sh"
    path.write_text(script, encoding="utf-8")
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def stop_managed_server(env: dict[str, str]) -> None:
    """``contextmesh server stop`` in the same fresh shell; it must succeed."""
    stopped = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "contextmesh"), "server", "stop"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert stopped.returncode == 0, stopped.stderr

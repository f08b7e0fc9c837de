"""Shared pieces of the command-line tests: a subprocess runner, an in-process one, a closed port, failure checks."""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["closed_api_url", "failure_document", "make_fifo", "one_line", "run_cli", "run_main"]


def closed_api_url() -> str:
    """A Prefect API address on loopback where nothing listens (a port bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/api"


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``python -m contextmesh ARGS`` in a fresh interpreter; never raises on its exit status."""
    return subprocess.run(
        [sys.executable, "-m", "contextmesh", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def run_main(*args: str) -> subprocess.CompletedProcess[str]:
    """``contextmesh ARGS`` through ``main()`` in this process, returned as :func:`run_cli` returns it.

    For a test about what a command prints and commits. An interpreter start costs ~0.55 CPU-s (the
    suite's CPU is its budget on two cores: docs/adr/0035-ci-cpu-budget.md); a test about the process
    itself (its hash seed, its environment, a signal, ``python -m``) keeps :func:`run_cli`.
    """
    from contextmesh.cli import main  # here: most users of these helpers run processes only

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # what `python -m contextmesh` would have exited with
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["contextmesh", *args], code, out.getvalue(), err.getvalue())


def one_line(err: str) -> str:
    """The single line a failure writes to stderr (asserting there is exactly one, and no traceback)."""
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, f"a failure is one line on stderr, got {len(lines)}:\n{err}"
    return lines[0]


def failure_document(out: str) -> dict[str, Any]:
    """The ``{"error": …}`` document a failure under ``--json`` prints, checked to be that and nothing else."""
    document = json.loads(out)  # one document: trailing text would not parse
    assert set(document) == {"error"}, document
    error = document["error"]
    assert set(error) == {"type", "message", "path"}, error
    assert isinstance(error["type"], str) and error["type"]
    assert isinstance(error["message"], str) and error["message"]
    assert error["path"] is None or isinstance(error["path"], str)
    return dict(error)


def make_fifo(path: Path) -> Path:
    """A fifo at ``path`` (a file that would block a reader)."""
    os.mkfifo(path)
    return path

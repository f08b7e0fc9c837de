"""serve registers its deployments without deadlocking a warm run that starts beside it (issue 20).

The hang of the third tuned repetition of ``bench/deployments.py``, forced instead of waited for
(``runner_race_child.py``, in a child process so that a deadlock cannot take the test run with it):
Prefect's ``prefect.serve`` registers deployments on its global loop, whose thread then waits for
the run-sync loop, while a warm run's first ``concurrency()`` holds the run-sync loop's thread and
waits for the global loop. ``serve_deployments`` registers on its own loop, so the warm side goes
through. On the code before the fix (``prefect.serve`` in its place) the child reports DEADLOCK,
with both loops' stacks, every time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CHILD = Path(__file__).with_name("runner_race_child.py")


def test_serve_registering_its_deployments_does_not_deadlock_a_warm_run_taking_its_first_slot(prefect_api: str) -> None:
    env = {**os.environ, "PREFECT_API_URL": prefect_api}
    done = subprocess.run(
        [sys.executable, str(CHILD), prefect_api], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert "RESULT no deadlock" in done.stdout, done.stdout[-6000:] + done.stderr[-2000:]
    assert done.returncode == 0


STOP_CHILD = Path(__file__).with_name("runner_stop_child.py")


def test_sigterm_while_serve_registers_ends_serving_through_its_clean_up(prefect_api: str) -> None:
    # Prefect's runner handles SIGTERM only once started; before, the signal killed serve outright,
    # so its clean-up never ran and the log lines of runs that had just ended were lost.
    env = {**os.environ, "PREFECT_API_URL": prefect_api}
    argv = [sys.executable, str(STOP_CHILD), prefect_api]
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "registering"
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert "cleaned up" in out, out + err[-2000:]
    assert child.returncode == 0, err[-2000:]

"""serve's SIGUSR1 dump (stack_dumps): every thread's stack, then every asyncio task's, on its stderr.

A real process registers the dump as serve does and runs an event loop on a thread of its own, as
Prefect's global loop runs, with one task waiting in ``waiting_on_the_loop``; the test sends it
SIGUSR1. The thread dump alone would show that loop only in ``select``: the task's own frame is
what names where it waits.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

CHILD = """
import asyncio, sys, threading, time
from contextmesh.orchestration.stack_dumps import dump_stacks_on_signal

async def waiting_on_the_loop():
    await asyncio.sleep(60)

def loop_thread():
    asyncio.run(waiting_on_the_loop())

dump_stacks_on_signal()
threading.Thread(target=loop_thread, daemon=True).start()
time.sleep(0.5)
print("ready", flush=True)
time.sleep(20)
"""


def test_sigusr1_writes_every_thread_and_every_asyncio_task_with_where_it_waits() -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGUSR1)
        time.sleep(2)
    finally:
        child.kill()
    err = child.communicate(timeout=30)[1]
    assert "Thread 0x" in err and "most recent call first" in err, err[-2000:]
    assert "=== contextmesh stack dump (SIGUSR1): asyncio tasks ===" in err
    tasks = err.split("asyncio tasks ===", 1)[1]
    assert "waiting_on_the_loop" in tasks and "=== end of the asyncio tasks ===" in tasks, err[-2000:]

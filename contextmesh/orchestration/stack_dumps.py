"""A serving process that can say where it is stuck: every thread's stack, and every asyncio task's, on a signal.

Issue 20: a recheck that ``contextmesh serve`` ran in-process stayed ``Running`` for minutes and
wrote nothing, and nobody could tell where it waited. ``serve`` (and ``deployments/serve.py``)
call :func:`dump_stacks_on_signal` at start-up, so ``kill -USR1 <pid>`` writes, to the process's
stderr (its log):

1. every thread's Python stack, written at once by :mod:`faulthandler` from C, which works even
   when no thread can take the GIL;
2. then every asyncio task of every event loop in the process, with its awaiting frames — Prefect
   runs much of a flow run's I/O as coroutines on loop threads, where a thread stack shows only
   ``select``; written by a Python-level handler, which runs in the main thread as soon as that
   thread runs bytecode (Prefect's runner loop there wakes on the signal).

``bench/deployments.py`` sends the signal when a repetition overruns its deadline and keeps the log.
"""

from __future__ import annotations

import asyncio
import faulthandler
import gc
import signal
import sys
import threading
from types import FrameType
from typing import TextIO

__all__ = ["DUMP_SIGNAL", "dump_asyncio_tasks", "dump_stacks_on_signal"]

DUMP_SIGNAL = signal.SIGUSR1


def _loops() -> list[asyncio.AbstractEventLoop]:
    """Every event loop alive in the process (Prefect keeps some on threads of its own)."""
    return [thing for thing in gc.get_objects() if isinstance(thing, asyncio.AbstractEventLoop)]


def dump_asyncio_tasks(out: TextIO) -> int:
    """Write every unfinished task of every live event loop, with its stack, to ``out``; how many."""
    count = 0
    for loop in _loops():
        if loop.is_closed():
            continue
        try:
            tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
        except RuntimeError:  # the loop's task set changed while read (another thread): one more try
            tasks = [task for task in list(asyncio.all_tasks(loop)) if not task.done()]
        out.write(f"--- event loop {id(loop):#x} (running: {loop.is_running()}): {len(tasks)} task(s)\n")
        for task in tasks:
            task.print_stack(limit=30, file=out)
            count += 1
    return count


def dump_stacks_on_signal(out: TextIO | None = None, signum: signal.Signals = DUMP_SIGNAL) -> None:
    """On ``signum`` write every thread's stack (faulthandler), then every asyncio task's, to ``out``.

    Does nothing outside the main thread (Python's rule for signal handlers) or when ``out``
    (``sys.stderr`` by default) has no file descriptor.
    """
    stream = out if out is not None else sys.stderr
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may install a handler; a serve started elsewhere goes without

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stream.write(f"=== contextmesh stack dump ({signal.Signals(_signum).name}): asyncio tasks ===\n")
        try:
            dump_asyncio_tasks(stream)
        except Exception as exc:  # a dump must never take the serving process down
            stream.write(f"(asyncio tasks not dumped: {type(exc).__name__}: {exc})\n")
        stream.write("=== end of the asyncio tasks ===\n")
        stream.flush()

    try:
        stream.fileno()  # faulthandler writes to a file descriptor: a captured stream has none
    except (OSError, ValueError):
        return  # serve run under a capture (a test's, an embedding's) goes without the dump
    signal.signal(signum, on_signal)
    # chain=True: faulthandler writes the threads from C at once, then calls the handler above.
    faulthandler.register(signum, file=stream, all_threads=True, chain=True)

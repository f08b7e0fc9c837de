"""Prefect's runner for a served session, started so that it cannot deadlock a run starting beside it (issue 20).

``prefect.serve`` registers each deployment with ``Runner.add_deployment``, which runs
``RunnerDeployment.aapply`` on Prefect's *global* event loop thread (the one its logs, events and
concurrency services live on). ``aapply`` begins with ``_get_deployment_version_info``, which waits
*synchronously* — on that loop's thread — for a coroutine run on Prefect's *run-sync* loop thread
(``run_coro_as_sync``). A warm run (ADR 0017) that starts at the same moment takes its first
session slot with ``concurrency()``: its acquisition coroutine runs on the run-sync loop and, the
first time a limit name is seen, creates the acquisition service and waits — on the run-sync loop's
thread — for the global loop to start it. Each loop's thread then waits for the other, forever:

* the runner never starts (it never polls; Prefect marks the deployments not ready a minute later);
* the run stays ``Running`` holding its deployment's slot (its lease is renewed by a thread of its
  own), having created the session's limit but never acquired it;
* no log line or client-side event of the process reaches the API (both are sent from the global loop).

That is the hang of the third tuned repetition: its recheck was created 70 ms after serve's own
registration, while ``prefect.serve`` registered the deployments again. The reactor looks every
0.1 s when tuned, so the first recheck could start inside that window; at the default 0.5 s it
rarely did. ``tests/orchestration/test_runner_loop.py`` forces the interleaving and shows it.

:func:`serve_deployments` does what ``prefect.serve`` does — one :class:`~prefect.runner.Runner`,
the deployments added, the runner started until SIGTERM or Ctrl-C, schedules paused on the way out
— but awaits ``aadd_deployment`` on the serving process's own event loop, so the synchronous wait
in ``aapply`` blocks that loop, never the global one, and the run-sync loop's call into the global
loop always finds it free.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Sequence
from typing import Any

from prefect.deployments.runner import RunnerDeployment
from prefect.exceptions import TerminationSignal
from prefect.runner import Runner

__all__ = ["register_here", "serve_deployments"]


async def register_here(runner: Runner, deployments: Sequence[RunnerDeployment]) -> list[Any]:
    """Add ``deployments`` to ``runner`` from the running loop (never Prefect's global loop); their ids."""
    return [await runner.aadd_deployment(deployment) for deployment in deployments]


def serve_deployments(
    deployments: Sequence[RunnerDeployment],
    *,
    limit: int,
    **runner_options: Any,
) -> None:
    """Serve ``deployments`` from this process until SIGTERM or Ctrl-C, as ``prefect.serve`` does.

    ``runner_options`` go to :class:`~prefect.runner.Runner` (``prefetch_seconds``,
    ``query_seconds``, …). Must be called from the main thread, outside any event loop.
    """

    async def serving() -> None:
        runner = Runner(pause_on_shutdown=True, limit=limit, **runner_options)
        await register_here(runner, deployments)
        await runner.start()  # installs the runner's own SIGTERM handler, in place of the one below

    # As prefect.serve: a signal ends serving quietly (the caller says it stopped). The runner
    # handles SIGTERM only once started; registering takes seconds (longer when the server answers
    # 503), and a SIGTERM then killed the process outright: the caller's clean-up never ran, and the
    # log lines of runs that had just ended, still in Prefect's two-second log batch, were lost.
    previous = signal.signal(signal.SIGTERM, _stop_serving)
    try:
        with contextlib.suppress(KeyboardInterrupt, TerminationSignal):
            asyncio.run(serving())
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop_serving(signum: int, _frame: object) -> None:
    """SIGTERM before the runner has started: end serving as the runner's own handler would."""
    raise TerminationSignal(signal=signum)

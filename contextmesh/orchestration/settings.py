"""The environment every Prefect process ContextMesh starts, or runs flows in, gets.

Prefect reads its settings when it is imported and when a client is made: ``PREFECT_API_URL``
written to ``os.environ`` after ``import prefect`` is ignored, and Prefect silently starts an
ephemeral server instead (docs/prefect-facts.md §2). So settings reach Prefect one of three
ways, all defined here:

* :func:`prepare_environment` — defaults written to ``os.environ`` before the first
  ``import prefect`` of a process (the CLI calls it first); what the user set is kept;
* :func:`server_environment` — the whole environment of a ``prefect server start`` subprocess;
* :func:`client_settings` — ``temporary_settings`` around the code that makes clients and runs
  flows, for a process that has already imported Prefect.

What every process gets: no telemetry (``DO_NOT_TRACK=1``, server analytics off), no cache keys
computed from task arguments (``PREFECT_TASKS_DEFAULT_NO_CACHE``: ContextMesh decides reuse
itself), no silent ephemeral server (a missing API URL is an error), quiet clients (Prefect's INFO
lines hidden). The server also gets the task-run recorder batching that makes a round show in the
UI within a second or two instead of fifteen, and event-persister batching that keeps a 1,000-task
round's events from queueing on SQLite's write lock.

This module does not import Prefect at module level.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "CLIENT_DEFAULTS",
    "PERSISTER_BATCHING",
    "RECORDER_BATCHING",
    "SERVER_DEFAULTS",
    "client_settings",
    "prepare_environment",
    "server_environment",
]

CLIENT_DEFAULTS: Mapping[str, str] = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_TASKS_DEFAULT_NO_CACHE": "true",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_SERVER_EPHEMERAL_ENABLED": "false",
}
RECORDER_BATCHING: Mapping[str, str] = {
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "200",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_READ_BATCH_SIZE": "200",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
}
# The event persister writes every event (at least three state events per task run, plus ours) to
# the events table. Prefect 3.9.1's defaults (ServerServicesEventPersisterSettings) commit every 20
# events, so a 1,000-task round makes hundreds of SQLite write transactions that wait on the one
# database write lock with the recorder's; 200 a batch makes a tenth as many. The 1 s flush interval
# (default 5 s) keeps a disproof event queryable soon after it is emitted. READ_BATCH_SIZE only
# matters with a Redis broker; the in-memory broker of a single local server ignores it.
PERSISTER_BATCHING: Mapping[str, str] = {
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_BATCH_SIZE": "200",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_READ_BATCH_SIZE": "200",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL": "1",
}
SERVER_DEFAULTS: Mapping[str, str] = {
    **CLIENT_DEFAULTS,
    **RECORDER_BATCHING,
    **PERSISTER_BATCHING,
    "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
    # A session slot held by a flow run killed on another machine (SIGKILL, OOM) frees when its 60 s
    # lease expires and the repossessor next looks: every 5 s instead of 15, so the next writer waits
    # ~60 s, not ~75 (a holder killed on the writer's own machine is released at once: slots.py).
    "PREFECT_SERVER_SERVICES_REPOSSESSOR_LOOP_SECONDS": "5",
}
# A server we manage must not inherit a client's idea of where the API is, or a profile naming one.
_NOT_FOR_SERVERS = ("PREFECT_API_URL", "PREFECT_API_KEY", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH")


def prepare_environment(environ: dict[str, str] | None = None) -> None:
    """Write the client defaults into ``environ`` (``os.environ``) unless already set; before ``import prefect``."""
    target = os.environ if environ is None else environ
    for name, value in CLIENT_DEFAULTS.items():
        target.setdefault(name, value)


def server_environment(home: Path, *, ui: bool = True, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a ``prefect server start`` subprocess whose state lives in ``home``."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _NOT_FOR_SERVERS}
    env.update(SERVER_DEFAULTS)
    env["PREFECT_HOME"] = str(home)
    env["PREFECT_SERVER_UI_ENABLED"] = "true" if ui else "false"
    return env


@contextmanager
def client_settings(api_url: str, *, heartbeat: bool = True) -> Iterator[None]:
    """Point this process's Prefect clients at ``api_url`` with the client defaults, for the block.

    ``heartbeat=False`` drops the flow-run heartbeat thread, whose join costs about a second at the
    end of every synchronous flow run (docs/prefect-facts.md §3); keep it for deployed runs, where it feeds
    crashed-run detection, and drop it for interactive commands.
    """
    import prefect.settings as ps  # noqa: PLC0415 - Prefect is imported only by the code that needs it

    updates: dict[Any, object] = {
        ps.PREFECT_API_URL: api_url,
        ps.PREFECT_SERVER_ANALYTICS_ENABLED: False,
        ps.PREFECT_TASKS_DEFAULT_NO_CACHE: True,
        ps.PREFECT_SERVER_EPHEMERAL_ENABLED: False,
    }
    if not heartbeat:
        updates[ps.PREFECT_FLOWS_HEARTBEAT_FREQUENCY] = None
    os.environ.setdefault("DO_NOT_TRACK", "1")  # read at call time by Prefect's analytics check
    with ps.temporary_settings(updates=updates):
        yield

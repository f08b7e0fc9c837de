"""The logger of the Prefect run this code runs in, so what a run read, decided and committed is on its Logs tab.

Inside a flow or task run this is Prefect's run logger with the run's ids, on a logger of our own
(``contextmesh.runs``): INFO and up, sent to the API only. Prefect's own run loggers sit under
``prefect``, whose level is ``PREFECT_LOGGING_LEVEL`` — WARNING in every process ContextMesh
configures, to keep command output quiet — so INFO records written through them never reached a
run's Logs tab. Outside a run — a unit test calling a body directly — a plain module logger, so
logging never decides whether code can run.
"""

from __future__ import annotations

import logging
from typing import Any

from prefect.exceptions import MissingContextError
from prefect.logging import get_run_logger
from prefect.logging.handlers import APILogHandler
from prefect.logging.loggers import PrefectLogAdapter

from contextmesh.execution.plan import Plan, RoundReport
from contextmesh.execution.run_reasons import round_story
from contextmesh.session.session import Session

__all__ = ["log_loaded", "log_round", "run_logger"]

_FALLBACK = logging.getLogger("contextmesh.orchestration")
_RUNS = logging.getLogger("contextmesh.runs")


def _runs_logger() -> logging.Logger:
    """``contextmesh.runs``: INFO, the API handler only, not propagated to the console (set up once)."""
    if not any(isinstance(handler, APILogHandler) for handler in _RUNS.handlers):
        _RUNS.setLevel(logging.INFO)
        _RUNS.propagate = False
        _RUNS.addHandler(APILogHandler())
    return _RUNS


def run_logger() -> logging.Logger | logging.LoggerAdapter[Any]:
    """The current run's logger, or the module logger outside any run."""
    try:
        prefect_logger = get_run_logger()
    except MissingContextError:
        return _FALLBACK
    extra = prefect_logger.extra if isinstance(prefect_logger, logging.LoggerAdapter) else None
    return PrefectLogAdapter(_runs_logger(), extra=dict(extra or {}))


def log_loaded(session: Session, runner: Plan) -> None:
    """What a flow run read: the session, its generation, the plan's round and every task's state."""
    states = runner.states()
    waiting = runner.blocked()
    run_logger().info(
        "loaded session %s generation %d: plan %s after round %d; %s",
        session.session_id,
        session.generation,
        runner.name,
        runner.round,
        ", ".join(f"{name} {'blocked' if name in waiting else state}" for name, state in states.items()),
    )


def log_round(runner: Plan, report: RoundReport, mode: str) -> None:
    """What a round decided: every executed task with its reason, the failed, the blocked, the cached."""
    logger = run_logger()
    story = round_story(runner, report)
    for name in report.executed:
        logger.info("executed %s — %s", name, story[name].text)
    for name, reason in report.failed.items():
        logger.warning("failed %s — %s", name, reason)
    for name, reason in report.blocked.items():
        logger.info("blocked %s — %s", name, reason)
    if report.cached:
        logger.info("cached (untouched, previous results stand): %s", ", ".join(report.cached))
    logger.info(
        "round %d (%s) decided: %d executed, %d cached, %d blocked, %d failed",
        report.round,
        mode,
        len(report.executed),
        len(report.cached),
        len(report.blocked),
        len(report.failed),
    )

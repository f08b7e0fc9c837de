"""The final state of a plan, recheck or repair flow run: Completed-type, named for its outcome, with a message.

ADR 0016: every outcome ContextMesh handled ends ``COMPLETED`` (so "did it commit?" stays a
question of the state type, and the resume trigger never retries a round that committed); the state
*name* tells the outcomes apart in the runs list, on the run page, in the API and in the
state-change event Prefect emits (``prefect.flow-run.<name>``). The message says what the run did
and why (:mod:`contextmesh.execution.run_reasons`).
"""

from __future__ import annotations

from typing import Any

from prefect.client.schemas.objects import State
from prefect.states import Completed

from contextmesh.execution.plan import Plan, RecheckReport, RoundReport
from contextmesh.execution.run_reasons import recheck_message, round_message

__all__ = [
    "BLOCKED",
    "COMPLETED",
    "DISPROVED",
    "SKIPPED",
    "TASK_FAILED",
    "final_state",
    "recheck_state",
    "round_state",
]

COMPLETED = "Completed"
BLOCKED = "Blocked"  # a round in which at least one task waits for repair
DISPROVED = "Disproved"  # a recheck (or a round's own audit) committed a disproof
TASK_FAILED = "TaskFailed"  # nothing blocked or disproved, but a task or an audit failed
SKIPPED = "Skipped"  # a recheck the deployment limit turned away while another ran (relabelled)


def final_state(name: str, message: str, data: dict[str, Any]) -> State[Any]:
    """A Completed-type state named ``name``; the flow's caller still gets ``data`` as its result."""
    return Completed(name=name, message=message, data=data)


def round_state(plan: Plan, report: RoundReport, mode: str, data: dict[str, Any]) -> State[Any]:
    """A plan round's final state: ``Blocked``, ``Disproved``, ``TaskFailed`` or ``Completed``."""
    if report.blocked:
        name = BLOCKED
    elif report.invalidations:
        name = DISPROVED
    elif report.failed:
        name = TASK_FAILED
    else:
        name = COMPLETED
    return final_state(name, round_message(plan, report, mode), data)


def recheck_state(plan: Plan, report: RecheckReport, data: dict[str, Any], after: str = "") -> State[Any]:
    """A recheck's final state: ``Disproved``, ``TaskFailed`` or ``Completed``; ``after`` is appended
    to the message (where the resume it started can be watched)."""
    if report.invalidations:
        name = DISPROVED
    elif report.failed or report.audit_errors:
        name = TASK_FAILED
    else:
        name = COMPLETED
    message = recheck_message(plan, report)
    return final_state(name, f"{message}; {after}" if after else message, data)

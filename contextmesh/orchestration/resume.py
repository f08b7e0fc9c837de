"""Recheck → resume: a committed disproof starts the plan deployment in resume mode, exactly once.

The default path (ADR 0006): the recheck flow run, right after it announces a disproof, starts the
plan deployment (the requests of ``run_deployment``) with ``mode="resume"`` and an **idempotency key** made of
the session id, the ledger head at the disproof (the ``disproved`` entry's digest, which never
changes), a digest of the stale set, and an attempt number. Prefect returns the existing flow run
for a key it has seen, so the same disproof triggered twice — a recheck re-run after a crash, a
pending announcement re-emitted by a later flow run — lands on one resume. A resume that ended
``Crashed``, ``Failed`` or ``Cancelled`` without committing leaves the ledger head where it was; the
trigger then moves to the next attempt number, so a crashed resume can run again.

The alternative (documented in docs/deploying.md, ``deployments/serve.py --trigger automation``):
a Prefect automation on the ``contextmesh.assumption.disproved`` event. It needs no code in the
flow, but automations carry no idempotency key; the deterministic event id is what keeps one
disproof to one run there.

A resume is started for every disproof that left stale tasks, even when all of them wait for
repair: its round table says which tasks are blocked and why, which is what a person watching
the UI needs to see next. A recheck that disproves nothing starts nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextmesh.core.canonical import digest

__all__ = ["RETRYABLE", "Create", "ResumeTrigger", "idempotency_key"]

RETRYABLE = frozenset({"CRASHED", "FAILED", "CANCELLED"})  # ended without a commit: run again
# (deployment, parameters, idempotency key, tags) -> (flow run id, its state type): how a run is made
Create = Callable[[str, dict[str, Any], str, list[str]], tuple[str, str]]


def idempotency_key(session_id: str, ledger_head: str, stale: Sequence[str], attempt: int) -> str:
    """The key one resume attempt of one disproof is created under."""
    stale_digest = digest(sorted(set(stale)))
    return f"contextmesh-resume|{session_id}|{ledger_head}|{stale_digest}|{attempt}"


@dataclass(frozen=True)
class ResumeTrigger:
    """Starts ``deployment`` (``"<flow>/<deployment>"``) in resume mode for a session's disproof.

    ``parameters`` are added to every run it starts (a deployment's own, such as the file its
    auditors read); ``session_dir`` and ``mode`` are always set by the trigger.
    """

    deployment: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    max_attempts: int = 5
    origin: str = "recheck"  # tagged cm.trigger:<origin>: a recheck's disproof, or a person (cli) or agent (mcp)

    def __call__(
        self, *, session_id: str, session_dir: str, ledger_head: str, stale: Sequence[str], create: Create | None = None
    ) -> dict[str, Any]:
        """Start (or find) the resume run for this disproof; returns its id, state, key and attempt.

        ``create`` makes the run (default: Prefect's ``run_deployment``; the CLI passes plain HTTP).
        """
        make = create or _run_deployment
        parameters = {**self.parameters, "session_dir": session_dir, "mode": "resume"}
        tags = [f"cm.session:{session_id}", f"cm.trigger:{self.origin}"]
        found: dict[str, Any] = {}
        for attempt in range(self.max_attempts):
            key = idempotency_key(session_id, ledger_head, stale, attempt)
            flow_run_id, state = make(self.deployment, parameters, key, tags)
            found = {"flow_run_id": flow_run_id, "state": state, "key": key, "attempt": attempt}
            if state not in RETRYABLE:
                return found
        return found


def _run_deployment(deployment: str, parameters: dict[str, Any], key: str, tags: list[str]) -> tuple[str, str]:
    """The requests ``run_deployment(timeout=0, as_subflow=False)`` sends — the deployment read by name,
    a flow run created from it, due now, under ``key`` — over :mod:`~contextmesh.orchestration.plain_api`.

    Its own flow run in the UI, not a child of the recheck; started, not waited for (the resume waits
    for this recheck's session slot). Not Prefect's client: the create reads the deployment and then
    writes, which the managed SQLite server refuses with a 503 whenever another write lands in
    between, and Prefect's client asks again only two seconds later (ADR 0032).
    """
    from contextmesh.orchestration import wakeups  # noqa: PLC0415
    from contextmesh.orchestration.plain_api import PlainApi  # noqa: PLC0415 - Prefect only where a flow runs

    with PlainApi.of_this_process() as api:
        run = api.create_run(deployment, parameters, idempotency_key=key, tags=tags)
    wakeups.wake()  # a serving process claims it now, not at its reactor's next look
    state = run.get("state") or {}
    return str(run["id"]), str(state.get("type") or "SCHEDULED")

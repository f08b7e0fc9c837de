"""One line per finished flow run of a served session: what ``contextmesh serve`` prints as it goes.

``serve`` used to print two start-up lines and then nothing (issue 20). Now every recheck,
disproof, resume, round and repair that ends — run in the serving process or by Prefect's runner —
is one line with the outcome (the state's name, ADR 0016), its message and the run's page::

    recheck Completed · every ground stands · http://127.0.0.1:4200/runs/flow-run/…
    disproof · 'the GPU quota covers training' was disproved (evidence …) · http://…
    resume Blocked · 3 tasks wait for repair: train (ground rejected) … · http://…
    repair Completed · train is on 'the CPU pool covers training' …; next: resume · http://…

This module does not import Prefect; the caller hands it the run's fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MESSAGE_LIMIT", "run_line", "started_line"]

MESSAGE_LIMIT = 800  # a state message can list many tasks; one terminal line stays readable


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MESSAGE_LIMIT else flat[: MESSAGE_LIMIT - 1] + "…"


def run_line(role: str, parameters: Mapping[str, Any], state_name: str, message: str, url: str) -> str:
    """The line for one ended run of the ``role`` deployment (plan, recheck or repair)."""
    kind = role
    if role == "plan":
        kind = "resume" if parameters.get("mode") == "resume" else "round"
    head = "disproof" if role == "recheck" and state_name == "Disproved" else f"{kind} {state_name}"
    parts = [head]
    if message:
        parts.append(_one_line(message))
    parts.append(url)
    return " · ".join(parts)


def started_line(trigger: str, url: str) -> str:
    """The line for a recheck this process started because something changed."""
    return f"recheck started ({_one_line(trigger)}) · {url}"

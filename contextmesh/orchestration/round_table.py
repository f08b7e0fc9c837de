"""A plan round's table artifact ``cm-round-<n>``: every task of the plan, one row each, and its description.

A blocked task has no task run, so the table is where Prefect's UI shows it, with the reason it waits
(:mod:`contextmesh.orchestration.flow_bodies` publishes it after the round's commit). Pure data: no
Prefect here.
"""

from __future__ import annotations

from typing import Literal

from contextmesh.execution.plan import Plan, RoundReport

__all__ = ["round_description", "round_table"]


def round_description(plan: str, report: RoundReport, mode: Literal["run", "resume"], session_id: str) -> str:
    """The table's description: the round, its mode and session, and the tasks waiting for repair."""
    text = f"{plan} · round {report.round} ({mode}) of session {session_id}"
    if report.blocked:
        waiting = ", ".join(sorted(report.blocked))
        text += f" — {len(report.blocked)} task(s) wait for repair: {waiting}"
    return text


def round_table(runner: Plan, report: RoundReport, shown: set[str]) -> list[dict[str, str]]:
    """One row per task of the plan: its outcome this round, its task run (``none`` when it had none) and why."""
    rows = []
    for name in runner.tasks:
        if name in report.blocked:
            rows.append({"task": name, "outcome": "blocked", "task run": "none", "reason": report.blocked[name]})
        elif name in report.failed:
            rows.append({"task": name, "outcome": "failed", "task run": name, "reason": report.failed[name]})
        elif name in report.executed:
            rows.append({"task": name, "outcome": "executed", "task run": name, "reason": ""})
        elif name in report.stale:
            rows.append(
                {
                    "task": name,
                    "outcome": "stale",
                    "task run": name if name in report.runs else "none",
                    "reason": runner.tasks[name].error or "its ground fell this round",
                }
            )
        elif name in report.cached:
            run = f"{name} · cached" if name in shown else "none (listed here only)"
            rows.append({"task": name, "outcome": "cached", "task run": run, "reason": "untouched"})
        else:
            rows.append({"task": name, "outcome": runner.tasks[name].state.value, "task run": "none", "reason": ""})
    return rows

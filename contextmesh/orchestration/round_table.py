"""A plan round's ``cm-round-<n>`` table artifact: every task, its outcome, its reason, its task run.

Each row's reason comes from :func:`contextmesh.execution.run_reasons.round_rows` — for an executed
task the chain that made it run (``first run``, ``repaired onto <key>: …``, ``'<statement>' was
disproved (evidence …): …``). The table's description names the round and, when disproofs are
behind what it ran or what waits, links to their receipt artifacts and the rechecks that found them.

A blocked task has no task run, so the table is where Prefect's UI shows it, with the reason it waits
(:mod:`contextmesh.orchestration.flow_bodies` publishes the table after the round's commit).
"""

from __future__ import annotations

from prefect.artifacts import create_table_artifact

from contextmesh.execution.plan import Plan, RoundReport
from contextmesh.execution.run_reasons import round_rows
from contextmesh.orchestration.announce import Announcement, announcements
from contextmesh.orchestration.run_links import artifact_url, flow_run_url

__all__ = ["behind", "publish_round_table", "round_description", "round_table", "table_key", "why_links"]


def table_key(round_: int) -> str:
    """The artifact key of round ``round_``'s table."""
    return f"cm-round-{round_}"


def round_table(runner: Plan, report: RoundReport, shown: set[str]) -> list[dict[str, str]]:
    """Every task of the plan, in declaration order: task, outcome, task run, reason."""
    rows = []
    for row in round_rows(runner, report):
        name, outcome = row["task"], row["outcome"]
        if outcome == "cached":
            run = f"{name} · cached" if name in shown else "none (listed here only)"
        elif outcome in {"executed", "failed"} or (outcome == "stale" and name in report.runs):
            run = name
        else:
            run = "none"
        rows.append({"task": name, "outcome": outcome, "task run": run, "reason": row["reason"]})
    return rows


def behind(runner: Plan, session_id: str, report: RoundReport) -> list[Announcement]:
    """The announced disproofs before this round that made a task of it run or wait (newest per task)."""
    touched = set(report.executed) | set(report.blocked) | set(report.failed)
    found: dict[str, Announcement] = {}
    for item in announcements(runner.ledger, session_id):
        if item.entry.round >= report.round:
            continue
        for task in item.stale:
            if task in touched:
                found[task] = item
    unique: dict[str, Announcement] = {item.artifact_key: item for item in found.values()}
    return list(unique.values())


def why_links(items: list[Announcement]) -> list[str]:
    """Markdown links to each disproof's receipt and the recheck that found it."""
    links = []
    for item in items:
        text = f"[receipt of '{item.receipt['ground']['statement']}']({artifact_url(item.artifact_key)})"
        found_by = (item.entry.run or {}).get("flow_run_id")
        if found_by:
            text += f", found by [the recheck flow run]({flow_run_url(found_by)})"
        links.append(text)
    return links


def round_description(plan: str, report: RoundReport, mode: str, session_id: str, links: list[str]) -> str:
    """The table's description: the round, what waits, and why (markdown links)."""
    text = f"{plan} · round {report.round} ({mode}) of session {session_id}"
    if report.blocked:
        waiting = ", ".join(sorted(report.blocked))
        text += f" — {len(report.blocked)} task(s) wait for repair: {waiting}"
    if links:
        text += " — because of " + "; ".join(links)
    return text


def publish_round_table(
    runner: Plan, report: RoundReport, mode: str, session_id: str, shown: set[str], links: list[str]
) -> str:
    """Create the round's table artifact on the current flow run; its key."""
    key = table_key(report.round)
    create_table_artifact(
        key=key,
        table=round_table(runner, report, shown),
        description=round_description(runner.name, report, mode, session_id, links),
    )
    return key

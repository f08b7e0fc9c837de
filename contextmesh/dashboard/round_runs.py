"""What each round of the execution panel ran: its Prefect flow runs, and the worker key per task.

Both come from the run ledger, never from the plan as it stands now: a task repaired onto a new
key shows, in the rounds before the repair, the key those rounds ran (the entry's ``key``), and a
round's flow runs are the ``run.flow_run_id`` its entries recorded (an orchestrator writes them; an
in-process round records none, and the page says so instead of linking nowhere).

A flow run's address needs the Prefect UI, which the ledger does not hold: :func:`prefect_ui`
finds the one this export can reach, the way a command finds its API (ADR 0024) — the configured
API (``PREFECT_UI_URL``, ``PREFECT_API_URL`` or the active Prefect profile), else the managed
server of ``$CONTEXTMESH_HOME`` while it runs. With none, the payload keeps the ids and no address.
Prefect's settings are read only when some round ran on Prefect, so a payload of in-process rounds
(the bundled demo's) stays a pure function of the ledger.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from contextmesh.formats.run_ledger import LedgerEntry

__all__ = ["WORKER_EVENTS", "add_round_runs", "prefect_ui", "round_keys", "round_runs"]

# Events whose entry's ``key`` is the worker key the round ran the task with.
WORKER_EVENTS = frozenset({"executed", "failed"})  # a blocked task ran nothing
# Per flow run, what its entries recorded, in this order of preference, to name the run's part.
_RUN_PARTS = (
    ("executed", "run"),
    ("cached", "run"),
    ("failed", "run"),
    ("disproved", "recheck"),
    ("audited", "recheck"),
)


def round_runs(entries: Sequence[LedgerEntry]) -> dict[int, list[tuple[str, str]]]:
    """Per round, ``(flow run id, part)`` for each flow run its entries name, in first-seen order."""
    events: dict[int, dict[str, set[str]]] = {}
    for entry in entries:
        flow_run_id = None if entry.run is None else entry.run.get("flow_run_id")
        if flow_run_id:
            events.setdefault(entry.round, {}).setdefault(str(flow_run_id), set()).add(entry.event)
    return {number: [(run_id, _part(seen)) for run_id, seen in runs.items()] for number, runs in events.items()}


def _part(events: set[str]) -> str:
    return next((part for event, part in _RUN_PARTS if event in events), "other")


def round_keys(entries: Sequence[LedgerEntry]) -> dict[int, dict[str, dict[str, Any]]]:
    """Per round and task: the worker key the round ran (``key``; for a cached task, the key whose
    result stood, ``from_round`` naming the round that ran it) and the key a repair moved it onto."""
    ran: dict[str, tuple[str, int]] = {}  # task -> (key, round) of its newest run
    keys: dict[int, dict[str, dict[str, Any]]] = {}
    for entry in entries:
        if entry.task is None:
            continue
        blank = {"key": None, "from_round": None, "repaired_to": None}
        cell = keys.setdefault(entry.round, {}).setdefault(entry.task, blank)
        if entry.event in WORKER_EVENTS and entry.key:
            cell["key"], cell["from_round"] = entry.key, None
            if entry.event == "executed":
                ran[entry.task] = (entry.key, entry.round)
        elif entry.event == "cached" and cell["key"] is None and entry.task in ran:
            cell["key"], cell["from_round"] = ran[entry.task]
        elif entry.event == "repaired" and entry.key:
            cell["repaired_to"] = entry.key
    return keys


def prefect_ui() -> tuple[str | None, str]:
    """The Prefect UI this export links to, and where that address came from."""
    named = os.environ.get("PREFECT_UI_URL")
    if named:
        return named.removesuffix("/"), "PREFECT_UI_URL"
    try:
        from contextmesh.orchestration.command_server import configured_api_url  # noqa: PLC0415 - only with flow runs

        configured = configured_api_url()
    except ImportError:  # an install without Prefect reads sessions too
        return None, "Prefect is not installed where this export ran"
    if configured:
        return configured.removesuffix("/").removesuffix("/api"), "the configured PREFECT_API_URL"
    from contextmesh.orchestration.server_files import home_root, read_pid_file  # noqa: PLC0415
    from contextmesh.orchestration.server_process import process_alive  # noqa: PLC0415

    info = read_pid_file(home_root(None))
    if info is not None and process_alive(info.pid):
        return info.ui_url, f"the managed Prefect server of {info.home}"
    return None, "no Prefect server is configured or running for this export"


def add_round_runs(table: list[dict[str, Any]], entries: Sequence[LedgerEntry]) -> dict[str, Any]:
    """Give each round of the panel's ``table`` its flow runs and each cell its worker key; return
    the panel's ``prefect`` block (the UI linked to, and why)."""
    runs = round_runs(entries)
    keys = round_keys(entries)
    ui, ui_source = prefect_ui() if runs else (None, "no round ran on Prefect")
    for row in table:
        row["flow_runs"] = [
            {"id": run_id, "part": part, "url": None if ui is None else f"{ui}/runs/flow-run/{run_id}"}
            for run_id, part in runs.get(row["round"], [])
        ]
        for cell in row["cells"]:
            found = keys.get(row["round"], {}).get(cell["task"], {})
            cell["worker_key"] = found.get("key")
            cell["key_from_round"] = found.get("from_round")
            cell["repaired_to"] = found.get("repaired_to")
    return {"ui": ui, "ui_source": ui_source}

"""The second half of ``contextmesh demo``: the secure-authentication plan run, broken, repaired, re-run.

On Prefect (the default) every round is a flow run with a task run per decision: round 1 executes
every task, the recheck's auditor discovers the advisory and disproves the Argon2 ground, ``hashing``
is repaired onto another registered key, and the resume re-runs only the stale closure while the
rest is ``Cached``. The half ends by saying where to open those runs in the Prefect UI. With no
Prefect API configured, the managed local server is started and *kept* (``contextmesh server start``
does the same), so the links still open when the command has ended; the note says how to stop it.
``--executor in-process`` runs the same script in this process, without Prefect.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextmesh import InProcessExecutor

if TYPE_CHECKING:
    from contextmesh.demo.demo_commands import Kit
    from contextmesh.demo.on_prefect import PrefectWalkthrough

__all__ = ["execution_half", "open_in_ui"]

HEADER = "THE EXECUTION HALF · the secure-authentication plan, each decision a task"


def open_in_ui(walk: PrefectWalkthrough) -> list[str]:
    """Where a person opens the runs: the UI's runs list, then each flow run by what it did."""
    what = {
        walk.first.round: f"round {walk.first.round}, every task executed",
        walk.recheck.round: "the recheck: the auditor's disproof",
        walk.third.round: f"round {walk.third.round}: the stale closure re-ran, the rest Cached",
    }
    lines = ["OPEN THE RUNS IN THE PREFECT UI"]
    if walk.ui_url:
        lines.append(f"  all runs: {walk.ui_url}/runs")
    lines += [f"  {what.get(round_, f'round {round_}')}: {url}" for round_, url in sorted(walk.urls.items())]
    return lines


def execution_half(kit: Kit, *, executor: str, threads: int) -> tuple[dict[str, Any], str]:
    """Run the plan's walk-through where ``executor`` says; its data and its text."""
    from contextmesh.demo.transcript import render_walkthrough  # noqa: PLC0415

    def round_text(report: Any, **options: Any) -> str:
        return kit.render("round", report, **options)

    if executor == "in-process":
        from contextmesh.demo.execute import run_walkthrough  # noqa: PLC0415

        with tempfile.TemporaryDirectory(prefix="contextmesh-demo-") as scratch:
            walk = run_walkthrough(feed=Path(scratch) / "advisories.json", executor=InProcessExecutor(width=threads))
            text = render_walkthrough(walk, round_text)
        return {"executor": "in-process", **walk.to_dict()}, f"{HEADER} (in this process)\n\n{text}"
    from contextmesh.demo.on_prefect import execute_on_prefect  # noqa: PLC0415 - Prefect only here

    done, note = execute_on_prefect(None, None, threads=threads, keep_server=True)
    lines = [f"{HEADER} run on Prefect", "", render_walkthrough(done, round_text, urls=done.urls), ""]
    lines += open_in_ui(done)
    if note:
        lines.append(f"  ({note})")
    return {"executor": "prefect", **done.to_dict()}, "\n".join(lines)

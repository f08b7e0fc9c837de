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
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextmesh import InProcessExecutor

if TYPE_CHECKING:
    from contextmesh.demo.demo_commands import Kit
    from contextmesh.demo.on_prefect import PrefectWalkthrough

__all__ = ["ServerWarmup", "execution_half", "open_in_ui"]

HEADER = "THE EXECUTION HALF · the secure-authentication plan, each decision a task"


class ServerWarmup:
    """Start the managed server (kept) in a thread while the knowledge half builds, when none is configured.

    The server is another process, so its start-up (tens of seconds on a loaded machine) overlaps
    the graph build instead of following it. ``join`` re-raises what starting it raised; the
    execution half then finds the server running.
    """

    def __init__(self) -> None:
        self._failed: BaseException | None = None
        self._thread: threading.Thread | None = None
        self.started = False  # True once this warm-up started a server that was not running

    def start(self) -> ServerWarmup:
        """Begin, unless a Prefect API is configured (environment or profile): then nothing is started."""
        from contextmesh.orchestration.local_server import configured_api_url  # noqa: PLC0415
        from contextmesh.orchestration.settings import prepare_environment  # noqa: PLC0415

        prepare_environment()  # before Prefect's settings are first read, as every command does
        if not configured_api_url():
            self._thread = threading.Thread(target=self._run, name="contextmesh-server-warmup", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        from contextmesh.orchestration.commands import server_command  # noqa: PLC0415 - Prefect-free module

        try:
            status, _ = server_command("status")
            if not status.get("running"):
                server_command("start")
                self.started = True
        except BaseException as exc:  # handed to join, in the command's thread
            self._failed = exc

    def join(self) -> None:
        """Wait for the start; re-raise its failure."""
        if self._thread is not None:
            self._thread.join()
        if self._failed is not None:
            raise self._failed


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


def execution_half(kit: Kit, *, executor: str, threads: int, warmed: bool = False) -> tuple[dict[str, Any], str]:
    """Run the plan's walk-through where ``executor`` says; its data and its text (``warmed``: the
    server was started by :class:`ServerWarmup` for this command)."""
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
    if warmed and not note:
        note = (
            f"started a Prefect server for this command at {done.ui_url} and kept it running, so these pages "
            "open; `contextmesh server stop` stops it"
        )
    lines = [f"{HEADER} run on Prefect", "", render_walkthrough(done, round_text, urls=done.urls), ""]
    lines += open_in_ui(done)
    if note:
        lines.append(f"  ({note})")
    return {"executor": "prefect", "note": note or None, **done.to_dict()}, "\n".join(lines)

"""MCP resource notices: commit → ``notifications/resources/updated`` at the subscriber, p50/p95/max.

    .venv/bin/python bench/mcp_notices.py [--commits 20]

A stdio server (``deployments/serve_mcp.py``) serves a copy of the demo saved as a session; an MCP
SDK client subscribes to ``contextmesh://session`` in each protocol era (``resources/subscribe``,
then a ``subscriptions/listen`` stream). Two sources of commits, each ``--commits`` times:

* **own write** — the client calls ``mesh_submit_evidence`` (the server wakes its watch at once);
* **other process** — this bench process loads the directory, submits an observation and commits
  it, as a flow run or the CLI would (the server sees it on its 0.25 s generation watch).

Latency is the notice's arrival (wall clock) minus the commit's moment, the new manifest's mtime.
Aim (issue 20): every notice within 1 s of its commit. The load average is printed with the table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
sys.path.insert(0, str(_HERE.parent / "tests" / "mcp"))

from _common import Timings, print_table  # noqa: E402 - after the sys.path fix above
from mcp import Client, StdioServerParameters  # noqa: E402 - after the sys.path fix above
from mcp.shared.exceptions import MCPDeprecationWarning  # noqa: E402 - after the sys.path fix above
from mcp.types import ResourceUpdatedNotification  # noqa: E402 - after the sys.path fix above
from mcp_helpers import LAUNCHER, PYTHON, ROOT  # noqa: E402 - after the sys.path fix above

from contextmesh.belief.evidence import submit  # noqa: E402 - after the sys.path fix above
from contextmesh.demo.saved import demo_registry, save_demo_session  # noqa: E402 - after the sys.path fix above
from contextmesh.session.session import Session  # noqa: E402 - after the sys.path fix above

SESSION_URI = "contextmesh://session"
AIM_S = 1.0


def _mtime(directory: Path, generation: int) -> float:
    return (directory / f"session-{generation:06d}.json").stat().st_mtime


def _commit_elsewhere(directory: Path, feed: Path, text: str) -> int:
    """One observation committed by this process (not the server): the new generation."""
    session = Session.load(directory, registry=demo_registry(feed))
    runner = session.runner
    assert runner is not None
    submit(session.graph, text, runner.source_id)
    return session.commit()


async def _case(directory: Path, feed: Path, mode: str, commits: int) -> dict[str, Timings]:
    arrivals: asyncio.Queue[float] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            arrivals.put_nowait(time.time())

    params = StdioServerParameters(command=PYTHON, args=[str(LAUNCHER), "--session", str(directory)], cwd=str(ROOT))
    own: list[float] = []
    other: list[float] = []
    handler = on_message if mode == "legacy" else None
    async with Client(params, mode=mode, message_handler=handler, read_timeout_seconds=60) as client:
        await client.call_tool("mesh_health", {})  # warm the server before the first timed commit
        if mode == "legacy":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.session.subscribe_resource(SESSION_URI)
            await _measure(client, directory, feed, commits, arrivals, own, other, mode)
        else:
            async with client.listen(resource_subscriptions=[SESSION_URI]) as stream:

                async def forward() -> None:
                    async for _ in stream:
                        arrivals.put_nowait(time.time())

                task = asyncio.create_task(forward())
                await _measure(client, directory, feed, commits, arrivals, own, other, mode)
                task.cancel()
    return {"own write": Timings(tuple(own)), "other process": Timings(tuple(other))}


async def _measure(
    client: Client,
    directory: Path,
    feed: Path,
    commits: int,
    arrivals: asyncio.Queue[float],
    own: list[float],
    other: list[float],
    mode: str,
) -> None:
    source = Session.load(directory, registry=demo_registry(feed), policy="never").runner
    assert source is not None
    for index in range(commits):
        result = await client.call_tool(
            "mesh_submit_evidence", {"text": f"{mode} own observation {index}", "source_id": source.source_id}
        )
        generation = (result.structured_content or {})["generation"]
        own.append((await asyncio.wait_for(arrivals.get(), 10) - _mtime(directory, generation)) * 1000)
        generation = await asyncio.to_thread(_commit_elsewhere, directory, feed, f"{mode} other observation {index}")
        other.append((await asyncio.wait_for(arrivals.get(), 10) - _mtime(directory, generation)) * 1000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=20)
    args = parser.parse_args(argv)
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="contextmesh-bench-notices-") as scratch:
        base = Path(scratch)
        feed = base / "feed.json"
        for mode, era in (("legacy", "resources/subscribe"), ("auto", "subscriptions/listen")):
            directory = base / mode
            save_demo_session(directory, feed=feed)
            for source, ms in asyncio.run(_case(directory, feed, mode, args.commits)).items():
                within = "yes" if ms.max <= AIM_S * 1000 else "NO"
                rows.append([era, source, ms.count, f"{ms.p50:.0f}", f"{ms.p95:.0f}", f"{ms.max:.0f}", within])
    print(f"\n== commit → notifications/resources/updated at an SDK client over stdio, {args.commits} commits per row")
    print_table(["subscription", "commit by", "commits", "p50 ms", "p95 ms", "max ms", "all ≤ 1 s"], rows)
    print("load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

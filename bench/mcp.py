"""MCP latency: p50/p95 of ``mesh_ask`` over stdio and HTTP, for ``--demo``, ``--checkpoint never`` and
``every-ask`` side by side, with the in-process walk as the floor.

    .venv/bin/python bench/mcp.py [--asks 200] [--warmup 20] [--skip-stdio] [--skip-http] [--nodes 100000]
        [--blocks 4]

Each case starts ``deployments/serve_mcp.py`` (the launcher with the deployment's registry) as a
subprocess and drives it with the MCP SDK's own ``Client`` — what an agent would use — timing each
``tools/call`` round trip after a warm-up. HTTP is also timed with a raw keep-alive
``http.client`` connection (one JSON POST per call), which leaves out the SDK client's own cost;
for ``never`` and ``every-ask`` those raw rows come from both servers up at once, timed in
alternating blocks (``--blocks``), so a load that drifts during the run falls on both alike.
The session cases serve a copy of the demo saved as a session (plan round 1 executed); ``never``
serves it read-only, ``every-ask`` commits each ask's telemetry after its reply (ADR 0028: one
commit in flight, asks arriving meanwhile grouped into the next), so the rows also say how many
generations the asks made. The question mix is the demo's walk-round questions.

Aim (issue 9): p50 ≤ 10 ms over HTTP without per-ask checkpoints. Aim (issue 22): ``every-ask`` p50 at
most 1.5× ``never``'s, at demo size and, with ``--nodes N``, on a generated session of N nodes
(``generate_graph``, five edges a node, a resolver that knows every entity), served the same two ways
over HTTP (raw keep-alive). Session v5 journals each checkpoint: one segment of the moved counters
and the resolver's new log records, and a manifest (ADR 0020). Each ratio line carries the load
average when it was measured: figures on a shared machine are upper bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

# This file is named mcp.py, and Python puts its folder first on sys.path: move the folder to the
# end, so ``import mcp`` finds the SDK and ``import _common`` still finds the helpers beside it.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
sys.path.insert(0, str(_HERE.parent / "tests" / "mcp"))

from _common import Timings, print_table  # noqa: E402 - after the sys.path fix above
from mcp import Client, StdioServerParameters  # noqa: E402 - after the sys.path fix above
from mcp_helpers import LAUNCHER, PYTHON, ROOT, ServerProcess  # noqa: E402 - after the sys.path fix above

from contextmesh.demo.knowledge import round_questions  # noqa: E402 - after the sys.path fix above
from contextmesh.demo.saved import demo_registry, save_demo_session  # noqa: E402 - after the sys.path fix above
from contextmesh.knowledge.resolve import Resolver  # noqa: E402 - after the sys.path fix above
from contextmesh.session.commit import latest_generation  # noqa: E402 - after the sys.path fix above
from contextmesh.session.session import Session  # noqa: E402 - after the sys.path fix above
from contextmesh.testing import generate_graph  # noqa: E402 - after the sys.path fix above

AIM_HTTP_P50_MS = 10.0
CASES = (("--demo", ["--demo"]), ("never", ["--checkpoint", "never"]), ("every-ask", []))
# generations an every-ask row's asks committed, and the load average at its end, by row name
_MADE: dict[str, tuple[int, float]] = {}


async def _sdk_asks(client: Client, questions: list[str], warmup: int) -> Timings:
    samples: list[float] = []
    for index, question in enumerate(questions):
        start = time.perf_counter()
        result = await client.call_tool("mesh_ask", {"question": question})
        elapsed = (time.perf_counter() - start) * 1000
        if result.is_error:
            raise RuntimeError(f"mesh_ask failed: {result.content}")
        if index >= warmup:
            samples.append(elapsed)
    return Timings(tuple(samples))


async def _stdio(args: list[str], feed: Path, questions: list[str], warmup: int) -> Timings:
    params = StdioServerParameters(command=PYTHON, args=[str(LAUNCHER), *args, *_feed(args, feed)], cwd=str(ROOT))
    async with Client(params, read_timeout_seconds=120) as client:
        return await _sdk_asks(client, questions, warmup)


async def _http_sdk(url: str, questions: list[str], warmup: int) -> Timings:
    async with Client(url) as client:
        return await _sdk_asks(client, questions, warmup)


def _http_raw(port: int, questions: list[str], warmup: int) -> Timings:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    samples: list[float] = []
    try:
        for index, question in enumerate(questions):
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": index,
                    "method": "tools/call",
                    "params": {"name": "mesh_ask", "arguments": {"question": question}},
                }
            )
            start = time.perf_counter()
            connection.request("POST", "/mcp", body=body, headers=headers)
            payload = connection.getresponse().read()
            elapsed = (time.perf_counter() - start) * 1000
            if json.loads(payload).get("result", {}).get("isError", True):
                raise RuntimeError(f"mesh_ask failed: {payload[:200]!r}")
            if index >= warmup:
                samples.append(elapsed)
    finally:
        connection.close()
    return Timings(tuple(samples))


def _side_by_side(servers: dict[str, int], questions: list[str], warmup: int, blocks: int) -> dict[str, Timings]:
    """``never`` and ``every-ask`` over raw HTTP in alternating blocks (ABBA order), both servers up.

    On a shared machine the load drifts over a run; alternating blocks lets the drift fall on both
    cases alike instead of on whichever ran second. Before each block the bench waits 0.5 s so the
    other server's commit after the reply (ADR 0028) is over and never competes with this block.
    """
    timed = questions[warmup:]
    samples: dict[str, list[float]] = {case: [] for case in servers}
    for port in servers.values():
        _http_raw(port, questions[:warmup], warmup)  # warm-up only: every sample dropped
    size = max(1, len(timed) // blocks)
    order = list(servers)
    for block in range(blocks):
        part = timed[block * size : (block + 1) * size] if block < blocks - 1 else timed[block * size :]
        for case in order if block % 2 == 0 else order[::-1]:
            time.sleep(0.5)
            samples[case] += _http_raw(servers[case], part, 0).samples_ms
    return {case: Timings(tuple(values)) for case, values in samples.items()}


def _pair(
    base: Path, template: Path, tag: str, questions: list[str], warmup: int, blocks: int, server: type[ServerProcess]
) -> list[list[object]]:
    """Serve copies of ``template`` as ``never`` and ``every-ask`` at once and time them side by side."""
    feed = base / "feed.json"
    targets = {}
    for case in ("never", "every-ask"):
        target = targets[case] = base / f"pair{tag.replace(' ', '').replace(',', '')}-{case}"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(template, target)
    env = {"CONTEXTMESH_DEMO_FEED": str(feed)}
    never_args = ["--session", str(targets["never"]), "--checkpoint", "never"]
    with server(never_args, env=env) as never, server(["--session", str(targets["every-ask"])], env=env) as every:
        before = latest_generation(targets["every-ask"])
        timings = _side_by_side(
            {"never": never.port, "every-ask": every.port},
            questions,
            warmup,
            blocks,
        )
        _MADE[f"every-ask{tag}"] = (latest_generation(targets["every-ask"]) - before, os.getloadavg()[0])
    aims = {"never": AIM_HTTP_P50_MS, "every-ask": None}
    return [_row(f"{case}{tag}", "HTTP (raw keep-alive)", timings[case], aims[case]) for case in aims]


def _feed(args: list[str], feed: Path) -> list[str]:
    return [] if "--demo" in args else ["--feed", str(feed)]


def _floor(template: Path, feed: Path, questions: list[str], warmup: int) -> Timings:
    session = Session.load(template, registry=demo_registry(feed), policy="never")
    samples: list[float] = []
    for index, question in enumerate(questions):
        start = time.perf_counter()
        session.ask(question)
        if index >= warmup:
            samples.append((time.perf_counter() - start) * 1000)
    return Timings(tuple(samples))


def _row(case: str, transport: str, timings: Timings, aim: float | None = None) -> list[object]:
    verdict = "-" if aim is None else ("ok" if timings.p50 <= aim else "MISSED")
    return [case, transport, timings.count, timings.p50, timings.p95, timings.max, verdict]


class _SlowStart(ServerProcess):
    """A server whose start loads a large session: wait longer for its URL."""

    def _wait_for_url(self, timeout: float = 900.0) -> None:
        super()._wait_for_url(timeout)


def _scale_rows(base: Path, nodes: int, questions: list[str], warmup: int, blocks: int) -> list[list[object]]:
    """``never`` and ``every-ask`` over HTTP on a generated session of ``nodes`` nodes."""
    start = time.perf_counter()
    graph = generate_graph(nodes)
    resolver = Resolver()
    for node in graph.by_type("entity"):
        resolver.register(node.id, node.label)
    template = base / f"scale-{nodes}"
    Session.create(template, Session(graph, resolver, policy="never"))
    del graph, resolver
    print(f"built and saved a {nodes:,}-node session in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return _pair(base, template, f" @ {nodes:,}", questions, warmup, blocks, _SlowStart)


def _ratios(rows: list[list[object]]) -> list[str]:
    """every-ask p50 against never's, per size: issue 22's aim is at most 1.5×."""
    lines = []
    for suffix in sorted({str(r[0]).partition(" @ ")[2] for r in rows if str(r[0]).startswith("never")}):
        tag = f" @ {suffix}" if suffix else ""
        pick = {
            str(r[0]): float(str(r[3]))
            for r in rows
            if r[1] == "HTTP (raw keep-alive)" and str(r[0]) in (f"never{tag}", f"every-ask{tag}")
        }
        if len(pick) == 2:
            ratio = pick[f"every-ask{tag}"] / pick[f"never{tag}"]
            verdict = "met" if ratio <= 1.5 else "MISSED"
            made, load = _MADE.get(f"every-ask{tag}", (0, os.getloadavg()[0]))
            lines.append(
                f"{suffix or 'demo'}: every-ask p50 {pick[f'every-ask{tag}']:.1f} ms = {ratio:.2f}× never's "
                f"{pick[f'never{tag}']:.1f} ms (aim ≤ 1.5×): {verdict}; its asks committed {made} generations "
                f"(grouped after the reply); load average {load:.2f} on {os.cpu_count()} CPUs"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--skip-stdio", action="store_true")
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--nodes", type=int, default=0, help="also serve a generated session of this many nodes")
    parser.add_argument(
        "--blocks", type=int, default=4, help="alternating blocks the raw HTTP never/every-ask asks are timed in"
    )
    args = parser.parse_args(argv)
    mix = round_questions()
    questions = [mix[i % len(mix)] for i in range(args.warmup + args.asks)]
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="contextmesh-bench-mcp-") as scratch:
        base = Path(scratch)
        feed = base / "feed.json"
        template = base / "template"
        save_demo_session(template, feed=feed)
        rows.append(_row("engine floor", "in-process Session.ask", _floor(template, feed, questions, args.warmup)))
        for case, extra in CASES:
            target = base / case.strip("-")
            server_args = extra if case == "--demo" else ["--session", str(target), *extra]
            if not args.skip_stdio:
                if case != "--demo":
                    shutil.rmtree(target, ignore_errors=True)
                    shutil.copytree(template, target)
                timings = asyncio.run(_stdio(server_args, feed, questions, args.warmup))
                rows.append(_row(case, "stdio (SDK client)", timings))
            if not args.skip_http:
                if case != "--demo":
                    shutil.rmtree(target, ignore_errors=True)
                    shutil.copytree(template, target)
                with ServerProcess(server_args, env={"CONTEXTMESH_DEMO_FEED": str(feed)}) as server:
                    assert server.url is not None
                    aim = None if case == "every-ask" else AIM_HTTP_P50_MS
                    rows.append(
                        _row(case, "HTTP (SDK client)", asyncio.run(_http_sdk(server.url, questions, args.warmup)))
                    )
                    if case == "--demo":
                        rows.append(
                            _row(case, "HTTP (raw keep-alive)", _http_raw(server.port, questions, args.warmup), aim)
                        )
        if not args.skip_http:
            rows += _pair(base, template, "", questions, args.warmup, args.blocks, ServerProcess)
        if args.nodes:
            rows += _scale_rows(base, args.nodes, questions, args.warmup, args.blocks)
    print(
        f"\n== mesh_ask latency, {args.asks} timed asks per row after {args.warmup} warm-up (demo walk-round questions)"
    )
    print_table(["case", "transport", "asks", "p50 ms", "p95 ms", "max ms", "aim p50 ≤ 10 ms"], rows)
    every = [r for r in rows if r[0] == "every-ask" and r[1] == "HTTP (raw keep-alive)"]
    never = [r for r in rows if r[0] == "never" and r[1] == "HTTP (raw keep-alive)"]
    if every and never:
        extra = float(str(every[0][3])) - float(str(never[0][3]))
        print(f"every-ask costs {extra:.1f} ms more per ask at p50 over HTTP (its commits run after the reply)")
    for line in _ratios(rows):
        print(line)
    print(f"load average at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

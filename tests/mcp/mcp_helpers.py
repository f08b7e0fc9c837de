"""Shared pieces of the MCP tests: demo sessions, served sessions, snapshots, server subprocesses.

The demo session takes a couple of seconds to build, so ``conftest.py`` builds it once per test
run into a template and each test copies it (:func:`copy_session`). Server subprocesses run
``deployments/serve_mcp.py`` (the launcher that embeds the deployment's registry) with the
template's own empty advisory feed, and are stopped by their own pid.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextmesh.demo.saved import demo_registry
from contextmesh.formats.graph_file import dump_graph
from contextmesh.formats.resolver_file import dump_resolver
from contextmesh.mcp.served_session import ServedSession
from contextmesh.session.session import Session

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "deployments" / "serve_mcp.py"
PYTHON = sys.executable
ADVISORY = "argon2-cffi: CVE-2026-9999, memory-hard parameters silently downgraded (advisory)"
QUESTIONS = (
    "Why did the Index Builder run out of memory?",
    "What does the Partitioned Rebuild depend on?",
    "Which decision keys shards on tenant?",
    "What did postmortem 233 find about sharding?",
)


def copy_session(template: Path, target: Path) -> Path:
    """A private copy of a session directory."""
    shutil.copytree(template, target)
    return target


def dir_bytes(directory: Path) -> dict[str, bytes]:
    """Every file of a directory by name: the byte-for-byte state a comparison needs."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def served_session(directory: Path, feed: Path, *, policy: str = "every-ask") -> ServedSession:
    """A durable served session with the demo registry bound to ``feed``."""
    session = Session.load(directory, registry=demo_registry(feed), policy=policy)
    return ServedSession(session, ephemeral=False, source=str(directory))


def structure(session: Session) -> dict[str, Any]:
    """Everything but walk telemetry: node records without ``walks``, edges without ``traversals``."""
    graph = session.graph
    return {
        "nodes": {i: n.model_dump(exclude={"walks"}) for i, n in graph.nodes.items()},
        "edges": {i: e.model_dump(exclude={"traversals"}) for i, e in graph.edges.items()},
        "assumptions": {i: a.model_dump() for i, a in graph.assumptions.items()},
        "build": graph.build,
    }


def state_bytes(session: Session) -> dict[str, bytes]:
    """The graph and resolver bytes and, with a plan, the plan and ledger bytes."""
    return {
        "graph": dump_graph(session.graph),
        "resolver": dump_resolver(session.resolver),
        **({k: v for k, v in session.companions().items() if k in {"execution", "runledger"}}),
    }


def telemetry(session: Session) -> tuple[int, int]:
    """(sum of node walks, sum of edge traversals)."""
    graph = session.graph
    return sum(n.walks for n in graph.nodes.values()), sum(e.traversals for e in graph.edges.values())


class ServerProcess:
    """A ``serve_mcp.py`` subprocess; for HTTP, its URL comes from the 'listening on' line on stderr."""

    def __init__(
        self, args: list[str], *, env: Mapping[str, str] | None = None, http: bool = True, port: int = 0
    ) -> None:
        command = [PYTHON, str(LAUNCHER), *args]
        if http:
            command += ["--transport", "http", "--port", str(port)]
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            cwd=ROOT,
        )
        self.stderr: list[str] = []
        self.stdout = b""
        self._listening = threading.Event()
        self.url: str | None = None
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        if http:
            self._wait_for_url()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.stderr.append(line)
            if "listening on http://" in line:
                self.url = line.split("listening on ", 1)[1].split(" ", 1)[0]
                self._listening.set()
        self._listening.set()

    def _wait_for_url(self, timeout: float = 60.0) -> None:
        self._listening.wait(timeout)
        if self.url is None:
            self.stop()
            raise RuntimeError("the server did not start listening:\n" + "\n".join(self.stderr))

    @property
    def port(self) -> int:
        assert self.url is not None
        return int(self.url.rsplit(":", 1)[1].split("/", 1)[0])

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM (a clean stop: the on-exit checkpoint runs), then wait; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(timeout)
        assert self.proc.stdout is not None
        self.stdout = self.proc.stdout.read()
        self.proc.stdout.close()
        self._reader.join(timeout)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        return code

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def free_port() -> int:
    """A TCP port nothing listens on right now (for a test that must name its port up front)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until(predicate: Any, timeout: float = 10.0) -> bool:
    """Poll ``predicate`` until it is true or the timeout passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())

"""The served session: one lock around every tool and resource, and a reload on another writer's commit.

A long-lived server holds one :class:`~contextmesh.session.session.Session` at a time. Every
request runs under :attr:`ServedSession.lock` (no two mutations at once, no read of a half-made
state) and starts with :meth:`ServedSession.refresh`: one ``stat`` for the next manifest, and a
reload when another writer (a flow run, the CLI) committed a newer generation. A controlled write
replaces the held session with its committed clone (:meth:`adopt`); nothing else replaces it.

The in-process walk list (what the ``dead_ends`` health signal counts) is carried across reloads
and adoptions: it belongs to this process, not to a generation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from contextmesh.core.errors import SessionError
from contextmesh.mcp.write_dispatch import DEFAULT_PROBE_TTL, DISPATCHABLE, Dispatcher, ProbeCache
from contextmesh.session.background import BackgroundCheckpoints
from contextmesh.session.session import Session

__all__ = ["ServedSession"]

T = TypeVar("T")


class ServedSession:
    """The session a server answers from, its lock, and where its recheck and resume run."""

    def __init__(
        self,
        session: Session,
        *,
        ephemeral: bool,
        source: str,
        dispatcher: Dispatcher | None = None,
        probe_ttl: float = DEFAULT_PROBE_TTL,
    ) -> None:
        if ephemeral == (session.directory is not None):
            raise SessionError("an ephemeral served session has no directory, and a durable one has one")
        self.session = session
        self.ephemeral = ephemeral
        self.source = source
        self.dispatcher = dispatcher
        self.probe = None if dispatcher is None else ProbeCache(dispatcher.answering, ttl=probe_ttl)
        self.lock = threading.RLock()
        self.reloads = 0
        self.writes = 0
        # every-ask commits after the reply, asks in flight grouped (ADR 0028)
        self.background = None if ephemeral or session.policy != "every-ask" else BackgroundCheckpoints(self.lock)
        if self.background is not None:
            self.background.attach(session)

    # -- serving ------------------------------------------------------------------------------

    def call(self, fn: Callable[[ServedSession], T]) -> T:
        """Run ``fn`` under the lock, on the newest committed generation."""
        with self.lock:
            self.refresh()
            return fn(self)

    def refresh(self) -> bool:
        """Reload when another writer committed a newer generation; True if it did."""
        walks = self.session.walker.walks
        if not self.session.refresh():
            return False
        self.session.walker.walks = walks
        self.reloads += 1
        return True

    def adopt(self, session: Session) -> None:
        """Make a committed clone the live session (the controlled writes' last step)."""
        session.walker.walks = self.session.walker.walks
        if self.background is not None:
            self.background.attach(session)
        self.session = session
        self.writes += 1

    def drain(self) -> None:
        """Land the commit in flight (a controlled write clones the session only after it)."""
        if self.background is not None:
            self.background.drain()

    # -- what it allows ----------------------------------------------------------------------------

    def write_refusal(self) -> str | None:
        """Why a controlled write cannot commit here, or None when it can."""
        if self.ephemeral:
            return (
                "this server serves an ephemeral --demo graph, so there is nothing durable to commit a write "
                "into; save one with `contextmesh-mcp --demo --save DIR` and serve it with --session DIR"
            )
        if self.session.policy == "never":
            return (
                "this session is served with --checkpoint never (a directory this server does not own), so "
                "controlled writes are refused; serve it with every-ask or on-exit to write"
            )
        return None

    def not_answering(self) -> list[str]:
        """The write tools that would dispatch to a deployment that is not answering (cached probe)."""
        if self.ephemeral or self.probe is None:
            return []
        return [] if self.probe.answering() else sorted(DISPATCHABLE)

    def not_answering_note(self) -> str:
        """What a not-answering tool's description says, so a client that drops ``_meta`` still reads it."""
        target = "its deployment" if self.dispatcher is None else self.dispatcher.name
        return (
            f"NOT ANSWERING NOW: this tool dispatches to {target}, which does not answer (serve.py stopped, "
            "the API down, or the deployments missing); a call is refused and nothing runs in this process "
            "instead."
        )

    # -- describing ------------------------------------------------------------------------------

    def note(self) -> str:
        """Whether what a client does here outlives the server, in one paragraph."""
        if self.ephemeral:
            return (
                "Rebuilt for this process from the bundled demo corpus: nothing a client does outlives it, and "
                "controlled writes are refused. Save one with `contextmesh-mcp --demo --save DIR` and serve it "
                "with --session DIR."
            )
        policy = self.session.policy
        kept = (
            "Structure, belief, resolution, the execution plan and the run ledger survive a restart; the "
            "in-process walk list (the dead_ends health signal) does not."
        )
        if policy == "every-ask":
            return (
                "Restored from disk; every ask's telemetry is committed after its reply, within a 0.2 s group window "
                "shared with the asks answered meanwhile (a crash before that commit loses only their telemetry), and "
                f"every controlled write commits a new generation. {kept}"
            )
        if policy == "on-exit":
            return (
                "Restored from disk; asks are committed once, on a clean stop (a killed process loses them); "
                f"controlled writes commit at once. {kept}"
            )
        return (
            "Served read-only from disk (--checkpoint never): asks move telemetry in memory only, lost at exit, "
            "and controlled writes are refused."
        )

    def describe(self) -> dict[str, Any]:
        """``Session.describe()`` plus the persistence note and this process's counters."""
        session = self.session
        data = session.describe()
        data["note"] = self.note()
        data["served"] = {
            "source": self.source,
            "ephemeral": self.ephemeral,
            "writes": None if self.write_refusal() else "controlled",
            "dispatch": "in-process" if self.dispatcher is None else self.dispatcher.name,
            "not_answering": self.not_answering(),
            "walks_in_process": len(session.walker.walks),
            "node_walks": sum(n.walks for n in session.graph.nodes.values()),
            "edge_traversals": sum(e.traversals for e in session.graph.edges.values()),
            "reloads": self.reloads,
            "committed_writes": self.writes,
            "registry": None if session.registry is None else session.registry.describe(),
        }
        return data

    def banner(self) -> str:
        """The one stderr line that says what is served and whether it persists."""
        session = self.session
        graph = session.graph
        nodes_live = sum(graph.type_counts().values())
        edges_live = sum(graph.edge_counts().values())
        counts = f"{nodes_live}/{len(graph.nodes)} nodes live, {edges_live}/{len(graph.edges)} edges live"
        writes = "read-only" if self.write_refusal() else "controlled writes"
        if self.ephemeral:
            where = f"{self.source}, not persistent (nothing outlives this process)"
        else:
            where = f"from {session.directory} generation {session.generation}, checkpoint {session.policy}"
            if session.policy == "never":
                where += " (not written back)"
        plan = "" if session.runner is None else f", plan '{session.runner.name}' round {session.runner.round}"
        dispatch = "" if self.dispatcher is None else f", recheck/resume via {self.dispatcher.name}"
        return f"contextmesh MCP: {counts}{plan}, {writes}{dispatch}, {where}"

    def close(self) -> str | None:
        """Commit pending asks under the policy; a line for stderr saying what happened (None: nothing)."""
        with self.lock:
            session = self.session
            if self.ephemeral or session.policy == "never":
                return None
            if self.background is not None:
                self.background.stop()
            if not session.pending:
                return f"contextmesh MCP: nothing pending for {session.directory}"
            try:
                session.close()
            except SessionError as exc:
                return f"contextmesh MCP: final checkpoint failed: {exc}"
            if session.pending:
                return f"contextmesh MCP: final checkpoint skipped ({session.pending} ask(s) not committed)"
            return f"contextmesh MCP: checkpointed {session.directory} at generation {session.generation}"

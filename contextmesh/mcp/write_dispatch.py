"""Where ``mesh_recheck`` and ``mesh_resume`` run: in this process, or on a deployment.

Without a dispatcher the server runs both in-process, each committed through a lossless clone
(:mod:`contextmesh.mcp.write_tools`). A launcher that serves a session beside a Prefect deployment
passes a :class:`Dispatcher` instead (``main(argv, registry=…, dispatcher=…)``):
:func:`contextmesh.mcp.deployment_dispatcher.dispatcher_for` gives one when the rule the CLI follows
too (:func:`contextmesh.orchestration.write_target.served_target`) finds served deployments. It
starts the recheck or resume flow run and returns at once with a handle — the run's id, URL and
state — unless the launcher asked it to wait (``--dispatch-wait``) and the run ended in that time,
when the answer is the run's own report. ``mesh_flow_run`` follows a handle (:meth:`Dispatcher.follow`)
until the run ends and then returns that report. The run commits to the session directory itself;
the served session sees the new generation on the next request (one ``stat``), and subscribers of
the resources it changed are told (:mod:`contextmesh.mcp.resource_watch`).

A dispatcher never falls back to in-process execution: if its API or deployment is not
answering, the call is refused, and ``tools/list`` names the tools it would have run under
``_meta.notAnswering`` and in their descriptions (``contextmesh://session``: ``served.not_answering``).
The health probe behind that list is cached (:class:`ProbeCache`, a few seconds' TTL), so listing
tools never costs a network round trip per call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from contextmesh.mcp.models import FlowRunReport, RecheckResult, ResumeResult
from contextmesh.session.session import Session

__all__ = ["DEFAULT_PROBE_TTL", "DISPATCHABLE", "Dispatcher", "ProbeCache"]

DEFAULT_PROBE_TTL = 3.0
DISPATCHABLE = frozenset({"mesh_recheck", "mesh_resume", "mesh_rerun_from"})  # the last: mcp/rerun_tool.py


@runtime_checkable
class Dispatcher(Protocol):
    """Runs recheck and resume somewhere other than this process (a Prefect deployment)."""

    @property
    def name(self) -> str:
        """What it dispatches to, for the banner and ``contextmesh://session`` (e.g. a deployment name)."""
        ...

    def answering(self) -> bool:
        """True when the API and the deployment answer. Cheap, bounded, never raises for 'down'."""
        ...

    def recheck(self, session: Session) -> RecheckResult:
        """Run the recheck flow for ``session`` and wait a bounded time for its report."""
        ...

    def resume(self, session: Session) -> ResumeResult:
        """Run the plan in resume mode (only pending and stale work) and wait a bounded time."""
        ...

    def follow(self, flow_run_id: str, session: Session) -> FlowRunReport:
        """A run this dispatcher started: its state now and, once it ended, its report."""
        ...


class ProbeCache:
    """A health probe answered from cache for ``ttl`` seconds; a probe that raises counts as down."""

    def __init__(
        self, probe: Callable[[], bool], *, ttl: float = DEFAULT_PROBE_TTL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._probe = probe
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._checked_at: float | None = None
        self._answer = False
        self.probes = 0

    def answering(self) -> bool:
        """The cached answer, re-probed once it is older than the TTL."""
        with self._lock:
            now = self._clock()
            if self._checked_at is None or now - self._checked_at >= self._ttl:
                self.probes += 1
                try:
                    self._answer = bool(self._probe())
                except Exception:  # a probe that fails is a service that does not answer
                    self._answer = False
                self._checked_at = now
            return self._answer

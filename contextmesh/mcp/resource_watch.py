"""Resource subscriptions: what a client watches, and the notice when a commit changes it.

A client subscribes with ``resources/subscribe`` (protocol eras before 2026-07-28) or opens a
``subscriptions/listen`` stream naming resources (2026-07-28); the server turns either into
:meth:`ResourceWatch.subscribe` with a *sink*, the coroutine that sends that client
``notifications/resources/updated``. A watch remembers a digest of each subscribed resource as it
was rendered, and the served session's generation.

Its loop (:meth:`ResourceWatch.run`, one per connection, in the server's lifespan) sleeps on an
event. This server's own tools wake it as soon as a call returns (:meth:`poke`); while anything is
subscribed it also wakes every :data:`POLL_INTERVAL` seconds, because another process (a flow run,
the CLI) may commit the session. Awake, it asks the served session for its generation — under the
served lock, one ``stat`` of the next manifest and a reload only if someone committed. Only a new
generation re-renders the subscribed resources, and each whose rendering changed is announced once
to every subscriber of it: a notice means "read it again, it is different", never "time passed".
With nothing subscribed the loop never polls.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Awaitable, Callable, Hashable

import anyio
import anyio.to_thread

from contextmesh.mcp.read_tools import MeshToolError
from contextmesh.mcp.served_session import ServedSession

__all__ = ["MAX_SUBSCRIPTIONS", "POLL_INTERVAL", "ResourceWatch", "Sink", "SubscriptionError"]

POLL_INTERVAL = 0.25  # seconds: another process's commit is announced well within a second
MAX_SUBSCRIPTIONS = 256  # distinct resources one connection may watch; each is re-rendered per commit

Render = Callable[[str], Awaitable[str]]
Sink = Callable[[str, int], Awaitable[None]]  # (uri, the generation that changed it)

_log = logging.getLogger("contextmesh.mcp")


class SubscriptionError(MeshToolError):
    """A subscription was refused (no such resource, too many); nothing was subscribed."""


class ResourceWatch:
    """The subscriptions of one connection, the digests they were last announced at, and its loop."""

    def __init__(
        self,
        served: ServedSession,
        render: Render,
        *,
        interval: float = POLL_INTERVAL,
        limit: int = MAX_SUBSCRIPTIONS,
    ) -> None:
        self.served = served
        self._render = render
        self._interval = interval
        self._limit = limit
        self._subscribers: dict[Hashable, tuple[Sink, set[str]]] = {}
        self._digests: dict[str, str] = {}
        self._generation: int | None = None
        self._wake = anyio.Event()
        self.checks = 0  # how many times a generation was looked up (what the loop cost)
        self.notices = 0  # how many notifications were sent

    # -- subscribing --------------------------------------------------------------------------------

    def uris(self) -> set[str]:
        """Every resource some subscriber of this connection watches."""
        return {uri for _, uris in self._subscribers.values() for uri in uris}

    async def subscribe(self, key: Hashable, uri: str, sink: Sink) -> None:
        """Watch ``uri`` for ``key`` (a session or a listen stream); refused if it cannot be read."""
        if uri not in self._digests and len(self.uris()) >= self._limit:
            raise SubscriptionError(
                f"cannot subscribe to {uri!r}: this connection already watches {self._limit} resources, the limit"
            )
        if self._generation is None:  # before the first rendering: a commit in between is seen, not missed
            self._generation = await anyio.to_thread.run_sync(self._current_generation)
        if uri not in self._digests:
            self._digests[uri] = _digest(await self._render(uri))  # raises for a resource that does not exist
        _, uris = self._subscribers.setdefault(key, (sink, set()))
        uris.add(uri)
        self.poke()  # the loop starts polling now that something is watched

    def unsubscribe(self, key: Hashable, uri: str | None = None) -> None:
        """Stop watching ``uri`` for ``key`` (every URI of it when None); unknown pairs are ignored."""
        entry = self._subscribers.get(key)
        if entry is not None:
            if uri is None:
                entry[1].clear()
            else:
                entry[1].discard(uri)
            if not entry[1]:
                del self._subscribers[key]
        watched = self.uris()
        for stale in set(self._digests) - watched:
            del self._digests[stale]

    # -- the loop -----------------------------------------------------------------------------------

    def poke(self) -> None:
        """Look now (this server just committed, or a subscription arrived)."""
        self._wake.set()

    async def run(self) -> None:
        """Wake on a poke, or every interval while anything is watched; announce what commits changed."""
        while True:
            with anyio.move_on_after(self._interval if self._subscribers else math.inf):
                await self._wake.wait()
            self._wake = anyio.Event()
            if not self._subscribers:
                continue
            try:
                await self.check()
            except Exception as exc:  # a generation that cannot load: say so, keep the connection, look again
                _log.warning("resource watch could not read the session (%s: %s)", type(exc).__name__, exc)

    async def check(self) -> list[str]:
        """One look: on a new generation, announce each subscribed resource whose rendering changed."""
        self.checks += 1
        generation = await anyio.to_thread.run_sync(self._current_generation)
        if generation == self._generation:
            return []
        self._generation = generation
        changed: list[str] = []
        for uri in sorted(self.uris()):
            digest = await self._safe_digest(uri)
            if digest == self._digests.get(uri):
                continue
            self._digests[uri] = digest
            changed.append(uri)
            for key, (sink, uris) in list(self._subscribers.items()):
                if uri in uris:
                    await self._send(key, sink, uri, generation)
        return changed

    def _current_generation(self) -> int:
        return self.served.call(lambda current: current.session.generation)

    async def _safe_digest(self, uri: str) -> str:
        try:
            return _digest(await self._render(uri))
        except Exception as exc:  # an assumption that stopped existing reads as a change, not a crash
            return _digest(f"unreadable: {type(exc).__name__}: {exc}")

    async def _send(self, key: Hashable, sink: Sink, uri: str, generation: int) -> None:
        try:
            await sink(uri, generation)
        except Exception as exc:  # a client gone away: drop its subscriptions, keep serving the others
            _log.warning(
                "resource notice for %s not delivered (%s); its subscriptions are dropped", uri, type(exc).__name__
            )
            self.unsubscribe(key)
            return
        self.notices += 1


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

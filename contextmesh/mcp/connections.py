"""Slow HTTP clients cannot lock the others out: a deadline per request and a connection cap per client.

uvicorn's own knobs do not cover this. ``limit_concurrency`` counts *connections*, finished or
not, so eighty half-sent requests answered every honest client 503; ``timeout_keep_alive`` runs
only between requests, so nothing ever cut off a client that sent half a request, or nothing at
all, and waited. :func:`guarded_protocol` returns uvicorn's h11 protocol with two rules added:

1. **A read deadline.** A connection has :attr:`ConnectionLimits.read_timeout` seconds to send a
   whole request — request line, headers and body — counted from the moment it connects, or from
   its first byte after a response. Past it the server answers 408 and closes. A client that
   trickles one byte a second gains nothing: the deadline is for the whole request, not per read.
   An idle keep-alive connection is closed after uvicorn's keep-alive time or the read timeout,
   whichever is shorter.
2. **A connection cap per client address, and one overall.** A new connection beyond
   :attr:`ConnectionLimits.per_client` connections from its address (or beyond
   :attr:`ConnectionLimits.total`) does not wait and is not refused while the server has slack:
   it evicts that address's connection that has been *reading* its current request the longest
   (a slow client), else the one *idle* the longest. A connection whose request is complete and running is
   never evicted; only when every connection is running is the newcomer refused, with 503.

So a flood of slow connections from one address recycles its own slots, and an honest request —
which completes in milliseconds — is read, answered and done before it could become the oldest.
Everything here runs on the event loop's thread, so the book needs no lock.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_LIMITS", "ConnectionBook", "ConnectionLimits", "guarded_protocol"]

_READING, _RUNNING, _IDLE = "reading", "running", "idle"
_REQUEST_READ = frozenset({h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR})


@dataclass(frozen=True)
class ConnectionLimits:
    """How long a request may take to arrive, and how many connections a client may hold."""

    read_timeout: float = 10.0
    per_client: int = 64
    total: int = 256


DEFAULT_LIMITS = ConnectionLimits()


def _plain_response(status: bytes, text: str) -> bytes:
    body = text.encode("utf-8")
    head = (
        b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: " + str(len(body)).encode("ascii") + b"\r\nconnection: close\r\n\r\n"
    )
    return head + body


class ConnectionBook:
    """Every open connection by client address, oldest first, and which may make room for a new one."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.by_client: dict[str, dict[GuardedH11Protocol, None]] = {}
        self.open = 0
        self.evicted = 0
        self.refused = 0
        self.timed_out = 0

    def admit(self, connection: GuardedH11Protocol) -> bool:
        """Make room for ``connection`` (evicting a slow or idle one if needed); False when there is none."""
        mine = self.by_client.get(connection.client_key, {})
        if len(mine) >= self.limits.per_client:
            if not self._evict_from(mine):
                return False
        elif self.open >= self.limits.total:
            busiest = max(self.by_client.values(), key=len)
            if not self._evict_from(busiest):
                return False
        self.by_client.setdefault(connection.client_key, {})[connection] = None
        self.open += 1
        return True

    def forget(self, connection: GuardedH11Protocol) -> None:
        mine = self.by_client.get(connection.client_key)
        if mine is not None and connection in mine:
            del mine[connection]
            self.open -= 1
            if not mine:
                del self.by_client[connection.client_key]

    def _evict_from(self, connections: dict[GuardedH11Protocol, None]) -> bool:
        # Oldest by the *current* phase, not by connect time: an honest keep-alive connection is old,
        # but the request it is reading began a moment ago.
        for phase in (_READING, _IDLE):
            victim = min((c for c in connections if c.phase == phase), key=lambda c: c.phase_since, default=None)
            if victim is not None:
                self.forget(victim)
                victim.evict()
                self.evicted += 1
                return True
        return False


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a read deadline and a place in a :class:`ConnectionBook`.

    A connection is *reading* (a request is due or partly in), *running* (the whole request is in
    and the app has it) or *idle* (a response went out and no byte of the next request came).
    Reading and idle connections carry a deadline; the deadline does not restart while a request
    trickles in, only when the phase changes.
    """

    book: ConnectionBook

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.phase = ""
        self.phase_since = 0.0
        self.client_key = ""
        self._deadline: asyncio.TimerHandle | None = None

    # -- uvicorn's hooks ----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.client_key = self.client[0] if self.client else "?"
        if not self.book.admit(self):
            self.book.refused += 1
            self._close_with(b"503 Service Unavailable", "every connection from this client is busy; retry shortly")
            return
        self._enter(_READING)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.book.forget(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.phase == _IDLE:
            self._enter(_READING)
        super().data_received(data)
        self._settle()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start a pipelined request at once
        self._settle()

    # -- the phases ------------------------------------------------------------------------------------

    def _settle(self) -> None:
        """The phase h11's view of the client says: its request is in, partly in, or not begun."""
        if self.transport.is_closing():
            return
        theirs = self.conn.their_state
        if theirs in _REQUEST_READ:
            self._enter(_RUNNING)
        elif theirs is h11.SEND_BODY or self.conn.trailing_data[0]:
            self._enter(_READING)
        elif self.cycle is None or self.cycle.response_complete:
            self._enter(_IDLE)

    def _enter(self, phase: str) -> None:
        if phase == self.phase:
            return
        self.phase = phase
        self.phase_since = self.loop.time()
        self._disarm()
        if phase != _RUNNING:
            self._deadline = self.loop.call_later(self.book.limits.read_timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.phase == _READING:
            self.book.timed_out += 1
            limit = f"{self.book.limits.read_timeout:g}"
            self._close_with(b"408 Request Timeout", f"a whole request must arrive within {limit} s")
        elif self.phase == _IDLE and not self.transport.is_closing():
            self.transport.close()

    def evict(self) -> None:
        """Close this connection to make room: 503 if it was mid-request, silently if it was idle."""
        self._disarm()
        if self.phase == _READING:
            text = "this client opened too many connections; its oldest unfinished one was closed"
            self._close_with(b"503 Service Unavailable", text)
        elif not self.transport.is_closing():
            self.transport.close()

    def _close_with(self, status: bytes, text: str) -> None:
        if self.transport.is_closing():
            return
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_plain_response(status, text))
        self.transport.close()


def guarded_protocol(limits: ConnectionLimits = DEFAULT_LIMITS) -> type[GuardedH11Protocol]:
    """A protocol class for ``uvicorn.Config(http=…)`` whose connections share one fresh book."""
    book = ConnectionBook(limits)
    return type("MeshH11Protocol", (GuardedH11Protocol,), {"book": book})

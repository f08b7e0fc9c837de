"""The stdio wire, checked: requests with impossible ids are answered here instead of dropped.

The SDK's stdio transport reads one JSON-RPC message a line. A request whose ``id`` is not a
string or an integer (``{}``, ``NaN``, ``1.5``, ``true``, ``null``) validates as a
*notification* there — the id is ignored, nothing runs and nothing is answered, so the client
waits for ever. :class:`CheckedLines` sits between the wire and the SDK: such a line is answered
``-32600 Invalid Request`` with ``id: null`` (the rule is :func:`~contextmesh.mcp.http_guard.invalid_request_id`,
the same as over HTTP) and never reaches the SDK; every other line passes through unchanged.

Both the SDK and this module write answers, so they share one :class:`Wire`, which writes and
flushes each line whole under a lock. :func:`claim` takes the process's fd 0 for the wire and
points it at the null device (tools and children read EOF, as with the SDK's own claim).
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import contextmanager
from typing import IO, Any

import anyio
import anyio.to_thread

from contextmesh.mcp.http_guard import invalid_request_id, rpc_error

__all__ = [
    "CheckedLines",
    "Wire",
    "claim_stdin",
    "quiet_stdout",
    "refusal_for_line",
    "restore_stdout",
    "serve_on_stdio",
]


def refusal_for_line(line: str) -> str | None:
    """Why one wire line is refused here (an impossible request id), or None to pass it on."""
    try:
        message: Any = json.loads(line)
    except (ValueError, RecursionError):
        return None  # not JSON: the SDK's to judge
    return invalid_request_id(message)


class Wire:
    """The protocol's output: each ``write`` lands whole and flushed, whoever calls it."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def _write(self, text: str) -> None:
        with self._lock:
            self._stream.write(text)
            self._stream.flush()

    async def write(self, text: str) -> None:
        await anyio.to_thread.run_sync(self._write, text)

    async def flush(self) -> None:
        """Every write is flushed already (the SDK calls this after each line)."""


class CheckedLines:
    """The wire's input lines, minus the requests answered here (see the module docstring)."""

    def __init__(self, stream: IO[str], wire: Wire) -> None:
        self._stream = stream
        self._wire = wire
        self.refused = 0

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while line := await anyio.to_thread.run_sync(self._stream.readline, abandon_on_cancel=True):
            refusal = refusal_for_line(line)
            if refusal is None:
                yield line
                continue
            self.refused += 1
            await self._wire.write(rpc_error(refusal).decode("utf-8") + "\n")


@contextmanager
def claim_stdin() -> Any:
    """The wire's input as a text stream; meanwhile fd 0 reads the null device. Restored after."""
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    stream = io.TextIOWrapper(io.FileIO(private, "r", closefd=False), encoding="utf-8", errors="replace")
    try:
        yield stream
    finally:
        os.dup2(private, 0)
        # ``private`` stays open: a reader thread blocked in read() on it must never see it recycled.


# -- the process's own stdout -----------------------------------------------------------------------


def quiet_stdout() -> int:
    """Point fd 1 at stderr while the session loads; return a duplicate of the real stdout (the wire)."""
    sys.stdout.flush()
    wire = os.dup(1)
    os.dup2(2, 1)
    return wire


def restore_stdout(wire: int) -> None:
    """Undo :func:`quiet_stdout` when nothing will be served (a session that cannot start)."""
    os.dup2(wire, 1)
    os.close(wire)


def serve_on_stdio(serve: Callable[[IO[str], Wire], Awaitable[None]], wire: int) -> None:
    """Run ``serve(stdin, wire)`` on fd 0's private duplicate and the real stdout ``wire``."""
    # fd 1 keeps pointing at stderr while we serve, so nothing a tool prints can reach the wire;
    # the protocol goes to ``wire`` (the real stdout) and comes from fd 0's private duplicate.
    sys.stdout.flush()  # whatever loading printed goes to stderr, where fd 1 still points
    out = io.TextIOWrapper(io.FileIO(wire, "w", closefd=False), encoding="utf-8")
    try:
        with claim_stdin() as stdin:
            anyio.run(serve, stdin, Wire(out))
    finally:
        sys.stdout.flush()
        os.dup2(wire, 1)
        os.close(wire)

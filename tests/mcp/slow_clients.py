"""A slow-HTTP attacker for the MCP tests: raw sockets that send part of a request and stall.

:class:`SlowClients` keeps ``count`` such connections open against a server for as long as it
runs: whenever the server cuts one off it notes the status line it was sent (408, 503 or none)
and opens a replacement, so the pressure never lets up while the honest client works.
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
import time
from collections import Counter

HEADERS_CUT = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: app"
BODY_CUT = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
    b"Accept: application/json\r\nContent-Length: 400\r\n\r\n"
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "mesh_ask", '
)
PARTS = (HEADERS_CUT, BODY_CUT)


def status_of(reply: bytes) -> str:
    """'408', '503', … from the first line of what the server sent; 'closed' for nothing."""
    if not reply:
        return "closed"
    first = reply.split(b"\r\n", 1)[0].split(b" ")
    return first[1].decode("ascii", "replace") if len(first) > 1 else "garbled"


def response(sock: socket.socket) -> tuple[int, bytes]:
    """One whole HTTP response read off ``sock`` (status, body); the socket stays usable."""
    sock.settimeout(30)
    reply = http.client.HTTPResponse(sock)
    reply.begin()
    return reply.status, reply.read()


class SlowClients:
    """``count`` connections, each a partial request (headers cut, or body cut) that never finishes."""

    def __init__(self, port: int, count: int, parts: tuple[bytes, ...] = PARTS, *, replace_after: float = 0.1) -> None:
        self.port = port
        self.count = count
        self.parts = parts
        self.replace_after = replace_after  # a cut-off connection is replaced this long after it was cut
        self.opened = 0
        self.cut_off: Counter[str] = Counter()
        self.cut_at: list[float] = []
        self._sockets: dict[socket.socket, float] = {}
        self._replies: dict[socket.socket, bytes] = {}
        self._due: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        sock.sendall(self.parts[self.opened % len(self.parts)].replace(b"{port}", str(self.port).encode()))
        sock.setblocking(False)
        self._sockets[sock] = time.monotonic()
        self.opened += 1

    def _reap(self, sock: socket.socket) -> None:
        try:
            while chunk := sock.recv(65536):
                self._replies[sock] = self._replies.get(sock, b"") + chunk
        except BlockingIOError:
            return  # part of a reply, the rest (or the close) is on its way
        except OSError:
            pass  # reset by the server: cut off all the same
        self.cut_off[status_of(self._replies.pop(sock, b""))] += 1
        self.cut_at.append(time.monotonic() - self._sockets.pop(sock))
        sock.close()
        self._due.append(time.monotonic() + self.replace_after)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            while len(self._sockets) < self.count and self._due and self._due[0] <= now:
                self._due.pop(0)
                self._open()
            readable, _, _ = select.select(list(self._sockets), [], [], 0.02)
            for sock in readable:
                self._reap(sock)

    def __enter__(self) -> SlowClients:
        while len(self._sockets) < self.count:
            self._open()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for sock in self._sockets:
            sock.close()

    @property
    def open_now(self) -> int:
        return len(self._sockets)

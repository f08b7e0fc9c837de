"""The HTTP listener of ``contextmesh-mcp``: the bound socket, uvicorn under our own protocol, the lines it says.

:mod:`contextmesh.mcp.server` builds the ASGI app (it alone imports the MCP SDK) and hands it here
as a function of the bound port; this module binds the address the exposure rule allows
(:mod:`contextmesh.mcp.exposure`), runs uvicorn with the per-client limits of
:mod:`contextmesh.mcp.connections`, and says on stderr where it listens.
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Callable

import uvicorn
from starlette.types import ASGIApp

from contextmesh.mcp.command import PROG
from contextmesh.mcp.connections import ConnectionLimits, guarded_protocol
from contextmesh.mcp.exposure import ExposureError, check_exposure, load_token

__all__ = ["BindError", "bind", "http_listener", "line", "say", "serve_http"]


class BindError(ExposureError):
    """The HTTP address could not be bound (in use, not this machine's, not permitted)."""


def line(text: str) -> None:
    """One line on stderr (stdout carries protocol only)."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def say(message: str) -> None:
    """One line on stderr, prefixed with the command's name."""
    line(f"{PROG}: {message}")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or a :class:`BindError` naming the address and the cause."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP said outright: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it every small JSON response waits ~40 ms on Nagle and delayed ACKs.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise BindError(
            "--host/--port", f"{host} port {port}: {exc.strerror or exc}", "an address and free port of this machine"
        ) from None
    sock.set_inheritable(True)
    return sock


def http_listener(args: argparse.Namespace) -> tuple[socket.socket, str | None]:
    """The bound socket and the bearer token (if any), once the exposure rule allows the address."""
    token = load_token(args.token_file)
    args.remote = check_exposure(args.host, allow_remote=args.allow_remote, token=token)
    return bind(args.host, args.port), token


def serve_http(
    app_for: Callable[[int], ASGIApp], sock: socket.socket, args: argparse.Namespace, token: str | None
) -> None:
    """Serve ``app_for(bound port)`` on ``sock`` until stopped."""
    host, bound = args.host, sock.getsockname()[1]
    config = uvicorn.Config(
        app_for(bound),
        # Our protocol, not uvicorn's choice: a whole-request read deadline and a connection cap per
        # client, in place of limit_concurrency (which counted half-sent requests and 503'd everyone).
        http=guarded_protocol(ConnectionLimits(read_timeout=args.read_timeout)),
        ws="none",
        log_config=None,  # uvicorn's records go to our one-line handler
        log_level="warning",
        access_log=False,
        timeout_keep_alive=5,
        lifespan="on",
    )
    shown = f"[{host}]" if ":" in host else host
    guard = "bearer token required" if token is not None else "no token (loopback)"
    say(f"listening on http://{shown}:{bound}/mcp (POST only, one JSON body per request, stateless, {guard})")
    if args.remote:
        say(f"warning: {host} is beyond loopback; whoever can reach it and holds the token can call every tool")
    uvicorn.Server(config).run(sockets=[sock])

"""``contextmesh-mcp``: the graph over MCP, on stdio or on an HTTP port (loopback by default). The only SDK importer.

    contextmesh-mcp --demo                                  # an ephemeral demo graph (read-only)
    contextmesh-mcp --demo --rounds 8 --save ./session      # write a demo session and exit
    contextmesh-mcp --session ./session [--checkpoint every-ask|on-exit|never]
    contextmesh-mcp --session ./session --transport http [--host 127.0.0.1] [--port 8765]
    contextmesh-mcp --session ./session --transport http --host 0.0.0.0 --allow-remote --token-file FILE

``--demo`` or ``--session DIR`` must be said. A session holding an execution plan starts only when
the launcher supplies the deployment's registry with every key the plan names
(``main(argv, registry=…)``; ``deployments/serve_mcp.py`` is this repository's launcher), and
fails before any transport starts otherwise: no request, flag or file can choose code.

HTTP is served at ``http://127.0.0.1:<port>/mcp``: POST only (anything else 405, so no event
stream), one JSON body per request, stateless, Host and Origin checked against an explicit
loopback allow-list, request bodies capped at :data:`MAX_BODY_BYTES`, each whole request due
within ``--read-timeout`` seconds and connections capped per client
(:mod:`contextmesh.mcp.connections`). Beyond loopback only with ``--allow-remote`` and a bearer
token on every request (:mod:`contextmesh.mcp.exposure`). Every tool and resource runs under the
served session's one lock, after a reload if another writer committed. Every refusal quotes a
client's value short (:mod:`contextmesh.mcp.quoting`). A banner on stderr says what is served and
whether it persists; nothing but protocol reaches stdout, and no log record prints a traceback.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import io
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from typing import IO, Any

import anyio
import anyio.to_thread
import uvicorn
from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    ToolAnnotations,
)
from pydantic import ValidationError
from starlette.types import ASGIApp

from contextmesh import __version__
from contextmesh.core.errors import ContextMeshError
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.mcp import log_lines
from contextmesh.mcp.command import DEFAULT_PORT, PROG, check, open_served, parser
from contextmesh.mcp.connections import ConnectionLimits, guarded_protocol
from contextmesh.mcp.exposure import ExposureError, check_exposure, load_token
from contextmesh.mcp.http_guard import PostOnly, guarded
from contextmesh.mcp.quoting import (
    argument_refusal,
    long_strings,
    quote,
    scrub,
    scrub_data,
    unknown_arguments,
    unknown_tool,
)
from contextmesh.mcp.read_tools import READ_TOOLS, MeshToolError, ToolSpec
from contextmesh.mcp.resources import RESOURCES, TEMPLATES, assumption_json, node_json
from contextmesh.mcp.served_session import ServedSession
from contextmesh.mcp.stdio_guard import CheckedLines, Wire, claim_stdin
from contextmesh.mcp.write_dispatch import Dispatcher
from contextmesh.mcp.write_tools import WRITE_TOOLS

__all__ = [
    "DEFAULT_PORT",
    "MAX_BODY_BYTES",
    "PROG",
    "MeshServer",
    "PostOnly",
    "build_server",
    "http_app",
    "main",
    "open_served",
]

_log = logging.getLogger("contextmesh.mcp")
SERVER_NAME = "contextmesh"
MAX_BODY_BYTES = 1024 * 1024
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
INSTRUCTIONS = (
    "ContextMesh: a typed context graph that keeps why things hold. Ask it questions (mesh_ask) and read "
    "nodes, health, assumption lineage and blast radius; answer as of a date; reconstruct a decision. "
    "Belief changes only through evidence: submit an observation (mesh_submit_evidence), let the "
    "deployment's registered auditors interpret it (mesh_recheck), repair fallen work onto a registered "
    "key (mesh_repair) and run only what fell (mesh_resume). contextmesh://schema is the ontology."
)

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_ANNOTATIONS: dict[str, ToolAnnotations] = {
    # An ask moves walk telemetry (and may commit it): read-only for the world, not idempotent.
    "mesh_ask": ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    ),
    "mesh_submit_evidence": ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    ),
    # A disproof rejects an assumption for good (a rejected assumption is never revived).
    "mesh_recheck": ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
    ),
    "mesh_repair": ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    ),
    "mesh_resume": ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
    ),
}


# -- the server ---------------------------------------------------------------------------------------


def _refused(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _run_tool(served: ServedSession, spec: ToolSpec, arguments: dict[str, Any]) -> Any:
    """One tool call on a worker thread: under the served lock, refusals as tool errors."""

    def call(current: ServedSession) -> Any:
        target: Any = current.session if spec.read_only else current
        return spec.fn(target, **arguments)

    try:
        return served.call(call)
    except ContextMeshError as exc:
        raise ToolError(str(exc)) from None


def _read_resource(served: ServedSession, fn: Callable[..., str], *args: str) -> str:
    try:
        return served.call(lambda current: fn(current, *args))
    except MeshToolError as exc:
        raise ResourceNotFoundError(str(exc)) from None
    except ContextMeshError as exc:
        raise ResourceError(str(exc)) from None


class MeshServer(MCPServer[Any]):
    """The MCP server over one served session; ``tools/list`` carries ``_meta.notAnswering``."""

    def __init__(self, served: ServedSession) -> None:
        self.served = served
        self._arguments: dict[str, frozenset[str]] = {}
        super().__init__(
            SERVER_NAME,
            version=__version__,
            instructions=INSTRUCTIONS,
            log_level="WARNING",
            middleware=[self._bounded_refusals, self._checked_arguments],
        )
        for spec in (*READ_TOOLS, *WRITE_TOOLS):
            self._add_spec(spec)
        self._add_resources()

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        not_answering = await anyio.to_thread.run_sync(self.served.not_answering)
        return ListToolsResult(tools=await self.list_tools(), _meta={"notAnswering": not_answering})

    async def _bounded_refusals(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        # Outermost: whatever refused this request — the SDK, a tool, a lookup — its message quotes
        # the request's own long strings short and stays one bounded line (10⁷ characters in, ~100 out).
        try:
            result = await call_next(ctx)
        except MCPError as exc:
            values = long_strings(ctx.method, ctx.params)
            raise MCPError(exc.code, scrub(exc.message, values), scrub_data(exc.data, values)) from None
        except ValidationError:
            raise  # malformed params: the SDK's own INVALID_PARAMS, which quotes nothing
        except Exception as exc:  # the SDK would log a traceback and send str(exc) whole
            _log.warning("%s failed: %s", ctx.method, type(exc).__name__)
            raise MCPError(INTERNAL_ERROR, f"Internal error: {ctx.method} failed ({type(exc).__name__})") from None
        if isinstance(result, dict) and result.get("isError") is True and isinstance(result.get("content"), list):
            values = long_strings(ctx.method, ctx.params)
            for item in result["content"]:
                if isinstance(item, dict) and isinstance(item.get("text"), str):
                    item["text"] = scrub(item["text"], values)
        return result

    async def _checked_arguments(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        # The SDK ignores unknown arguments; a tool here refuses them, so a client that sends
        # {"verdict": "reject"} learns it was not heard rather than believing it was. Arguments that
        # fail the schema get one line naming the argument, its value (short) and the rule.
        params: Any = ctx.params
        if ctx.method == "prompts/get" and isinstance(params, dict):
            raise MCPError(INVALID_PARAMS, f"no prompt {quote(params.get('name'))}: this server publishes no prompts")
        if ctx.method != "tools/call" or not isinstance(params, dict):
            return await call_next(ctx)
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or name not in self._arguments:
            return _refused(unknown_tool(name, self._arguments))
        allowed = self._arguments[name]
        if isinstance(arguments, dict):
            unknown = sorted(set(arguments) - allowed)
            if unknown:
                return _refused(unknown_arguments(name, unknown, allowed))
            tool = self._tool_manager.get_tool(name)
            try:
                if tool is not None:
                    tool.fn_metadata.validate_arguments(arguments)
            except ValidationError as exc:
                return _refused(argument_refusal(name, exc))
        return await call_next(ctx)

    def _add_spec(self, spec: ToolSpec) -> None:
        parameters = spec.parameters()
        returns = inspect.signature(spec.fn, eval_str=True).return_annotation
        served = self.served

        async def tool(**arguments: Any) -> Any:
            return await anyio.to_thread.run_sync(functools.partial(_run_tool, served, spec, arguments))

        tool.__name__ = spec.name
        tool.__doc__ = spec.description
        tool.__signature__ = inspect.Signature(parameters, return_annotation=returns)  # type: ignore[attr-defined]
        tool.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": returns}
        annotations = READ_ONLY if spec.read_only else None
        self.add_tool(
            tool,
            name=spec.name,
            title=spec.title,
            description=spec.description,
            annotations=_ANNOTATIONS.get(spec.name, annotations),
            structured_output=True,
        )
        self._arguments[spec.name] = frozenset(p.name for p in parameters)

    def _add_resources(self) -> None:
        served = self.served
        for spec, fn in RESOURCES:

            def reader(fn: Callable[..., str] = fn) -> Callable[[], Any]:
                async def read() -> str:
                    return await anyio.to_thread.run_sync(_read_resource, served, fn)

                return read

            self.resource(spec.uri, name=spec.name, description=spec.description, mime_type=spec.mime_type)(reader())
        node_spec, assumption_spec = (spec for spec, _ in TEMPLATES)

        async def node(node_id: str) -> str:
            return await anyio.to_thread.run_sync(_read_resource, served, node_json, node_id)

        async def assumption(assumption_id: str) -> str:
            return await anyio.to_thread.run_sync(_read_resource, served, assumption_json, assumption_id)

        for spec, fn in ((node_spec, node), (assumption_spec, assumption)):
            self.resource(spec.uri, name=spec.name, description=spec.description, mime_type=spec.mime_type)(fn)

    async def serve_stdio(self, stdin: IO[str], wire: Wire) -> None:
        """stdio through :mod:`contextmesh.mcp.stdio_guard`: impossible request ids are answered, not dropped."""
        lowlevel = self._lowlevel_server
        lines: Any = CheckedLines(stdin, wire)
        output: Any = wire
        async with stdio_server(stdin=lines, stdout=output) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def build_server(served: ServedSession) -> MeshServer:
    """The MCP server over ``served`` (in-process; tests connect to it with ``Client(server)``)."""
    return MeshServer(served)


# -- HTTP ------------------------------------------------------------------------------------------------


def transport_security(host: str, port: int, extra_hosts: Sequence[str] = ()) -> TransportSecuritySettings:
    """An explicit allow-list: loopback names at this port, plus the bound address if it is a specific one."""
    names = list(_LOOPBACK)
    if host not in {"127.0.0.1", "localhost", "::1", "0.0.0.0", "::", ""}:  # noqa: S104 - compared, not bound
        names.append(f"[{host}]" if ":" in host else host)
    hosts = [f"{name}:{port}" for name in names] + list(extra_hosts)
    origins = [f"http://{name}:{port}" for name in names] + [f"http://{h}" for h in extra_hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def http_app(
    server: MeshServer, host: str, port: int, extra_hosts: Sequence[str] = (), *, token: str | None = None
) -> ASGIApp:
    """The hardened ASGI app: stateless JSON at /mcp, POST only, Host/Origin checked, bodies capped,
    JSON-RPC ids checked and, with a token, a bearer token on every request."""
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        json_response=True,
        stateless_http=True,
        transport_security=transport_security(host, port, extra_hosts),
        max_request_body_size=MAX_BODY_BYTES,
    )
    return guarded(app, max_body=MAX_BODY_BYTES, token=token)


class BindError(ExposureError):
    """The HTTP address could not be bound (in use, not this machine's, not permitted)."""


def _bind(host: str, port: int) -> socket.socket:
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


def _serve_http(server: MeshServer, sock: socket.socket, args: argparse.Namespace, token: str | None) -> None:
    host, bound = args.host, sock.getsockname()[1]
    config = uvicorn.Config(
        http_app(server, host, bound, args.allow_host, token=token),
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
    _say(f"listening on http://{shown}:{bound}/mcp (POST only, one JSON body per request, stateless, {guard})")
    if args.remote:
        _say(f"warning: {host} is beyond loopback; whoever can reach it and holds the token can call every tool")
    uvicorn.Server(config).run(sockets=[sock])


# -- stdio -----------------------------------------------------------------------------------------------


def _quiet_stdout() -> int:
    """Point fd 1 at stderr while the session loads; return a duplicate of the real stdout (the wire)."""
    sys.stdout.flush()
    wire = os.dup(1)
    os.dup2(2, 1)
    return wire


def _restore_stdout(wire: int) -> None:
    """Undo :func:`_quiet_stdout` when nothing will be served (a session that cannot start)."""
    os.dup2(wire, 1)
    os.close(wire)


def _serve_stdio(server: MeshServer, wire: int) -> None:
    # fd 1 keeps pointing at stderr while we serve, so nothing a tool prints can reach the wire;
    # the protocol goes to ``wire`` (the real stdout) and comes from fd 0's private duplicate.
    sys.stdout.flush()  # whatever loading printed goes to stderr, where fd 1 still points
    out = io.TextIOWrapper(io.FileIO(wire, "w", closefd=False), encoding="utf-8")
    try:
        with claim_stdin() as stdin:
            anyio.run(server.serve_stdio, stdin, Wire(out))
    finally:
        sys.stdout.flush()
        os.dup2(wire, 1)
        os.close(wire)


# -- the command -----------------------------------------------------------------------------------------


def _line(text: str) -> None:
    """One line on stderr (stdout carries protocol only)."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _say(message: str) -> None:
    _line(f"{PROG}: {message}")


def _http_listener(args: argparse.Namespace) -> tuple[socket.socket, str | None]:
    """The bound socket and the bearer token (if any), once the exposure rule allows the address."""
    token = load_token(args.token_file)
    args.remote = check_exposure(args.host, allow_remote=args.allow_remote, token=token)
    return _bind(args.host, args.port), token


def main(
    argv: Sequence[str] | None = None,
    *,
    registry: TaskRegistry | None = None,
    dispatcher: Dispatcher | None = None,
) -> int:
    """``contextmesh-mcp``. Returns the exit code: 0 after a clean stop, 2 for usage or a session that cannot load."""
    arguments = parser()
    try:
        args = arguments.parse_args(argv)
        check(arguments, args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if args.save is not None:
        from contextmesh.demo.saved import save_demo_session  # noqa: PLC0415

        try:
            saved = save_demo_session(args.save, rounds=8 if args.rounds is None else args.rounds, feed=args.feed)
        except ContextMeshError as exc:
            _say(str(exc))
            return 2
        _say(f"wrote {args.save} (generation {saved.generation}, plan round 1 executed)")
        return 0
    sock, token = None, None
    if args.transport == "http":
        try:
            sock, token = _http_listener(args)
        except ContextMeshError as exc:
            _say(str(exc))
            return 2
    wire = _quiet_stdout() if args.transport == "stdio" else None
    try:
        served = open_served(args, registry=registry, dispatcher=dispatcher)
    except ContextMeshError as exc:
        if wire is not None:
            _restore_stdout(wire)
        if sock is not None:
            sock.close()
        _say(str(exc))
        return 2
    log_lines.install(PROG)
    server = build_server(served)
    _line(served.banner())
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    interrupted = False
    try:
        if wire is not None:
            _serve_stdio(server, wire)
        else:
            assert sock is not None
            _serve_http(server, sock, args, token)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, previous)
        closing = served.close()
        if closing:
            _line(closing)
    if interrupted and wire is not None:
        # Stopped by a signal while stdin is still open: the SDK's stdin reader is a worker thread
        # blocked in read(), which interpreter shutdown would wait on for ever. Everything durable
        # is committed (above), so leave now.
        sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

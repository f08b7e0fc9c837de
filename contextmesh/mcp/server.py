"""``contextmesh-mcp``: the graph over MCP, on stdio or on an HTTP port (loopback by default). The only SDK importer.

    contextmesh-mcp --demo                                  # an ephemeral demo graph (read-only)
    contextmesh-mcp --demo --rounds 8 --save ./session      # write a demo session and exit
    contextmesh-mcp --session ./session [--checkpoint every-ask|on-exit|never]
    contextmesh-mcp --project ./my-project [--session DIR] [--dispatch auto|never] [--dispatch-wait S]
    contextmesh-mcp --session ./session --transport http [--host 127.0.0.1] [--port 8765]
    contextmesh-mcp --session ./session --transport http --host 0.0.0.0 --allow-remote --token-file FILE

``--demo``, ``--session DIR`` or ``--project DIR`` must be said. A session holding an execution plan starts only
with a registry holding every key the plan names: a project's own (``--project``: the code its ``contextmesh.toml``
names, written by its operator), or one a launcher supplies (``main(argv, registry=…)``;
``deployments/serve_mcp.py`` is the bundled demo's launcher), and fails before any transport starts otherwise: no
request, flag or file can choose code. With ``--project``, ``mesh_recheck`` and ``mesh_resume`` go to the
deployments ``contextmesh serve`` serves the session from, and when none does the server says on stderr that they
run in-process.

HTTP is served at ``http://127.0.0.1:<port>/mcp``: POST only (anything else 405, so no event stream), one JSON body
per request, stateless, Host and Origin checked against an explicit loopback allow-list, request bodies capped at
:data:`MAX_BODY_BYTES`, each whole request due within ``--read-timeout`` seconds and connections capped per client
(:mod:`contextmesh.mcp.connections`). Beyond loopback only with ``--allow-remote`` and a bearer token on every
request (:mod:`contextmesh.mcp.exposure`). Every tool and resource runs under the served session's one lock, after a
reload if another writer committed. Over stdio and in-process a client may subscribe to resources; each commit that
changes one is announced (:mod:`contextmesh.mcp.resource_watch`). Every refusal quotes a client's value short
(:mod:`contextmesh.mcp.quoting`). A banner on stderr says what is served and whether it persists; nothing but
protocol reaches stdout, and no log record prints a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import IO, Any

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import ResourceUpdated
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolResult,
    EmptyResult,
    ListToolsResult,
    PaginatedRequestParams,
    SubscribeRequestParams,
    TextContent,
    ToolAnnotations,
    UnsubscribeRequestParams,
)
from pydantic import ValidationError
from starlette.types import ASGIApp

from contextmesh import __version__
from contextmesh.core.errors import ContextMeshError
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.mcp import log_lines
from contextmesh.mcp.command import DEFAULT_PORT, PROG, check, open_served, parser
from contextmesh.mcp.handles import HANDLE_TOOLS
from contextmesh.mcp.http_guard import PostOnly, guarded
from contextmesh.mcp.http_listener import http_listener, line, say, serve_http
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
from contextmesh.mcp.resource_watch import ResourceWatch, Sink, SubscriptionError
from contextmesh.mcp.resources import RESOURCES, TEMPLATES, assumption_json, node_json
from contextmesh.mcp.served_session import ServedSession
from contextmesh.mcp.stdio_guard import CheckedLines, Wire, quiet_stdout, restore_stdout, serve_on_stdio
from contextmesh.mcp.tool_hints import INSTRUCTIONS, READ_ONLY_HINTS, TOOL_HINTS
from contextmesh.mcp.write_dispatch import Dispatcher
from contextmesh.mcp.write_tools import WRITE_TOOLS, with_registered_keys

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
_SUBSCRIBED = "resources/subscribe"  # a watch's key for its connection's 2025-era subscriptions
READ_ONLY = ToolAnnotations(**READ_ONLY_HINTS)
_ANNOTATIONS = {name: ToolAnnotations(**hints) for name, hints in TOOL_HINTS.items()}


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
    """The MCP server over one served session; ``tools/list`` names not-answering tools (``_meta`` and descriptions)."""

    def __init__(self, served: ServedSession, *, subscriptions: bool = True) -> None:
        self.served = served
        self._arguments: dict[str, frozenset[str]] = {}
        self._watches: set[ResourceWatch] = set()
        self._published: dict[str, int] = {}  # uri -> the generation last published on the listen bus
        super().__init__(
            SERVER_NAME,
            version=__version__,
            instructions=INSTRUCTIONS,
            log_level="WARNING",
            lifespan=self._watching,
            subscriptions=None if subscriptions else False,
            middleware=[self._bounded_refusals, self._checked_arguments, self._poked_after_calls],
        )
        for spec in (*READ_TOOLS, *WRITE_TOOLS, *HANDLE_TOOLS):
            self._add_spec(spec)
        repair = self._tool_manager.get_tool("mesh_repair")
        if repair is not None:  # the keys this launcher's registry serves, as enums (fixed for the process)
            repair.parameters = with_registered_keys(repair.parameters, served.session.registry)
        self._add_resources()
        if subscriptions:  # a stream to notify on: stdio or in-process (stateless HTTP has none)
            lowlevel = self._lowlevel_server
            lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, self._subscribe)
            lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self._unsubscribe)

    # -- resource subscriptions (contextmesh.mcp.resource_watch) ------------------------------------

    @contextlib.asynccontextmanager
    async def _watching(self, _: MCPServer[Any]) -> AsyncIterator[ResourceWatch]:
        """One connection's lifespan: its watch, and the loop that announces what commits changed."""
        watch = ResourceWatch(self.served, self._rendered)
        self._watches.add(watch)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(watch.run)
                yield watch
                tasks.cancel_scope.cancel()
        finally:
            self._watches.discard(watch)

    async def _rendered(self, uri: str) -> str:
        """A resource exactly as ``resources/read`` gives it (raises for one that does not exist)."""
        contents = await self.read_resource(uri)
        if not isinstance(contents, Iterable):
            raise ResourceError(f"{uri} asked for input instead of answering")
        parts = [c.content for c in contents if isinstance(c, ReadResourceContents)]
        return "\n".join(p if isinstance(p, str) else p.hex() for p in parts)

    async def _watch_of(self, ctx: ServerRequestContext[Any, Any], key: Any, uris: Sequence[str], sink: Sink) -> None:
        watch = ctx.lifespan_context
        if not isinstance(watch, ResourceWatch):
            raise MCPError(INVALID_REQUEST, "resource subscriptions need a stream; this transport has none")
        for uri in uris:
            try:
                await watch.subscribe(key, uri, sink)
            except (ResourceError, MCPError, SubscriptionError) as exc:
                raise MCPError(INVALID_PARAMS, f"cannot subscribe to {quote(uri)}: {exc}") from None

    async def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        # Before 2026-07-28: notices go on the connection's own channel until it unsubscribes or
        # closes. Each such connection has its own lifespan, so its own watch: one key serves it.
        session = ctx.session

        async def notify(uri: str, generation: int) -> None:
            await session.send_resource_updated(uri)  # no related request: the connection's channel

        await self._watch_of(ctx, _SUBSCRIBED, [str(params.uri)], notify)
        return EmptyResult()

    async def _unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> EmptyResult:
        if isinstance(ctx.lifespan_context, ResourceWatch):
            ctx.lifespan_context.unsubscribe(_SUBSCRIBED, str(params.uri))
        return EmptyResult()

    async def _publish(self, uri: str, generation: int) -> None:
        # 2026-07-28: the SDK's bus fans a notice out to every listen stream naming the URI, so it is
        # published once per generation however many connections' watches saw the change.
        if self._published.get(uri) != generation:
            self._published[uri] = generation
            await self._subscriptions.publish(ResourceUpdated(uri=uri))

    async def _poked_after_calls(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        # A listen stream's resources are watched while it is open; a tool call may have committed,
        # so every watch looks at once instead of at its next poll.
        params: Any = ctx.params
        if ctx.method == "subscriptions/listen" and isinstance(params, dict):
            wanted = (params.get("notifications") or {}).get("resourceSubscriptions") or []
            wanted = wanted if isinstance(wanted, list) else []  # malformed: the SDK's validation refuses it
            key = ("listen", ctx.request_id)
            try:
                await self._watch_of(ctx, key, [str(u) for u in wanted], self._publish)
                return await call_next(ctx)
            finally:
                if isinstance(ctx.lifespan_context, ResourceWatch):
                    ctx.lifespan_context.unsubscribe(key)
        try:
            return await call_next(ctx)
        finally:
            if ctx.method == "tools/call":
                for watch in list(self._watches):
                    watch.poke()

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        not_answering = await anyio.to_thread.run_sync(self.served.not_answering)
        tools = await self.list_tools()
        # Said in the description as well: some clients (the Inspector among them) drop ``_meta``.
        for tool in tools:
            if tool.name in not_answering:
                tool.description = f"{self.served.not_answering_note()} {tool.description or ''}".rstrip()
        return ListToolsResult(tools=tools, _meta={"notAnswering": not_answering})

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


def build_server(served: ServedSession, *, subscriptions: bool = True) -> MeshServer:
    """The MCP server over ``served`` (in-process; tests connect to it with ``Client(server)``).

    ``subscriptions=False`` for stateless HTTP: with no stream to notify on, none is advertised."""
    return MeshServer(served, subscriptions=subscriptions)


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


# -- the command -----------------------------------------------------------------------------------------


def _app_at(server: MeshServer, args: Any, token: str | None, port: int) -> ASGIApp:
    return http_app(server, args.host, port, args.allow_host, token=token)


def main(
    argv: Sequence[str] | None = None,
    *,
    registry: TaskRegistry | None = None,
    dispatcher: Dispatcher | None = None,
    announce: str | None = None,
) -> int:
    """``contextmesh-mcp``. Returns the exit code: 0 after a clean stop, 2 for usage or a session that cannot load."""
    arguments = parser()
    try:
        args = arguments.parse_args(argv)
        check(arguments, args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if args.save is not None:
        from contextmesh.mcp.command import bundled_extension, given_settings  # noqa: PLC0415

        try:
            save = bundled_extension("save_example")
            saved = save(args.save, 8 if args.rounds is None else args.rounds, given_settings(args))
        except ContextMeshError as exc:
            say(str(exc))
            return 2
        say(f"wrote {args.save} (generation {saved.generation}, plan round 1 executed)")
        return 0
    sock, token = None, None
    if args.transport == "http":
        try:
            sock, token = http_listener(args)
        except ContextMeshError as exc:
            say(str(exc))
            return 2
    wire = quiet_stdout() if args.transport == "stdio" else None
    try:
        served = open_served(args, registry=registry, dispatcher=dispatcher, say=say)
    except ContextMeshError as exc:
        if wire is not None:
            restore_stdout(wire)
        if sock is not None:
            sock.close()
        say(str(exc))
        return 2
    log_lines.install(PROG)
    server = build_server(served, subscriptions=args.transport == "stdio")
    line(served.banner())
    if announce:
        say(announce)  # a launcher's word on where writes run, once the server is up
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    interrupted = False
    try:
        if wire is not None:
            serve_on_stdio(server.serve_stdio, wire)
        else:
            assert sock is not None
            serve_http(
                lambda bound: http_app(server, args.host, bound, args.allow_host, token=token), sock, args, token
            )
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, previous)
        closing = served.close()
        if closing:
            line(closing)
    if interrupted and wire is not None:
        # Stopped by a signal while stdin is still open: the SDK's stdin reader is a worker thread
        # blocked in read(), which interpreter shutdown would wait on for ever. Everything durable
        # is committed (above), so leave now.
        sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

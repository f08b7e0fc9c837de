"""The ASGI layers in front of the SDK's HTTP app: a bearer token, POST only, and well-formed JSON-RPC.

Outermost first (:func:`guarded`):

1. :class:`BearerAuth` — with a token configured, every request carries ``Authorization: Bearer
   <token>`` or gets 401 with a ``WWW-Authenticate`` challenge, before anything else is looked at.
2. :class:`PostOnly` — anything but POST on the MCP path is 405 (no event stream, no session DELETE).
3. :class:`JsonRpcGuard` — media types are case-insensitive (``APPLICATION/JSON; charset=utf-8``
   is JSON), and a request whose ``id`` is not a string or an integer (``{}``, ``NaN``, ``1.5``,
   ``true``, ``null``) is answered ``-32600 Invalid Request`` with ``id: null`` — the SDK would
   take it for a notification, answer 202 and run nothing.

None of these imports the MCP SDK; the responses are plain ASGI messages.
"""

from __future__ import annotations

import hmac
import json
import math
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contextmesh.core.canonical import sha256_hex, wire_text
from contextmesh.mcp.quoting import QUOTE_CHARS, quote

__all__ = ["BearerAuth", "JsonRpcGuard", "PostOnly", "guarded", "invalid_request_id"]

INVALID_REQUEST = -32600
_REALM = 'Bearer realm="contextmesh-mcp"'


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def rpc_error(message: str, code: int = INVALID_REQUEST) -> bytes:
    """A JSON-RPC error response for a request whose id cannot be known (``id: null``)."""
    document = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return wire_text(document).encode("utf-8")


def _json_headers() -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json")]


# -- 1. the bearer token ------------------------------------------------------------------------------


class BearerAuth:
    """401 unless the request carries ``Authorization: Bearer <token>`` (compared in constant time)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._digest = sha256_hex(token.encode("ascii"))

    def _verdict(self, scope: Scope) -> str | None:
        """None when the token is right; else why not (RFC 6750's error code, or "" for no credentials)."""
        values = [v for k, v in scope["headers"] if k == b"authorization"]
        if not values:
            return ""
        scheme, _, credentials = values[0].decode("latin-1").strip().partition(" ")
        if len(values) > 1 or scheme.lower() != "bearer" or not credentials.strip():
            return "invalid_request"
        given = sha256_hex(credentials.strip().encode("latin-1"))
        # Digests of equal length: compare_digest's time then says nothing about the token, not even its length.
        return None if hmac.compare_digest(given, self._digest) else "invalid_token"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        verdict = self._verdict(scope)
        if verdict is None:
            await self.app(scope, receive, send)
            return
        challenge = _REALM if not verdict else f'{_REALM}, error="{verdict}"'
        said = {
            "": "this server needs Authorization: Bearer <token> on every request",
            "invalid_request": "the Authorization header is not one 'Bearer <token>'",
            "invalid_token": "the bearer token is not this server's",
        }[verdict]
        headers = [*_json_headers(), (b"www-authenticate", challenge.encode("ascii"))]
        await _respond(send, 401, rpc_error(f"Unauthorized: {said}"), headers)


# -- 2. POST only -------------------------------------------------------------------------------------


class PostOnly:
    """405 for anything but POST on the MCP path: no standalone event stream (GET), no session DELETE."""

    def __init__(self, app: ASGIApp, path: str = "/mcp") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.path and scope["method"] != "POST":
            headers = [(b"allow", b"POST"), (b"content-type", b"text/plain")]
            await _respond(send, 405, b"Method Not Allowed", headers)
            return
        await self.app(scope, receive, send)


# -- 3. well-formed JSON-RPC ----------------------------------------------------------------------------


def _lower_media_type(value: bytes) -> bytes:
    media_type, semicolon, parameters = value.partition(b";")
    return media_type.strip().lower() + semicolon + parameters


def invalid_request_id(message: Any) -> str | None:
    """Why a parsed JSON-RPC request's ``id`` is refused, or None when it is fine (or absent).

    A request (an object with a ``method``) that carries ``id`` must carry a string or an integer:
    JSON-RPC 2.0 discourages fractions and MCP forbids ``null``; a boolean is not a number.
    """
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    ident = message["id"]
    if isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool)):
        return None
    try:
        shown = wire_text(ident, compact=False)  # as the client wrote it: NaN, 1.5, true, null, {}
    except (ValueError, RecursionError):
        shown = quote(ident)
    if len(shown) > QUOTE_CHARS:
        shown = f"{shown[:QUOTE_CHARS]}… ({len(shown)} characters)"
    kinds = {dict: "an object", list: "an array", bool: "a boolean", type(None): "null"}
    kind = kinds.get(type(ident), "not an integer")
    if isinstance(ident, float) and not math.isfinite(ident):
        kind = "not a finite number"
    return f"Invalid Request: id {shown} is {kind}; a request id is a string or an integer"


class JsonRpcGuard:
    """Media types compared without case, and requests with impossible ids answered instead of dropped."""

    def __init__(self, app: ASGIApp, max_body: int, path: str = "/mcp") -> None:
        self.app = app
        self.max_body = max_body
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers = [(k, _lower_media_type(v)) if k == b"content-type" else (k, v) for k, v in scope["headers"]]
        scope = {**scope, "headers": headers}
        declared = next((v for k, v in headers if k == b"content-length"), None)
        media_types = next((v for k, v in headers if k == b"content-type"), b"").partition(b";")[0].split(b",")
        is_json = any(part.strip() == b"application/json" for part in media_types)  # as the SDK reads it
        if not is_json or (declared is not None and not declared.isdigit()):
            await self.app(scope, receive, send)  # the SDK answers these (400/415)
            return
        if declared is not None and int(declared) > self.max_body:
            await self.app(scope, receive, send)  # the SDK's 413, before a byte of the body is read
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away (or was cut off) before its body arrived
            body += message.get("body", b"")
            if len(body) > self.max_body:
                await _respond(send, 413, b"Request body too large", [(b"content-type", b"text/plain")])
                return
            if not message.get("more_body", False):
                break
        refusal = self._refusal(bytes(body))
        if refusal is not None:
            await _respond(send, 400, rpc_error(refusal), _json_headers())
            return
        await self.app(scope, _replay(bytes(body), receive), send)

    @staticmethod
    def _refusal(body: bytes) -> str | None:
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return None  # unparseable: the SDK's -32700 says so
        return invalid_request_id(parsed)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def guarded(app: ASGIApp, *, max_body: int, token: str | None, path: str = "/mcp") -> ASGIApp:
    """``app`` behind the JSON-RPC guard, POST only and, with a token, the bearer check outermost."""
    inner: ASGIApp = PostOnly(JsonRpcGuard(app, max_body, path), path)
    return inner if token is None else BearerAuth(inner, token)

"""Who may reach the HTTP server: loopback by default; beyond it only by opt-in and with a bearer token.

The rule (:func:`check_exposure`, applied before any socket is bound):

1. ``--host`` is an IP address or ``localhost``; a host name that could resolve anywhere is
   refused rather than guessed about.
2. A loopback address (``127.0.0.0/8``, ``::1``, ``localhost``) needs nothing more. A token may
   still be configured there, and is then required on every request all the same.
3. Any other address — ``0.0.0.0`` and ``::`` included — needs ``--allow-remote`` *and* a bearer
   token, read from ``--token-file FILE`` or else from ``$CONTEXTMESH_MCP_TOKEN``. Without both
   the server does not start, and says so in one line.

A token is 32 to 4096 printable ASCII characters without spaces (an RFC 6750 ``b64token`` fits);
the file may end in one line break. The comparison is constant-time (``hmac.compare_digest``
over SHA-256 digests, so not even the length leaks): see :class:`contextmesh.mcp.http_guard.BearerAuth`.
"""

from __future__ import annotations

import ipaddress
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from contextmesh.core.errors import InputError
from contextmesh.mcp.quoting import quote

__all__ = [
    "TOKEN_ENV",
    "TOKEN_MAX",
    "TOKEN_MIN",
    "ExposureError",
    "check_exposure",
    "is_loopback",
    "load_token",
]

TOKEN_ENV = "CONTEXTMESH_MCP_TOKEN"  # noqa: S105 - the variable's name, not a secret
TOKEN_MIN = 32
TOKEN_MAX = 4096


class ExposureError(InputError):
    """The server would be reachable in a way its flags do not allow; it does not start."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP literals; raises for anything that is not an address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise ExposureError(
            "--host", quote(host), "an IP address to bind (e.g. 127.0.0.1, ::1, 0.0.0.0) or localhost"
        ) from None


_RULE = f"a token is {TOKEN_MIN}..{TOKEN_MAX} printable ASCII characters, no spaces"


def _token_text(text: str, where: str) -> str:
    token = text[:-1] if text.endswith("\n") else text
    token = token[:-1] if token.endswith("\r") else token
    if not TOKEN_MIN <= len(token) <= TOKEN_MAX:
        raise ExposureError(where, f"a token of {len(token)} characters", _RULE)
    if not all("!" <= c <= "~" for c in token):
        raise ExposureError(where, "a token with spaces, control or non-ASCII characters", _RULE)
    return token


def load_token(token_file: Path | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The bearer token from ``token_file``, else from ``$CONTEXTMESH_MCP_TOKEN``; None when neither says one."""
    if token_file is not None:
        where = f"--token-file {token_file}"
        try:
            fd = os.open(token_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            raise ExposureError(where, exc.strerror or type(exc).__name__, "a readable regular file") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ExposureError(where, "not a regular file", "a readable regular file holding the token")
            raw = os.read(fd, TOKEN_MAX + 3)
        finally:
            os.close(fd)
        try:
            return _token_text(raw.decode("ascii"), where)
        except UnicodeDecodeError:
            raise ExposureError(
                where, "non-ASCII bytes", f"a token is {TOKEN_MIN}..{TOKEN_MAX} printable ASCII characters"
            ) from None
    text = environ.get(TOKEN_ENV)
    return None if text is None else _token_text(text, f"${TOKEN_ENV}")


def check_exposure(host: str, *, allow_remote: bool, token: str | None) -> bool:
    """Refuse a bind beyond loopback without ``--allow-remote`` and a token; True when it is beyond loopback."""
    if is_loopback(host):
        return False
    shown = host or "every interface"
    if not allow_remote:
        raise ExposureError(
            "--host",
            f"{shown} is beyond loopback",
            "binding it needs --allow-remote and a bearer token (--token-file FILE or $" + TOKEN_ENV + ")",
        )
    if token is None:
        raise ExposureError(
            "--allow-remote",
            f"no bearer token for {shown}",
            f"a non-loopback bind needs --token-file FILE or ${TOKEN_ENV}; every request must then carry it",
        )
    return True

"""How the command line fails: one line on stderr, and under ``--json`` one JSON document on stdout.

Exit status 2 is a usage error (the command line itself is wrong: an unknown option, a value that
breaks its option's rule, options that do not go together); 1 is a refused operation (the
arguments were well formed but the work was refused: a session that does not load, a task that
cannot be repaired, a Prefect API that does not answer). Under ``--json`` the failure is also
``{"error": {"type": …, "message": …, "path": …}}`` on stdout and nothing else; ``path`` is the
option, file or place in a file the error is about, or null.

A Prefect API that refuses a request (a 503 from a busy SQLite server after the client's retries)
or stops answering mid-command is told as that, naming the request, not as a bug.

No exception reaches the interpreter's traceback printer: an error that is not one of ours is
reported as an internal error in one line (``CONTEXTMESH_DEBUG=1`` re-raises it, for a developer).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO

from contextmesh.core.canonical import file_bytes
from contextmesh.core.errors import ContextMeshError

__all__ = [
    "USAGE",
    "Failure",
    "OutputError",
    "UsageError",
    "classify",
    "emit",
    "json_requested",
    "one_line",
    "write",
    "writing",
]

USAGE = 2
REFUSED = 1
_MESSAGE_LIMIT = 2000
_BREAKS = re.compile(r"\s*[\r\n]+\s*")


class UsageError(ContextMeshError):
    """The command line is wrong; ``path`` names the option or argument when there is one."""

    def __init__(self, message: str, *, prog: str = "contextmesh", path: str | None = None) -> None:
        super().__init__(message)
        self.prog = prog
        self.path = path


class OutputError(ContextMeshError):
    """A file a command writes could not be written (something in the way, no permission, a full disk)."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


@contextmanager
def writing(what: str) -> Iterator[None]:
    """Report an OS error inside the block as an :class:`OutputError` saying what was being written."""
    try:
        yield
    except OSError as exc:
        where = "" if exc.filename is None else f"{exc.filename}: "
        raise OutputError(
            f"cannot write {what}: {where}{exc.strerror or exc}",
            path=None if exc.filename is None else str(exc.filename),
        ) from None


@dataclass(frozen=True)
class Failure:
    """What one failed command reports."""

    kind: str
    message: str
    path: str | None
    code: int
    prog: str = "contextmesh"

    def to_dict(self) -> dict[str, dict[str, str | None]]:
        """The ``--json`` document."""
        return {"error": {"type": self.kind, "message": self.message, "path": self.path}}


def one_line(text: str) -> str:
    """``text`` as one printable line: line breaks joined, control characters escaped, long text cut."""
    text = _BREAKS.sub(" ", text.strip())
    text = "".join(
        char.encode("unicode_escape").decode("ascii") if unicodedata.category(char) in {"Cc", "Cs"} else char
        for char in text
    )
    if len(text) > _MESSAGE_LIMIT:
        text = f"{text[:_MESSAGE_LIMIT]}… ({len(text):,} characters)"
    return text


def _path_of(exc: BaseException) -> str | None:
    path = getattr(exc, "path", None)
    if path is None and isinstance(exc, OSError):
        path = exc.filename
    return None if path is None else one_line(str(path))


def classify(exc: BaseException) -> Failure:
    """The failure an exception stands for (its message made one line)."""
    if isinstance(exc, UsageError):
        return Failure("UsageError", one_line(str(exc)), exc.path, USAGE, exc.prog)
    if isinstance(exc, ContextMeshError):
        return Failure(type(exc).__name__, one_line(str(exc)), _path_of(exc), REFUSED)
    if isinstance(exc, OSError):
        message = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)
        return Failure(type(exc).__name__, one_line(message), _path_of(exc), REFUSED)
    api = _api_failure(exc)
    if api is not None:
        return api
    if isinstance(exc, ImportError):
        message = (
            f"this command needs {exc.name or 'a package'!r}, which is not installed here ({exc}); the core "
            "install runs the in-process commands only — install contextmesh with its dependencies"
        )
        return Failure("MissingDependency", one_line(message), None, REFUSED)
    message = f"internal error ({type(exc).__name__}: {exc}); this is a bug — CONTEXTMESH_DEBUG=1 shows where"
    return Failure("InternalError", one_line(message), None, REFUSED)


def _request_of(exc: BaseException) -> tuple[str, str] | None:
    # httpx raises RuntimeError from ``.request`` when an error carries none; read it without trusting it.
    try:
        request = getattr(exc, "request", None)
    except RuntimeError:
        return None
    method, url = getattr(request, "method", None), getattr(request, "url", None)
    return None if method is None or url is None else (str(method), str(url))


def _api_failure(exc: BaseException) -> Failure | None:
    """An HTTP API (Prefect's) that refused or did not answer, told as such rather than as a bug.

    Read by shape, not by class, so the core install (no httpx) classifies the same way. Prefect's
    client wraps some of them (``RuntimeError("Failed to reach API …")``), so the cause chain is read.
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        request = _request_of(cause) if type(cause).__module__.split(".")[0] in {"httpx", "prefect"} else None
        if request is not None:
            return _told(cause, *request)
        cause = cause.__cause__ or cause.__context__
    return None


def _told(exc: BaseException, method: str, url: str) -> Failure:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int):
        if status in {429, 502, 503, 504}:  # what Prefect's client retries: still refused after them
            told = (
                f"answered {status} to {method} {url} after its client's retries; "
                "the server is busy or restarting — run the command again"
            )
        else:
            told = f"refused {method} {url} with {status}"
        return Failure("ApiError", one_line(f"the Prefect API {told}"), url, REFUSED)
    message = (
        f"the Prefect API did not answer {method} {url} ({type(exc).__name__}: {exc or 'no detail'}); "
        "is the server running and reachable?"
    )
    return Failure("ApiUnreachable", one_line(message), url, REFUSED)


def json_requested(argv: Sequence[str]) -> bool:
    """True when ``--json`` appears anywhere before a ``--`` (where argparse would see it as the option)."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == "--json" or arg.startswith("--json="):
            return True
    return False


def _safe(text: str) -> str:
    # A value from argv may carry lone surrogates (undecodable bytes); escape them so writing never fails.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def write(stream: TextIO, text: str) -> None:
    """Write and flush ``text``; characters the stream's encoding lacks are escaped, not fatal."""
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = stream.encoding or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
    stream.flush()


def emit(failure: Failure, *, as_json: bool, stdout: TextIO, stderr: TextIO) -> int:
    """Write the failure (one stderr line; the JSON document under ``--json``); return the exit status."""
    try:
        write(stderr, _safe(f"{failure.prog}: {failure.message}") + "\n")
        if as_json:
            document = Failure(
                failure.kind,
                _safe(failure.message),
                None if failure.path is None else _safe(failure.path),
                failure.code,
            ).to_dict()
            write(stdout, file_bytes(document).decode("utf-8"))
    except BrokenPipeError:
        pass  # the reader went away; the exit status still says what happened
    return failure.code

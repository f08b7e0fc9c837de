"""The server's log: one clipped line per record on stderr, never a traceback.

Left alone, the SDK installs a Rich handler with rich tracebacks on the root logger: an unknown
prompt name printed a forty-line boxed traceback, and a 500,000-character name kept the event
loop busy wrapping it into that box for minutes — every other client waited, and SIGTERM went
unheard. :func:`install` puts this handler on the root logger first (the SDK's ``basicConfig``
then does nothing), and uvicorn is started without its own logging config, so its records come
here too. A record about a failure says the exception's type and (clipped) message.
"""

from __future__ import annotations

import logging
import sys

from contextmesh.mcp.quoting import clip

__all__ = ["OneLineHandler", "install"]


class OneLineHandler(logging.Handler):
    """``PROG: level: message`` on stderr, the message clipped to one line of bounded length."""

    def __init__(self, prog: str) -> None:
        super().__init__()
        self.prog = prog

    def emit(self, record: logging.LogRecord) -> None:
        try:
            try:
                message = record.getMessage()
            except (TypeError, ValueError):
                message = str(record.msg)
            if record.exc_info and record.exc_info[1] is not None:
                error = record.exc_info[1]
                message = f"{message}: {type(error).__name__}: {error}"
            sys.stderr.write(f"{self.prog}: {record.levelname.lower()}: {clip(message)}\n")
            sys.stderr.flush()
        except Exception:  # noqa: S110 - a log line must never take the server down, nor print a traceback
            pass


def install(prog: str, level: int = logging.WARNING) -> None:
    """Route every log record through :class:`OneLineHandler` (unless logging is already set up)."""
    root = logging.getLogger()
    if root.handlers:
        return  # someone (a test runner, an embedding launcher) already decided where logs go
    root.addHandler(OneLineHandler(prog))
    root.setLevel(level)

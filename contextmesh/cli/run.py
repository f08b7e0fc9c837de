"""``main``: parse, run one handler, print its result — or report the failure in one line (and JSON)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from contextmesh.cli.failure import classify, emit, json_requested, write
from contextmesh.cli.parser import build_parser
from contextmesh.cli.projects import notes
from contextmesh.core.canonical import file_bytes

__all__ = ["main"]

INTERRUPTED = 130


def _render(args: Any, as_json: bool) -> tuple[str, list[str]]:
    data, text = args.handler(args)
    # Serialised before anything is written, so a failure here still leaves stdout empty.
    return (file_bytes(data).decode("utf-8") if as_json else f"{text}\n"), notes(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the process exit code."""
    tokens = list(sys.argv[1:] if argv is None else argv)
    as_json = json_requested(tokens)
    try:
        args = build_parser().parse_args(tokens)
        output, said = _render(args, as_json)
    except KeyboardInterrupt:
        write(sys.stderr, "contextmesh: interrupted\n")
        return INTERRUPTED
    except Exception as exc:
        if os.environ.get("CONTEXTMESH_DEBUG"):
            raise
        return emit(classify(exc), as_json=as_json, stdout=sys.stdout, stderr=sys.stderr)
    try:
        # Notes (the bundled demo used because no project was found, a server started for this
        # command) go to stderr only once the command has succeeded: a failure stays one line.
        for line in said:
            write(sys.stderr, f"{line}\n")
        write(sys.stdout, output)
    except BrokenPipeError:
        # A reader such as `head` closed the pipe: stop quietly, as other command-line tools do.
        sys.stdout = None
    return 0

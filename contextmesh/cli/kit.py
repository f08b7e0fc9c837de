"""What the command line hands a project's extension: its option types, errors and renderers.

A project's ``[project] extension`` may add commands of its own (ADR 0023): the parser calls its
``register(commands, kit)`` with the one :data:`KIT`, so those commands check their values with the
same option types, fail with the same one-line usage errors, write with the same refusals and
print engine results with the same renderers as every built-in command — and the project's code
never imports the command line. The bundled example project's commands come in this way.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from contextmesh.cli import render as renderers
from contextmesh.cli.failure import UsageError, writing
from contextmesh.cli.options import MAX_ROUNDS, MAX_THREADS, Count, FilePath, Key, PathOption, Text

__all__ = ["KIT", "CliKit", "progress"]

_RENDERERS: dict[str, Callable[..., str]] = {
    "build": renderers.render_build,
    "health": renderers.render_health,
    "invalidation": renderers.render_invalidation,
    "lineage": renderers.render_lineage,
    "recheck": renderers.render_recheck,
    "round": renderers.render_round,
    "walk": renderers.render_walk,
}


def progress(stage: str, done: int, total: int) -> None:
    """A one-line progress bar on stderr, only when a person is watching."""
    if not sys.stderr.isatty() or total < 50:
        return
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r{stage:<8} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\r" + " " * (width + 30) + "\r")
    sys.stderr.flush()


class CliKit:
    """The command line's services, for a project's own commands."""

    max_rounds = MAX_ROUNDS
    rounds: Callable[[str], int] = Count("walk rounds", 0, MAX_ROUNDS)
    threads: Callable[[str], int] = Count("threads", 1, MAX_THREADS)
    session_dir: Callable[[str], Path] = PathOption("an existing session directory", "existing-dir")
    new_session_dir: Callable[[str], Path] = PathOption(
        "a new session directory: absent, or an empty directory", "new-dir"
    )
    progress = staticmethod(progress)

    @property
    def parser_class(self) -> type[argparse.ArgumentParser]:
        """The parser class every sub-command table uses (errors as one-line usage errors)."""
        from contextmesh.cli.parser import CliParser  # noqa: PLC0415 - the parser imports this module

        return CliParser

    def file(self, what: str) -> Callable[[str], Path]:
        """A file a command writes: a regular file, or a new name in an existing directory tree."""
        return FilePath(what, "write-file")

    def key(self, what: str) -> Callable[[str], str]:
        """A registered-key-shaped value."""
        return Key(what)

    def text(self, what: str, limit: int) -> Callable[[str], str]:
        """One line of text, at most ``limit`` characters."""
        return Text(what, limit)

    def project_option(self, sub: argparse.ArgumentParser) -> None:
        """``--project DIR``, as every command spells it."""
        from contextmesh.cli.parser import project_option  # noqa: PLC0415

        project_option(sub)

    def usage_error(self, message: str, *, prog: str, path: str | None) -> Exception:
        """The usage error a built-in command raises (exit status 2, one line, JSON under --json)."""
        return UsageError(message, prog=prog, path=path)

    def writing(self, what: str) -> AbstractContextManager[None]:
        """A block writing ``what``: an OS error there is one line naming it."""
        return writing(what)

    def render(self, what: str, *args: Any, **options: Any) -> str:
        """The command line's text for an engine result (``walk``, ``round``, ``health``, ...)."""
        return _RENDERERS[what](*args, **options)

    def health(self, graph: Any, resolver: Any, walker: Any) -> Any:
        """The health report of a graph with no plan running on it."""
        from contextmesh.knowledge.health import check  # noqa: PLC0415

        return check(graph, resolver, walker)

    def feed_next(self, feed: Path, since: float) -> tuple[list[dict[str, Any]], str]:
        """What follows a change to a file auditors read: the recheck each serving process watching it started."""
        from contextmesh.orchestration.what_next import after_feed  # noqa: PLC0415 - no Prefect: files only

        found = after_feed(feed, since)
        if not found:
            return [], (
                "  next: no `contextmesh serve --feed` watches this feed, so nothing rechecks yet: run "
                f"`contextmesh recheck --session DIR --feed {feed}`, or serve the session with this --feed"
            )
        return [n.to_dict() for n in found], "\n".join(f"  next: session {n.session_id}: {n.text}" for n in found)


KIT = CliKit()

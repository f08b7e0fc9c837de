"""The bundled demo project's extension: what it adds to the surfaces (ADR 0023).

``contextmesh/demo/contextmesh.toml`` names :data:`EXTENSION` as ``[project] extension``; the
command line, the MCP server and the dashboard reach it only through
:mod:`contextmesh.project.bundled`, as they would any project's. It adds:

* the setting ``feed`` (the advisory feed its auditor reads) as a command-line option, and the
  demo's default feed when none is given;
* the demo's own commands (:mod:`contextmesh.demo.demo_commands`);
* the demo graph built in memory, for reading commands run with no session (:meth:`example`);
* a saved demo session (:meth:`save_example`), the dashboard's story (:meth:`showcase`) and the
  walk rounds' question mix (:meth:`questions`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from contextmesh import Plan, Session
from contextmesh.demo.auth import default_feed
from contextmesh.demo.demo_commands import FEED_RULE, register
from contextmesh.demo.knowledge import DemoWorld, break_sizing_assumption, build_world, round_questions

__all__ = ["EXTENSION", "DemoExtension"]


class DemoExtension:
    """The demo's additions to the command line, the MCP server and the dashboard."""

    options: ClassVar[dict[str, str]] = {"feed": FEED_RULE}

    @staticmethod
    def settings(given: Mapping[str, Path]) -> dict[str, str]:
        """The feed given, else the demo's default, always absolute (a Dask worker reads the same file)."""
        return {"feed": str((given.get("feed") or default_feed()).absolute())}

    @staticmethod
    def register(commands: Any, kit: Any) -> None:
        """The demo's own commands."""
        register(commands, kit)

    @staticmethod
    def example(rounds: int, progress: Callable[[str, int, int], None] | None = None) -> DemoWorld:
        """The demo graph built in memory, ``rounds`` walk rounds run."""
        return build_world(rounds, progress=progress)

    @staticmethod
    def example_session(rounds: int) -> Session:
        """The demo graph as an in-memory session with no plan (never saved)."""
        from contextmesh.demo.knowledge import DEMO_CORPUS  # noqa: PLC0415

        world = build_world(rounds)
        session = Session(
            world.graph,
            world.result.resolver,
            walk_rounds=world.walk_rounds,
            corpus=DEMO_CORPUS,
            flat=world.walker.flat,  # the figure a walk compares itself with, as the CLI's demo reports it
        )
        session.walker.walks = list(world.walker.walks)
        return session

    @staticmethod
    def save_example(directory: Path, rounds: int, settings: Mapping[str, Path]) -> Session:
        """The demo (walk rounds, plan round 1 executed) saved as a new session."""
        from contextmesh.demo.saved import save_demo_session  # noqa: PLC0415

        return save_demo_session(directory, rounds=rounds, feed=settings.get("feed"))

    @staticmethod
    def showcase(rounds: int, settings: Mapping[str, Path]) -> tuple[DemoWorld, Plan]:
        """The dashboard's story: the graph walked and broken, and the plan's walk-through run in memory."""
        import tempfile  # noqa: PLC0415

        from contextmesh.demo.execute import run_walkthrough  # noqa: PLC0415

        world = build_world(rounds)
        break_sizing_assumption(world)
        feed = settings.get("feed")
        if feed is not None:
            return world, run_walkthrough(feed=feed).runner
        with tempfile.TemporaryDirectory(prefix="contextmesh-export-") as scratch:
            return world, run_walkthrough(feed=Path(scratch) / "advisories.json").runner

    @staticmethod
    def questions() -> list[str]:
        """The fixed question mix each walk round asks."""
        return round_questions()


EXTENSION = DemoExtension()

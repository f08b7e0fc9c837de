"""The demo built once per test session and handed out as copies (the root ``conftest.py`` fixtures).

Building the demo is the most repeated piece of work in the suite: each walk round asks the whole
question mix again, so a saved demo session costs half a second to three seconds and a world about
as much. A test session builds each variant once, on first use:

* :class:`DemoSessions` — the demo saved as a session directory (``save_demo_session``), one per walk
  round count, once for all xdist workers of a run (they share its directory).
  :meth:`DemoSessions.copy` gives a module or a test its own directory and its own feed path, byte
  for byte what the cached save wrote (``copytree`` keeps every file and its mtime), so a test may
  commit, corrupt or delete it freely. Copies share the cached save's session id, as the
  tests of one module always shared their module's template; a test that needs a session id of its
  own on a shared Prefect server saves its own session.
* :class:`DemoWorlds` — the in-memory world (``build_world``), for modules that only read it.
  :meth:`DemoWorlds.shared` hands out one object; :meth:`DemoWorlds.check_unchanged` (run by the
  fixture after each module) fails if a module changed its graph, resolver or walk log, so a test
  that writes cannot pass by leaning on another module's writes. A test that mutates a world (a
  break, a question asked) still builds its own with ``build_world``.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from contextmesh.demo.knowledge import DemoWorld, build_world
from contextmesh.demo.saved import save_demo_session
from contextmesh.formats.graph_file import dump_graph
from contextmesh.formats.resolver_file import dump_resolver

__all__ = ["DemoSessions", "DemoWorlds", "world_digest"]


@dataclass
class DemoSessions:
    """Saved demo sessions under ``root``, one per walk round count, each saved at most once."""

    root: Path
    _saved: dict[int, Path] = field(default_factory=dict)

    def template(self, rounds: int) -> Path:
        """The cached save with ``rounds`` walk rounds (plan round 1 run) — never hand it out to write."""
        if rounds not in self._saved:
            base = self.root / f"rounds-{rounds}"
            self.root.mkdir(parents=True, exist_ok=True)
            # The xdist workers of one run share ``root``: the first to get here saves, the others
            # wait on the lock and find it saved (``done`` is written only after a whole save).
            with (self.root / f"rounds-{rounds}.lock").open("w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not (base / "done").exists():
                    shutil.rmtree(base, ignore_errors=True)  # a save that died half-way
                    # The feed is the demo's advisory file; absent, as here, it publishes no advisory.
                    save_demo_session(base / "session", rounds=rounds, feed=base / "feed.json")
                    (base / "done").touch()
            self._saved[rounds] = base / "session"
        return self._saved[rounds]

    def copy(self, root: Path, *, rounds: int = 1, name: str = "template") -> tuple[Path, Path]:
        """A private copy under ``root``: ``(root / name, root / "feed.json")``; the feed is not created."""
        source = self.template(rounds)
        directory = root / name
        shutil.copytree(source, directory, symlinks=True)
        feed = source.parent / "feed.json"
        if feed.exists():
            shutil.copy2(feed, root / "feed.json")
        return directory, root / "feed.json"


def world_digest(world: DemoWorld) -> str:
    """A digest of everything a reader of a world sees: graph bytes, resolver bytes, the walk log."""
    digest = hashlib.sha256(dump_graph(world.graph))
    digest.update(dump_resolver(world.result.resolver))
    digest.update(repr([w.to_dict() for w in world.walker.walks]).encode())
    digest.update(str(world.walk_rounds).encode())
    return digest.hexdigest()


@dataclass
class DemoWorlds:
    """Built demo worlds, one per walk round count, shared read-only between modules."""

    _built: dict[int, tuple[DemoWorld, str]] = field(default_factory=dict)

    def shared(self, rounds: int) -> DemoWorld:
        """The world with ``rounds`` walk rounds, built on first use; read it, never change it."""
        if rounds not in self._built:
            world = build_world(rounds)
            self._built[rounds] = (world, world_digest(world))
        return self._built[rounds][0]

    def check_unchanged(self, rounds: int) -> None:
        """Fail if the shared world no longer digests as it did when it was built."""
        world, digest = self._built[rounds]
        assert world_digest(world) == digest, (
            f"a test changed the shared demo world ({rounds} walk rounds); build a private one with build_world"
        )

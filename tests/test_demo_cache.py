"""The demo built once per run: copies are the cached save byte for byte and private; a shared world is checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_cache import DemoSessions, DemoWorlds

from contextmesh.demo.knowledge import round_questions


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def test_a_copy_is_the_cached_save_byte_for_byte_and_its_own(demo_sessions: DemoSessions, tmp_path: Path) -> None:
    template = demo_sessions.template(1)
    first, feed = demo_sessions.copy(tmp_path / "one")
    second, _ = demo_sessions.copy(tmp_path / "two")
    assert first == tmp_path / "one" / "template" and feed == tmp_path / "one" / "feed.json"
    assert _files(first) == _files(second) == _files(template) and _files(template)
    (first / "extra").write_bytes(b"x")
    next(p for p in first.iterdir() if p.name.startswith("graph-")).write_bytes(b"spoiled")
    assert _files(second) == _files(template) and "extra" not in _files(template)


def test_a_shared_world_changed_by_a_question_fails_the_check() -> None:
    worlds = DemoWorlds()  # not the session's: this test changes its world on purpose
    world = worlds.shared(0)
    assert worlds.shared(0) is world
    worlds.check_unchanged(0)
    world.walker.ask(round_questions()[0])
    with pytest.raises(AssertionError, match="changed the shared demo world"):
        worlds.check_unchanged(0)

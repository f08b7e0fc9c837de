"""$CONTEXTMESH_HOME resolution: one rule, and an empty or relative XDG_STATE_HOME is ignored (XDG spec)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextmesh.core.home import contextmesh_home
from contextmesh.demo.saved import default_feed

STATE = Path.home() / ".local" / "state" / "contextmesh"


@pytest.mark.parametrize(
    ("environ", "home"),
    [
        ({"CONTEXTMESH_HOME": "/somewhere/cm", "XDG_STATE_HOME": "/state"}, Path("/somewhere/cm")),
        ({"CONTEXTMESH_HOME": "", "XDG_STATE_HOME": "/state"}, Path("/state/contextmesh")),
        ({"XDG_STATE_HOME": "/state"}, Path("/state/contextmesh")),
        ({"XDG_STATE_HOME": ""}, STATE),
        ({"XDG_STATE_HOME": "relative/state"}, STATE),
        ({}, STATE),
    ],
)
def test_the_home_is_contextmesh_home_else_an_absolute_xdg_state_home_else_local_state(
    environ: dict[str, str], home: Path
) -> None:
    assert contextmesh_home(environ) == home


def test_an_empty_xdg_state_home_leaves_the_demo_feed_absolute_under_local_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CONTEXTMESH_HOME", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", "")
    assert contextmesh_home() == STATE
    feed = default_feed()
    assert feed.is_absolute() and feed == STATE / "demo-feed.json"

"""A reader slower than two commits finds every manifest it listed already swept, and lists again.

The writer keeps only the newest two generations, so under a fast writer a reader's listing can
name manifests that are gone by the time it looks at them (seen in CI: "holds no session manifest"
while 200 generations committed). The directory was never empty; the reader must not say it was.
The race is replayed exactly: the first listing is the one a slow reader took two commits ago.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from contextmesh.session import commit
from contextmesh.session.commit import latest_generation


def test_a_listing_whose_manifests_were_all_swept_is_taken_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "session-000003.json").write_text("{}")
    real_listdir = os.listdir
    listings: list[list[str]] = []

    def stale_then_real(path: str | os.PathLike[str]) -> list[str]:
        names = ["session-000001.json", "session-000002.json"] if not listings else real_listdir(path)
        listings.append(names)
        return names

    monkeypatch.setattr(commit.os, "listdir", stale_then_real)
    assert latest_generation(tmp_path) == 3
    assert len(listings) == 2


def test_an_empty_directory_is_listed_once_and_holds_no_generation(tmp_path: Path) -> None:
    assert latest_generation(tmp_path) == 0

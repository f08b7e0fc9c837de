"""``export``: the files it writes, the embedded JSON that cannot close its script tag, a session read-only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from demo_cache import DemoSessions

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.dashboard.export import export, render_summary
from contextmesh.dashboard.page import DATA_CLOSE, DATA_OPEN, render_page, script_safe

PACKAGE = Path(__file__).resolve().parents[2] / "contextmesh" / "dashboard"
HOSTILE = {
    "label": "</script><script>window.__pwned = 1</script><!-- & </SCRIPT >",
    "separators": "line\u2028paragraph\u2029end",
    "nested": ["<b>", {"key <&>": "</script"}],
}


def embedded(page: str) -> str:
    """The text of the data block: from its opening tag to the first closing tag after it."""
    start = page.index(DATA_OPEN) + len(DATA_OPEN)
    return page[start : page.index(DATA_CLOSE, start)]


def test_embedded_json_cannot_close_its_script_tag() -> None:
    page = render_page(file_bytes(HOSTILE))
    text = embedded(page)
    assert loads(text) == HOSTILE  # the first </script> after the data block is the block's own
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in text
    assert page.count(DATA_OPEN) == 1
    assert "window.__pwned" not in page.split(DATA_OPEN)[0]


def test_script_safe_escapes_only_inside_the_serialized_text() -> None:
    assert script_safe('{"a":"</script>&\u2028"}') == '{"a":"\\u003c/script\\u003e\\u0026\\u2028"}'
    assert loads(script_safe(file_bytes(HOSTILE).decode())) == HOSTILE


def test_the_page_names_no_network_location() -> None:
    for name in ("page.html", "dashboard.js"):
        text = (PACKAGE / name).read_text(encoding="utf-8")
        assert not re.search(r"https?:", text), f"{name} names a network location"
        assert "cdn" not in text.lower()
    page = render_page(None)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert DATA_OPEN + DATA_CLOSE in page  # not inlined: an empty block, the page fetches data/mesh.json


def test_export_writes_data_and_an_inlined_page(tmp_path: Path) -> None:
    summary = export(tmp_path / "out", rounds=1, inline=True)
    data = (tmp_path / "out" / "data" / "mesh.json").read_bytes()
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert loads(embedded(page)) == loads(data)
    assert summary["inline"] is True and summary["data_bytes"] == len(data)
    assert summary["ledger"]["verified"] is True
    assert sorted(p.name for p in (tmp_path / "out").rglob("*")) == ["data", "index.html", "mesh.json"]
    text = render_summary(summary)
    assert "all " in text and "chain verifies" in text and "opens from disk" in text


def test_export_without_inline_leaves_the_page_to_fetch_its_data(tmp_path: Path) -> None:
    summary = export(tmp_path, rounds=0, inline=False)
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert embedded(page) == ""
    assert "serve the folder" in render_summary(summary)


def test_a_session_exports_read_only_with_its_plan_and_ledger(tmp_path: Path, demo_sessions: DemoSessions) -> None:
    directory, feed = demo_sessions.copy(tmp_path, rounds=1, name="session")
    before = {p: p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}
    summary = export(tmp_path / "out", session_dir=directory, rounds=2, inline=True, feed=feed)
    after = {p: p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}
    assert after == before  # policy "never": the walk rounds are asked in memory, nothing is committed
    payload = loads((tmp_path / "out" / "data" / "mesh.json").read_bytes())
    assert payload["source"] == {
        "kind": "session",
        "generation": 1,
        "corpus": "contextmesh.demo",
        "session_rounds": 1,
        "walk_rounds": 2,
        "plan": "secure-authentication",
    }
    assert payload["build"] is None
    assert payload["hops"]["walks"] == 2 * 10
    execution = payload["execution"]
    assert execution["ledger"]["verified"] is True
    assert [r["kind"] for r in execution["rounds"]] == ["run"]
    assert execution["receipt"] is None
    assert summary["source"]["kind"] == "session"


def test_a_missing_session_is_refused_with_the_engines_error(tmp_path: Path) -> None:
    from contextmesh.core.errors import ContextMeshError

    with pytest.raises(ContextMeshError):
        export(tmp_path / "out", session_dir=tmp_path / "nowhere", rounds=0)
    assert not (tmp_path / "out").exists()

"""A generated 10,000-node session: export completes, and the page renders fast and sampled."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from dashboard_browser import chromium, open_rendered, require_browser, severe_console_entries

from contextmesh.core.canonical import loads
from contextmesh.dashboard.export import export
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.session import Session
from contextmesh.testing import generate_graph

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NODES = 10_000
FIRST_RENDER_MS = 2_000
LONGEST_TASK_MS = 200
FIGURES = """
return {
  rendered: window.__cm.rendered,
  longest: Math.max(0, ...window.__cm.longTasks.map((t) => t.duration)),
  tasks: window.__cm.longTasks.length,
  marks: document.querySelectorAll("svg.graph circle.node").length,
  caption: document.getElementById("graph-caption").textContent,
};
"""


@pytest.fixture(scope="module")
def big_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], float]:
    require_browser()
    root = tmp_path_factory.mktemp("big")
    session = Session(generate_graph(NODES, seed=11), Resolver())
    Session.create(root / "session", session)
    started = time.perf_counter()
    summary = export(root / "out", session_dir=root / "session", rounds=2, inline=True)
    return root / "out", summary, time.perf_counter() - started


def test_export_of_a_10000_node_session_completes(big_export: tuple[Path, dict[str, Any], float]) -> None:
    out, summary, seconds = big_export
    assert summary["nodes_total"] == NODES
    assert summary["graph"] == {"drawn": 1500, "of": NODES, "sampled": True, "cap": 1500}
    payload = loads((out / "data" / "mesh.json").read_bytes())
    assert len(payload["graph"]["nodes"]) == 1500
    assert len(payload["graph"]["edges"]) <= payload["graph"]["edge_cap"]
    print(f"export of {NODES:,} nodes: {seconds:.1f} s, payload {summary['data_bytes']:,} bytes")


def test_first_render_is_fast_with_no_long_task_and_the_graph_is_sampled(
    big_export: tuple[Path, dict[str, Any], float], tmp_path: Path
) -> None:
    out, summary, _ = big_export
    with chromium(tmp_path / "profile") as driver:
        open_rendered(driver, out / "index.html")
        time.sleep(0.2)  # let the observer deliver the last entries
        assert severe_console_entries(driver) == []
        figures = driver.execute_script(FIGURES)
    longest, count = figures["longest"], figures["tasks"]
    print(f"first render {figures['rendered']:.0f} ms; longest task {longest:.0f} ms ({count} long tasks)")
    assert figures["rendered"] < FIRST_RENDER_MS
    assert figures["longest"] < LONGEST_TASK_MS
    assert figures["marks"] == summary["graph"]["drawn"] <= summary["graph"]["cap"]
    match = re.search(r"sampled (\d+) of (\d+)", figures["caption"])
    assert match is not None and (int(match[1]), int(match[2])) == (1500, NODES)

"""A user's project on the dashboard, in headless Chromium: the churn pipeline of ``tests/data/projects``.

``contextmesh init`` makes the project and the churn plan replaces its own; round 1 runs as a flow
run on a real Prefect server; the GPU quota is cut, an in-process recheck disproves ``train``, which
is repaired onto ``churn.train.small.v1``, and an in-process resume re-runs the stale closure. The
inlined export of that session is opened from disk, and the page is read by its DOM:

* each round links to the Prefect flow run it recorded (the address is the server's, the run is
  there), and an in-process round says so instead of linking;
* each round shows the worker key that round ran (round 1 ran ``train`` on ``churn.train.v1``,
  not on the key it was repaired onto);
* the plan's nodes in the graph panel are laid out by layer, left to right, none overlapping
  another or a task's label, all inside the panel.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections.abc import Iterator
from itertools import combinations, pairwise
from pathlib import Path
from typing import Any

import httpx
import pytest
from dashboard_browser import chromium, open_rendered, severe_console_entries

from contextmesh import load_project
from contextmesh.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CHURN = Path(__file__).resolve().parents[1] / "data" / "projects" / "churn"
PLAN = "churn"
STALE = ("train", "evaluate", "publish")


def cm(*args: str) -> dict[str, Any]:
    """``contextmesh ARGS --json`` in this process (the Prefect client points at the test server)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*args, "--json"])
    assert code == 0, f"{args}: exit {code}\n{out.getvalue()}"
    document = json.loads(out.getvalue())
    assert isinstance(document, dict)
    return document


@pytest.fixture(scope="module")
def churn(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    where = tmp_path_factory.mktemp("churn-dashboard")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONTEXTMESH_HOME", str(where / "home"))
        patch.setenv("PREFECT_API_URL", prefect_api)  # what the export reads to address the UI
        yield from _churn_page(where, prefect_api)


def _churn_page(where: Path, prefect_api: str) -> Iterator[dict[str, Any]]:
    root = where / PLAN
    cm("init", str(root))
    module = next(p.parent.name for p in root.glob("*/plan.py") if p.parent.name != "flows")
    shutil.copy(CHURN / "plan.py", root / module / "plan.py")
    shutil.copy(CHURN / "world.json", root / "world.json")
    shutil.rmtree(root / "docs")
    shutil.copytree(CHURN / "docs", root / "docs")
    at = ("--project", str(root))
    first = cm("run", *at)
    assert first["executor"] == "prefect" and first["report"]["failed"] == {}
    world = root / "world.json"
    world.write_text(world.read_text().replace('"gpu_quota": 8', '"gpu_quota": 4'))
    cm("evidence", "add", "Cloud Ops cut the quota to 4 GPUs", "--source", "ticket:OPS-4411", *at)
    rechecked = cm("recheck", "--local", *at)
    assert rechecked["executor"] == "in-process" and "train" in rechecked["blocked"]
    repair = ("--worker-key", "churn.train.small.v1", "--assumes", "the GPU quota is 4 GPUs")
    cm("repair", "train", "--local", *repair, *at)
    resumed = cm("resume", "--local", *at)
    assert resumed["executor"] == "in-process" and resumed["report"]["executed"] == list(STALE)
    out = where / "dash"
    cm("export", "--inline", "--out", str(out), *at)
    session = load_project(root).open_readonly()
    with chromium(where / "profile", height=2400) as driver:
        open_rendered(driver, out / "index.html")
        yield {"driver": driver, "api": prefect_api, "first": first["flow_run"], "session": session}


def test_the_project_page_renders_without_console_errors(churn: dict[str, Any]) -> None:
    driver = churn["driver"]
    assert severe_console_entries(driver) == []
    assert driver.execute_script("return window.__cm.errors") == []


def test_each_round_links_its_prefect_flow_run_and_an_in_process_round_says_it_has_none(churn: dict[str, Any]) -> None:
    driver, api, first = churn["driver"], churn["api"], churn["first"]
    links = driver.execute_script(
        "return [...document.querySelectorAll('#p-execution th[data-round]')].map(th => ["
        "  th.dataset.round, th.textContent, [...th.querySelectorAll('a')].map(a => a.href)])"
    )
    by_round = {int(number): (text, hrefs) for number, text, hrefs in links}
    ledger = churn["session"].ledger
    assert sorted(by_round) == sorted({entry.round for entry in ledger.entries}) == [1, 2, 3]
    ui = api.removesuffix("/").removesuffix("/api")
    assert by_round[1][1] == [f"{ui}/runs/flow-run/{first['flow_run_id']}"]
    for number in (2, 3):  # recheck and resume ran in-process: no link, and the page says why
        text, hrefs = by_round[number]
        assert hrefs == [] and "in-process · no Prefect flow run" in text
    # The link leads somewhere: Prefect's API holds that flow run, completed, and the ledger names it.
    run = httpx.get(f"{api}/flow_runs/{first['flow_run_id']}", timeout=10).json()
    assert run["id"] == first["flow_run_id"] and run["state"]["type"] == "COMPLETED"
    recorded = {entry.run["flow_run_id"] for entry in ledger.entries if entry.round == 1 and entry.run}
    assert recorded == {first["flow_run_id"]}


def test_each_round_shows_the_worker_key_that_round_ran(churn: dict[str, Any]) -> None:
    driver = churn["driver"]

    def cell(task: str, number: int) -> str:
        text: str = driver.execute_script(
            "return document.querySelector(`#p-execution tr[data-task='${arguments[0]}'] "
            "td[data-round='${arguments[1]}']`).textContent",
            task,
            number,
        )
        return text

    assert "churn.train.v1" in cell("train", 1) and "small" not in cell("train", 1)
    assert "→ churn.train.small.v1" in cell("train", 2)  # the repair names the key it moved onto
    assert "churn.train.small.v1" in cell("train", 3)
    assert "churn.extract.v1 · from round 1" in cell("extract", 3)  # cached: round 1's result stands
    for entry in churn["session"].ledger.entries:  # every executed entry's key, in its own round's cell
        if entry.event == "executed":
            assert entry.key in cell(entry.task, entry.round), (entry.task, entry.round)


def test_the_plans_nodes_are_laid_out_by_layer_inside_the_panel_none_overlapping(churn: dict[str, Any]) -> None:
    driver, session = churn["driver"], churn["session"]
    graph, tasks = session.graph, session.runner.tasks
    decisions = {n.id: n.attrs["task"] for n in graph if n.type == "decision" and (n.attrs or {}).get("plan") == PLAN}
    grounds = {e.dst for d in decisions for e in graph.out_edges(d, ("depends_on",), live_only=False)}
    grounds = {g for g in grounds if graph.nodes[g].type == "assumption"}
    assert len(decisions) == len(tasks) + len(STALE)  # every task once, the stale closure twice
    boxes = driver.execute_script(
        "const ids = JSON.parse(document.getElementById('mesh-data').textContent).graph.nodes.map(n => n.id);"
        "const box = (e) => { const r = e.getBoundingClientRect();"
        "  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };"
        "const marks = {};"
        "for (const c of document.querySelectorAll('svg.graph circle.node')) marks[ids[+c.dataset.i]] = box(c);"
        "const labels = {};"
        "for (const t of document.querySelectorAll('svg.graph text')) labels[t.textContent] = box(t);"
        "return {marks, labels, svg: box(document.querySelector('svg.graph')),"
        "  panel: box(document.getElementById('p-graph'))};"
    )
    marks, labels, svg, panel = boxes["marks"], boxes["labels"], boxes["svg"], boxes["panel"]
    plan = {node_id: marks[node_id] for node_id in [*decisions, *grounds]}
    layer = _layers(tasks)
    for earlier, later in pairwise(layer):
        left = max(plan[d]["right"] for d, task in decisions.items() if task in earlier)
        right = min(plan[d]["left"] for d, task in decisions.items() if task in later)
        assert left < right, f"layer {earlier} is not drawn left of layer {later}"
    for (a, box_a), (b, box_b) in combinations(plan.items(), 2):
        assert not _overlap(box_a, box_b), f"{a} overlaps {b}"
    labelled = {name: labels.get(name) for name in tasks}
    assert all(labelled.values()), f"each task is named in the graph panel: {sorted(labels)}"
    drawn = {**{f"node {k}": v for k, v in plan.items()}, **{f"label {k}": v for k, v in labelled.items()}}
    for name, box in drawn.items():
        assert _inside(box, svg) and _inside(svg, panel), f"{name} is not inside the graph panel"
    for (a, box_a), (b, box_b) in combinations(drawn.items(), 2):
        assert not _overlap(box_a, box_b), f"{a} overlaps {b}"


def _layers(tasks: dict[str, Any]) -> list[list[str]]:
    depth: dict[str, int] = {}
    for task in tasks.values():
        depth[task.name] = 1 + max((depth[n] for n in task.needs), default=-1)
    return [[name for name, d in depth.items() if d == level] for level in range(max(depth.values()) + 1)]


def _inside(inner: dict[str, float], outer: dict[str, float]) -> bool:
    return (
        inner["left"] >= outer["left"]
        and inner["right"] <= outer["right"]
        and inner["top"] >= outer["top"]
        and inner["bottom"] <= outer["bottom"]
    )


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]

"""The payload: the committed demo files are what the engine produces, and every figure is the engine's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from contextmesh.core.canonical import file_bytes, loads, sha256_hex
from contextmesh.dashboard.marks import FORCE_LIMIT, HEIGHT, WIDTH, layout, sample
from contextmesh.dashboard.page import render_page
from contextmesh.dashboard.payload import DEFAULT_ROUNDS, build_payload
from contextmesh.demo.execute import run_walkthrough
from contextmesh.demo.knowledge import break_sizing_assumption, build_world
from contextmesh.testing import generate_graph

ROOT = Path(__file__).resolve().parents[2]
COMMITTED_DATA = ROOT / "dashboard" / "data" / "mesh.json"
COMMITTED_PAGE = ROOT / "dashboard" / "index.html"
REGENERATE = "regenerate with `contextmesh export --inline` (or export(Path('dashboard'), inline=True)) and commit"


@pytest.fixture(scope="module")
def demo_bytes() -> bytes:
    return file_bytes(build_payload(rounds=DEFAULT_ROUNDS))


@pytest.fixture(scope="module")
def demo(demo_bytes: bytes) -> dict:
    return loads(demo_bytes)


def test_committed_payload_is_byte_for_byte_what_the_engine_produces(demo_bytes: bytes) -> None:
    assert COMMITTED_DATA.read_bytes() == demo_bytes, f"dashboard/data/mesh.json is stale: {REGENERATE}"


def test_committed_page_is_the_inlined_export_of_the_committed_payload() -> None:
    expected = render_page(COMMITTED_DATA.read_bytes()).encode("utf-8")
    assert COMMITTED_PAGE.read_bytes() == expected, f"dashboard/index.html is stale: {REGENERATE}"


def test_demo_payload_is_the_same_bytes_under_another_hash_seed(demo_bytes: bytes) -> None:
    probe = (
        "import sys; from contextmesh.core.canonical import file_bytes, sha256_hex; "
        "from contextmesh.dashboard.payload import build_payload; "
        "sys.stdout.write(sha256_hex(file_bytes(build_payload())))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == sha256_hex(demo_bytes)


def test_demo_payload_holds_no_paths_timestamps_or_run_ids(demo_bytes: bytes) -> None:
    text = demo_bytes.decode("utf-8")
    for leak in ("/tmp", str(ROOT), "flow_run_id", "contextmesh-feed", "contextmesh-export"):
        assert leak not in text


def test_every_figure_is_the_engines(demo: dict) -> None:
    world = build_world(DEFAULT_ROUNDS)
    break_sizing_assumption(world)
    graph, walker = world.graph, world.walker
    header = demo["header"]
    assert {r["type"]: r["live"] for r in header["nodes"]} == graph.type_counts()
    assert {r["type"]: r["total"] for r in header["nodes"]} == graph.type_counts(live_only=False)
    assert {r["type"]: r["live"] for r in header["edges"]} == graph.edge_counts()
    assert {r["type"]: r["total"] for r in header["edges"]} == graph.edge_counts(live_only=False)
    assert header["invalidated"] == sum(1 for n in graph if n.invalidated) > 0
    assert demo["build"]["stages"] == world.result.report.to_dict()
    assert {b["hops"]: b["walks"] for b in demo["hops"]["bins"] if b["walks"]} == walker.hop_histogram()
    assert {r["reason"]: r["count"] for r in demo["dead_ends"]["reasons"]} == walker.dead_end_ledger()
    traffic = Counter()
    for edge in graph.edges.values():
        traffic[edge.type] += edge.traversals
    assert {r["type"]: r["traversals"] for r in demo["traffic"]["types"] if r["traversals"]} == dict(+traffic)
    ratios = sorted(walker.token_ratios())
    assert demo["tokens"]["answered"] == len(ratios)
    assert sum(w["count"] for w in demo["tokens"]["walks"]) == len(ratios)

    walkthrough = run_walkthrough()
    ledger = walkthrough.runner.ledger
    execution = demo["execution"]
    assert execution["ledger"]["head"] == ledger.head
    assert execution["ledger"]["entries"] == len(ledger)
    assert execution["ledger"]["verified"] is True
    receipt = ledger.receipts()[-1]
    assert [f["chain"] for f in execution["receipt"]["fallen"]] == [i["chain"] for i in receipt["invalidated"]]
    assert execution["receipt"]["preserved_count"] == receipt["preserved_count"]
    assert execution["layers"] == walkthrough.first.layers  # round 1 ran every task: its layers are the plan's


def test_execution_panel_shows_each_task_per_round_from_the_ledger(demo: dict) -> None:
    rounds = demo["execution"]["rounds"]
    states = {r["round"]: {c["task"]: c["state"] for c in r["cells"]} for r in rounds}
    assert [r["kind"] for r in rounds] == ["run", "recheck", "run"]
    assert set(states[1].values()) == {"executed"}
    assert states[2]["hashing"] == "disproved"
    assert states[2]["routes"] == states[2]["rate_limit"] == "invalidated"
    assert states[3] == {
        "schema": "cached",
        "hashing": "executed",
        "tokens": "cached",
        "routes": "executed",
        "rate_limit": "executed",
    }


def test_graph_panel_draws_every_node_not_pruned_with_its_flags(demo: dict) -> None:
    panel, header = demo["graph"], demo["header"]
    assert not panel["sampled"]
    assert panel["drawn"] == len(panel["nodes"]) == header["nodes_total"] - header["pruned"]
    assert sum(1 for n in panel["nodes"] if n["live"]) == header["nodes_live"]
    assert sum(1 for n in panel["nodes"] if n["invalidated"]) == header["invalidated"]
    assert all(0 <= n["x"] <= WIDTH and 0 <= n["y"] <= HEIGHT for n in panel["nodes"])
    assert all(0 <= e["s"] < panel["drawn"] and 0 <= e["t"] < panel["drawn"] for e in panel["edges"])


def test_a_graph_over_the_cap_is_sampled_per_type_and_says_k_of_n() -> None:
    graph = generate_graph(2000, seed=3, embeddings=False)
    doomed = [n.id for n in graph.by_type("claim")[:7]]
    graph.invalidate(doomed)
    marks = sample(graph, node_cap=400, edge_cap=500)
    assert (len(marks.nodes), marks.drawable) == (400, 2000)
    assert len(marks.edges) == 500 < marks.edges_among
    drawn = Counter(n.type for n in marks.nodes)
    total = Counter(n.type for n in graph)
    for node_type, count in total.items():
        assert abs(drawn[node_type] - 400 * count / 2000) < 1
    assert set(doomed) <= {n.id for n in marks.nodes}  # invalidated nodes are what a reader looks for
    again = sample(graph, node_cap=400, edge_cap=500)
    assert [n.id for n in again.nodes] == [n.id for n in marks.nodes]
    assert again.positions == marks.positions


def test_layout_is_a_pure_function_within_the_box() -> None:
    for size in (FORCE_LIMIT // 2, FORCE_LIMIT * 2):
        graph = generate_graph(size, seed=5, embeddings=False)
        nodes, edges = list(graph), list(graph.edges.values())
        first = layout(nodes, edges, graph.ontology.node_types)
        assert first == layout(nodes, edges, graph.ontology.node_types)
        assert len(first) == size
        assert all(0 <= x <= WIDTH and 0 <= y <= HEIGHT for x, y in first)
        assert len(set(first)) > size * 0.9

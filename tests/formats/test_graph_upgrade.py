"""A graph v2 file loads as the v3 file of the same graph (graph-v3.md G6, ADR 0021).

The fixture is a real v2 file, written by main's code before edge ids were widened
(``tests/data/graph-v2-session/README.md``). Before this change a v2 file was refused at
``version``; each test here failed then.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from contextmesh.core.canonical import file_bytes, loads, sha256_hex
from contextmesh.core.errors import SnapshotError
from contextmesh.core.ids import edge_id, slug
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.formats.graph_upgrade import EdgesAnyVersion

V2_FILE = Path(__file__).resolve().parents[1] / "data" / "graph-v2-session" / "expected-v2.json"
V2_BYTES = V2_FILE.read_bytes()


def _v2() -> dict[str, Any]:
    document = loads(V2_BYTES)
    assert document["version"] == 2
    return document


def test_the_fixture_is_a_v2_file_by_v2s_own_rule() -> None:
    # The old writer's documented rule (graph-v3.md 7.1): an edge id is the slug of src|type|dst.
    edges = _v2()["edges"]
    assert len(edges) > 400
    assert all(e["id"] == slug(f"{e['src']}|{e['type']}|{e['dst']}", "edge") for e in edges)


def test_a_v2_file_loads_as_the_v3_file_of_the_same_graph() -> None:
    # Built independently of the loader: the same document with each edge renamed to its v3 id.
    expected = _v2()
    expected["version"] = 3
    for record in expected["edges"]:
        record["id"] = edge_id(record["src"], record["type"], record["dst"])
    graph = load_graph(V2_BYTES)
    assert graph.upgraded_from == 2
    assert dump_graph(graph) == file_bytes(expected)
    again = load_graph(dump_graph(graph))  # what the next write holds is a plain v3 file
    assert again.upgraded_from is None
    assert dump_graph(again) == file_bytes(expected)


def test_a_v2_edge_whose_id_its_triple_does_not_derive_is_refused() -> None:
    document = _v2()
    victim = document["edges"][7]
    victim["id"] = document["edges"][8]["id"]  # another edge's v2 id: renaming it would hide that
    with pytest.raises(SnapshotError) as caught:
        load_graph(file_bytes(document))
    assert caught.value.path == "edges[7].id"
    message = str(caught.value)
    assert "\n" not in message
    assert repr(document["edges"][8]["id"]) in message
    assert "a v2 edge's id is derived from its endpoints" in message


def test_a_v2_record_of_the_wrong_shape_is_refused_by_the_v3_rules() -> None:
    document = _v2()
    document["edges"][3]["src"] = 17
    with pytest.raises(SnapshotError) as caught:
        load_graph(file_bytes(document))
    assert caught.value.path.startswith("edges[3]")


def test_the_upgrade_leaves_the_callers_document_as_it_was() -> None:
    from contextmesh.formats.graph_file import graph_from_dict

    document = _v2()
    before = file_bytes(document)
    graph_from_dict(document)
    assert file_bytes(document) == before


def test_an_upgraded_graph_finds_each_edge_under_its_v2_id_too() -> None:
    graph = load_graph(V2_BYTES)
    edges = EdgesAnyVersion(graph)
    for record in _v2()["edges"][:50]:
        edge = edges[record["id"]]
        assert (edge.src, edge.type, edge.dst) == (record["src"], record["type"], record["dst"])
        assert edge.id == edge_id(edge.src, edge.type, edge.dst) != record["id"]
        assert edge.id in edges
    assert "edge:nothing-000000" not in edges
    assert 7 not in edges
    assert len(edges) == len(graph.edges)


def test_the_upgrade_is_byte_identical_across_hash_seeds(tmp_path: Path) -> None:
    script = (
        "import sys\nfrom pathlib import Path\nfrom contextmesh.formats.graph_file import dump_graph, load_graph\n"
        "from contextmesh.core.canonical import sha256_hex\n"
        f"print(sha256_hex(dump_graph(load_graph(Path({str(V2_FILE)!r}).read_bytes()))))\n"
    )
    seen = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        seen.add(done.stdout.strip())
    assert seen == {sha256_hex(dump_graph(load_graph(V2_BYTES)))}

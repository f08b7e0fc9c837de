"""Compact records and the column loader (ADR 0015) left the graph file's bytes as they were.

The digests below are SHA-256 of ``dump_graph`` output produced by main's code before the change
(commit d9dccb2, pydantic records over a networkx mirror): the demo world after two walk rounds,
the water corpus built by the pipeline, and a generated graph with a planted closure. Each build
here — and a load of its bytes, dumped again — must give the same bytes, in a process under any
``PYTHONHASHSEED`` (the demo's and the generator's hash-seed tests run them in subprocesses).
A change to the demo corpus, the pipeline or the generator that is meant to change a graph updates
the digest here in the same commit, saying why.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from contextmesh.demo.knowledge import build_world
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.knowledge.folder import read_folder
from contextmesh.knowledge.pipeline import build
from contextmesh.testing import generate_graph, plant_closure

WATER = Path(__file__).resolve().parents[1] / "data" / "corpora" / "water" / "docs"

# Re-pinned when issue 18 changed GRAPH.md (its digest is in every graph file) and discovery; the
# digests were taken from main just before the compact records merged, and match after it.
BEFORE = {
    "demo": "4b57296c488108e515f5991dd6e5ffe469b971567e6bd9e74b894008dca648f2",
    "water": "a79211b49f3eb85281470cf60bf2c4fe888809b951533542316c55bec5991393",
    "generated": "b513092652d4ddc84dfd87e92621a1a56541eaaf4a8d42bb18cb42609b9474f2",
}


def _bytes(name: str) -> bytes:
    if name == "demo":
        return dump_graph(build_world(2).graph)
    if name == "water":
        corpus, _ = read_folder([WATER])
        return dump_graph(build(corpus).graph)
    graph = generate_graph(3000, seed=5)
    plant_closure(graph, 50, seed=2)
    return dump_graph(graph)


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_the_graph_bytes_are_the_ones_written_before_the_compact_records(name: str) -> None:
    data = _bytes(name)
    assert hashlib.sha256(data).hexdigest() == BEFORE[name]
    assert dump_graph(load_graph(data)) == data

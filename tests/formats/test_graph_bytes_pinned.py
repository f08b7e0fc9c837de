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

# Re-pinned when issue 18 changed GRAPH.md (its digest is in every graph file) and discovery, and
# again when ADR 0021 widened edge ids (format v3). Main's v2 bytes of all three builds, with every
# edge id re-derived by the v3 rule and the version set to 3, are exactly these bytes: nothing but
# the edge ids and the version changed.
BEFORE = {
    "demo": "d6cffada56ec42f4d85a0a620a52d7392dbd2caaa0730eadff30dac3c07dcab6",
    "water": "e050eda0e81022a0e19d96c3e14a8651f04968b1c47c7d84426fbd6cca61e8c2",
    "generated": "d024351144385d98cbebad5965a17c7b950bc25e5ffb445c4cb7bf194e18a44e",
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

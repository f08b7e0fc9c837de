"""The synthetic graph generator: deterministic, legal, round-trippable, and a planted closure of known size."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections import Counter, deque

import pytest

from contextmesh.core.errors import IdentityError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import is_auto_decision_id
from contextmesh.core.model import EdgeRecord, NodeRecord, Provenance, construct_record
from contextmesh.core.ontology import ONTOLOGY
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.testing import TYPE_MIX, generate_graph, plant_closure

SMALL = 600  # big enough for every edge recipe and a few hubs, small enough to stay fast


def falls_with(graph: ContextGraph, root: str) -> set[str]:
    """Every node that falls when ``root`` falls, following GRAPH.md's invalidation directions."""
    fallen = {root}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        reached = [e.src for e in graph.in_edges(node, live_only=False) if ONTOLOGY.invalidation[e.type] == "backward"]
        reached += [e.dst for e in graph.out_edges(node, live_only=False) if ONTOLOGY.invalidation[e.type] == "forward"]
        for other in reached:
            if other not in fallen:
                fallen.add(other)
                queue.append(other)
    return fallen - {root}


def test_same_seed_gives_the_same_bytes() -> None:
    assert dump_graph(generate_graph(SMALL, seed=7)) == dump_graph(generate_graph(SMALL, seed=7))


def test_different_seeds_give_different_graphs() -> None:
    assert dump_graph(generate_graph(SMALL, seed=7)) != dump_graph(generate_graph(SMALL, seed=8))


def test_embeddings_do_not_change_the_structure() -> None:
    with_vectors = generate_graph(SMALL, seed=3)
    without = generate_graph(SMALL, seed=3, embeddings=False)
    assert list(with_vectors.edges) == list(without.edges)
    assert [n.label for n in with_vectors] == [n.label for n in without]
    assert all(n.embedding is None for n in without)


def test_counts_follow_the_arguments_and_the_type_mix() -> None:
    graph = generate_graph(1000, 3000, seed=1)
    assert len(graph.nodes) == 1000
    assert len(graph.edges) == 3000
    assert graph.type_counts() == {t: 1000 * share // 100 for t, share in TYPE_MIX}
    assert len(generate_graph(200, seed=1).edges) == 1000  # default: five edges a node


@pytest.mark.parametrize("nodes", [0, 1, 2, 3, 7, 25])
def test_tiny_graphs_are_still_legal(nodes: int) -> None:
    graph = generate_graph(nodes, seed=nodes)
    assert len(graph.nodes) == nodes
    data = dump_graph(graph)
    assert dump_graph(load_graph(data)) == data


def test_every_edge_is_a_legal_pair_and_the_graph_round_trips() -> None:
    graph = generate_graph(SMALL, seed=11)
    for edge in graph.edges.values():
        pair = (graph.node(edge.src).type, graph.node(edge.dst).type)
        assert pair in ONTOLOGY.signatures[edge.type], (edge.type, pair)
    assert graph.untyped_edges == 0
    data = dump_graph(graph)
    assert dump_graph(load_graph(data)) == data


def test_nodes_carry_what_their_type_requires() -> None:
    graph = generate_graph(SMALL, seed=5)
    dates = [n.attrs["retrieved_at"] for n in graph.by_type("source")]
    assert None in dates
    assert all(d is None or (isinstance(d, str) and d.startswith("2024-") and len(d) == 10) for d in dates)
    assert all(isinstance(n.attrs["origin"], str) for n in graph.by_type("source"))
    seen = set()
    for node in graph:
        seen.add(node.id)
        if node.type in {"claim", "decision"}:
            assert node.provenance is not None
            assert graph.node(node.provenance.source_id).type == "source"
            assert node.provenance.source_id in seen  # a source inserted before the node
        if node.type == "decision":
            assert is_auto_decision_id(node.id)
            assert node.attrs["decision_identity"] == "auto"
            assert isinstance(node.attrs["rationale"], str)
        if node.type == "assumption":
            record = graph.assumptions[node.id]
            assert (record.status, record.version) == ("active", 1)
        if node.type in {"source", "claim", "entity", "evidence"}:
            assert node.embedding is not None
            assert node.embedding.startswith("i8:")


def test_degrees_are_skewed() -> None:
    graph = generate_graph(3000, seed=2)
    degrees = sorted(graph.degree(n) for n in graph.nodes)
    median = degrees[len(degrees) // 2]
    assert degrees[-1] >= 10 * median  # a few hubs
    assert Counter(degrees).most_common(1)[0][0] < 10  # and a long tail of small degrees


def test_same_type_edges_never_form_a_cycle() -> None:
    graph = generate_graph(SMALL, seed=4)
    for edge in graph.edges.values():
        if graph.node(edge.src).type == graph.node(edge.dst).type:
            assert graph.seq(edge.src) > graph.seq(edge.dst)


_CHILD = (
    "import hashlib, sys\n"
    "from contextmesh.formats.graph_file import dump_graph\n"
    "from contextmesh.testing import generate_graph, plant_closure\n"
    "g = generate_graph(400, seed=21)\n"
    "plant_closure(g, 30, seed=4)\n"
    "sys.stdout.write(hashlib.sha256(dump_graph(g)).hexdigest())\n"
)


def test_bytes_do_not_depend_on_the_hash_seed() -> None:
    digests = set()
    for hash_seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True, timeout=120
        )
        digests.add(done.stdout)
    here = generate_graph(400, seed=21)
    plant_closure(here, 30, seed=4)
    digests.add(hashlib.sha256(dump_graph(here)).hexdigest())
    assert len(digests) == 1


@pytest.mark.parametrize("size", [1, 2, 10, 100])
def test_plant_closure_adds_an_assumption_with_the_requested_blast_radius(size: int) -> None:
    graph = generate_graph(SMALL, seed=9)
    before = set(graph.nodes)
    assumption_id = plant_closure(graph, size, seed=1)
    assert graph.node(assumption_id).type == "assumption"
    assert graph.assumptions[assumption_id].status == "active"
    fallen = falls_with(graph, assumption_id)
    assert abs(len(fallen) - size) <= max(1, size // 10)
    assert fallen.isdisjoint(before)  # nothing of the original graph falls with it
    data = dump_graph(graph)
    assert dump_graph(load_graph(data)) == data


def test_plant_closure_is_deep_and_reaches_into_the_graph() -> None:
    graph = generate_graph(SMALL, seed=9)
    before = set(graph.nodes)
    assumption_id = plant_closure(graph, 100, seed=2)
    planted = falls_with(graph, assumption_id)
    types = Counter(graph.node(n).type for n in planted)
    assert set(types) == {"decision", "claim", "entity"}
    touching = [e for n in planted for e in graph.out_edges(n, live_only=False) if e.dst in before]
    assert touching  # planted nodes mention and cite the existing graph
    assert all(ONTOLOGY.invalidation[e.type] == "none" for e in touching)


def test_plant_closure_works_on_an_empty_graph_and_refuses_a_repeat() -> None:
    graph = ContextGraph()
    assumption_id = plant_closure(graph, 20, seed=3)
    assert len(falls_with(graph, assumption_id)) == 20
    with pytest.raises(IdentityError):
        plant_closure(graph, 20, seed=3)


def test_plant_closure_is_deterministic() -> None:
    first, second = generate_graph(SMALL, seed=9), generate_graph(SMALL, seed=9)
    assert plant_closure(first, 50, seed=6) == plant_closure(second, 50, seed=6)
    assert dump_graph(first) == dump_graph(second)


def test_fast_record_construction_matches_model_construct() -> None:
    # Loaders build provenances with construct_record; it must be indistinguishable from pydantic's,
    # apart from sharing one set of field names between instances.
    fields = {"source_id": "source:s", "span": (1, 5), "extractor": "synthetic", "checks": (), "recorded_at_build": 0}
    fast, slow = construct_record(Provenance, **fields), Provenance.model_construct(**fields)
    assert fast == slow == Provenance(**fields)
    assert repr(fast) == repr(slow)
    assert fast.__pydantic_fields_set__ == slow.__pydantic_fields_set__
    assert fast.model_dump() == slow.model_dump()
    assert construct_record(Provenance, **fields).__pydantic_fields_set__ is fast.__pydantic_fields_set__
    partial = construct_record(Provenance, source_id="source:s")  # not every field: falls back
    assert partial == Provenance.model_construct(source_id="source:s")


def test_slotted_records_validate_and_construct_alike() -> None:
    edge = {
        "id": "edge:x",
        "src": "a",
        "dst": "b",
        "type": "mentions",
        "evidence_ids": (),
        "weight": 1.0,
        "build": 0,
        "assumption_id": None,
        "traversals": 0,
        "invalidated": False,
    }
    built, validated, constructed = (
        EdgeRecord(**edge),
        EdgeRecord.model_validate(edge),
        EdgeRecord.model_construct(**edge),
    )
    assert built == validated == constructed
    assert repr(built) == repr(validated)
    assert built.model_dump() == edge
    assert not hasattr(built, "__dict__")  # slotted: no per-record dictionary
    assert built.model_copy(update={"weight": 2.0}).weight == 2.0 and built.weight == 1.0
    partial = NodeRecord.model_construct(id="n", type="entity")  # fields not given stay unset
    assert partial == NodeRecord.model_construct(id="n", type="entity")
    assert partial != NodeRecord.model_construct(id="n", type="claim")

"""The ``contextmesh.graph`` v2 file: byte-exact round trips, order, and a strict loader.

The datasets live in ``tests/graph_file_cases.py``: one complete valid graph, a generated
corruption matrix over every field of every record type, and hand-named semantic cases.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import graph_file_cases as cases
import pytest
import rfc8785

from contextmesh.core import vectors
from contextmesh.core.decision_identity import decision_fingerprint
from contextmesh.core.errors import CanonicalError, ContextMeshError, SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import edge_id
from contextmesh.core.model import Provenance
from contextmesh.core.ontology import ONTOLOGY
from contextmesh.formats.graph_file import dump_graph, graph_to_dict, load_graph, ontology_digest

# -- the valid file ---------------------------------------------------------------------------------


def test_valid_file_round_trips_byte_for_byte() -> None:
    assert dump_graph(load_graph(cases.FIXTURE)) == cases.FIXTURE


def test_building_the_fixture_twice_gives_the_same_bytes() -> None:
    assert dump_graph(cases.build_graph()) == cases.FIXTURE


def test_file_is_sorted_compact_utf8_json_with_one_trailing_newline() -> None:
    # An independent writer (the standard library, keys sorted, no spaces) yields the same bytes.
    assert cases.encode(cases.document()) == cases.FIXTURE
    assert cases.FIXTURE.endswith(b"}\n")
    assert not cases.FIXTURE.endswith(b"\n\n")
    assert "α-store".encode() in cases.FIXTURE  # non-ASCII is written as UTF-8, not escaped


def test_fixture_exercises_every_part_of_the_format() -> None:
    graph = load_graph(cases.FIXTURE)
    assert {n.type for n in graph.nodes.values()} == set(ONTOLOGY.node_types)
    identities = {n.attrs["decision_identity"] for n in graph.by_type("decision", live_only=False)}
    assert identities == {"explicit", "auto"}
    assert {a.status for a in graph.assumptions.values()} == {"active", "superseded", "rejected"}
    provenances = [n.provenance for n in graph.nodes.values()]
    assert None in provenances
    assert any(p is not None and p.span is None for p in provenances)
    assert any(p is not None and p.span is not None for p in provenances)
    assert any(n.embedding for n in graph.nodes.values())
    assert any(n.embedding is None for n in graph.nodes.values())
    assert any(n.pruned for n in graph.nodes.values())
    assert any(n.invalidated for n in graph.nodes.values())
    assert any(e.invalidated and e.assumption_id == cases.FITS for e in graph.edges.values())
    assert any(n.walks > 1 for n in graph.nodes.values())
    assert any(e.traversals > 0 for e in graph.edges.values())
    assert any(e.weight != 1.0 for e in graph.edges.values())
    assert any(e.evidence_ids for e in graph.edges.values())
    assert graph.find_edge(cases.NEWER, "supersedes", cases.OLDER) is not None
    assert graph.find_edge(cases.BENCHMARK, "contradicts", cases.FITS) is not None
    assert len({n.build for n in graph.nodes.values()}) > 1


def test_loaded_graph_equals_the_graph_that_was_written() -> None:
    original = cases.build_graph()
    loaded = load_graph(cases.FIXTURE)
    assert graph_to_dict(loaded) == graph_to_dict(original)
    assert list(loaded.nodes) == list(original.nodes)
    assert list(loaded.edges) == list(original.edges)
    # Sequence numbers are not stored: the file keeps the order of nodes among nodes and of edges
    # among edges, which is what every ordered walk compares.
    assert sorted(loaded.nodes, key=loaded.seq) == list(original.nodes)
    assert sorted(loaded.edges, key=loaded.seq) == list(original.edges)


# -- order survives the file ----------------------------------------------------------------------


def _two_mentions(first: str, second: str) -> ContextGraph:
    graph = ContextGraph()
    source = graph.add_node("source", "notes", attrs={"origin": "notes.md", "retrieved_at": "2024-01-01"})
    claim = graph.add_node("claim", "alpha beats bravo", provenance=Provenance(source_id=source.id))
    ids = {}
    for name in ("alpha", "bravo"):
        ids[name] = graph.add_node("entity", name, attrs={"canonical": name, "aliases": []}).id
    graph.add_edge(claim.id, "mentions", ids[first])
    graph.add_edge(claim.id, "mentions", ids[second])
    return graph


@pytest.mark.parametrize(
    ("first", "second"), [("alpha", "bravo"), ("bravo", "alpha")], ids=["alpha-first", "bravo-first"]
)
def test_equal_edges_keep_their_insertion_order_through_a_file(first: str, second: str) -> None:
    graph = _two_mentions(first, second)
    claim = graph.by_type("claim")[0].id
    before = [graph.node(e.dst).label for e in graph.out_edges(claim)]
    loaded = load_graph(dump_graph(graph))
    assert before == [first, second]
    assert [loaded.node(e.dst).label for e in loaded.out_edges(claim)] == [first, second]
    assert dump_graph(loaded) == dump_graph(graph)


def test_edge_order_is_part_of_the_file() -> None:
    assert dump_graph(_two_mentions("alpha", "bravo")) != dump_graph(_two_mentions("bravo", "alpha"))


def test_in_edges_keep_insertion_order_when_sources_interleave() -> None:
    # e1(a→x), e2(b→x), e3(a→x): networkx would group a's two edges; the file must not.
    graph = ContextGraph()
    source = graph.add_node("source", "notes", attrs={"origin": "notes.md", "retrieved_at": "2024-01-01"})
    x = graph.add_node("claim", "x holds", provenance=Provenance(source_id=source.id)).id
    a = graph.add_node("claim", "a doubts x", provenance=Provenance(source_id=source.id)).id
    b = graph.add_node("evidence", "b observed x", attrs={"kind": "log"}).id
    e1 = graph.add_edge(a, "cites", x).id
    e2 = graph.add_edge(b, "supports", x).id
    e3 = graph.add_edge(a, "contradicts", x).id
    loaded = load_graph(dump_graph(graph))
    assert [e.id for e in loaded.in_edges(x)] == [e1, e2, e3]
    assert [e.id for e in loaded.out_edges(a)] == [e1, e3]


# -- what an independent verifier computes agrees with the writer ------------------------------------


def test_ontology_digest_is_sha256_over_rfc8785_of_the_tables() -> None:
    tables = {
        "node_types": list(ONTOLOGY.node_types),
        "must_carry": {t: sorted(ONTOLOGY.must_carry[t]) for t in ONTOLOGY.node_types},
        "edge_types": list(ONTOLOGY.edge_types),
        "pairs": {t: [list(p) for p in sorted(ONTOLOGY.signatures[t])] for t in ONTOLOGY.edge_types},
        "invalidation": dict(ONTOLOGY.invalidation),
    }
    expected = hashlib.sha256(rfc8785.dumps(tables)).hexdigest()
    assert ontology_digest(ONTOLOGY) == expected == cases.document()["ontology"]


def test_every_edge_id_is_recomputable_from_its_endpoints() -> None:
    for edge in cases.document()["edges"]:
        sha1 = [hashlib.sha1(edge[k].encode(), usedforsecurity=False).hexdigest() for k in ("src", "type", "dst")]
        assert edge["id"].endswith(f"-{sha1[0][:16]}{sha1[1][:4]}{sha1[2][:16]}")  # ADR 0021
        assert edge["id"] == edge_id(edge["src"], edge["type"], edge["dst"])


def test_stored_embeddings_decode_to_unit_scaled_signed_bytes() -> None:
    claim = next(n for n in cases.document()["nodes"] if n["id"] == cases.CLAIM)
    raw = base64.b64decode(claim["embedding"].removeprefix("i8:"), validate=True)
    values = [0.9, 0.1, -0.3, 0.2]
    norm = sum(v * v for v in values) ** 0.5
    assert [b - 256 if b > 127 else b for b in raw] == [round(v * 127 / norm) for v in values]
    assert list(vectors.decode(claim["embedding"])) == list(vectors.quantize(values))


def test_explicit_decision_digest_is_recomputable_from_the_file_alone() -> None:
    doc = cases.document()
    node = next(n for n in doc["nodes"] if n["id"] == cases.EXPLICIT_DECISION)
    types = {n["id"]: n["type"] for n in doc["nodes"]}
    covered = {"cites", "derived_from", "produces", "supersedes"}
    edges = sorted(
        {
            (e["type"], e["dst"])
            for e in doc["edges"]
            if e["src"] == node["id"]
            and (e["type"] in covered or (e["type"] == "depends_on" and types[e["dst"]] == "assumption"))
        }
    )
    content = {
        "label": node["label"],
        "rationale": node["attrs"]["rationale"],
        "provenance": node["provenance"],
        "edges": [list(pair) for pair in edges],
    }
    expected = hashlib.sha256(rfc8785.dumps(content)).hexdigest()
    assert node["attrs"]["decision_digest"] == expected
    assert expected == decision_fingerprint(load_graph(cases.FIXTURE), cases.EXPLICIT_DECISION)


# -- refusals ------------------------------------------------------------------------------------


def _params(all_cases: list[cases.Case] | tuple[cases.Case, ...]) -> list[Any]:
    return [
        pytest.param(case, id=case.name, marks=[pytest.mark.xfail(strict=True, reason=case.bug)] if case.bug else [])
        for case in all_cases
    ]


def _check(case: cases.Case) -> None:
    data = case.make()
    if case.path is None:
        graph = load_graph(data)
        assert dump_graph(graph) == data  # accepted means restored faithfully
        return
    with pytest.raises(ContextMeshError) as caught:
        load_graph(data)
    error = caught.value
    # Untrusted input is refused with an input error, never a bare KeyError, TypeError or ValueError.
    assert type(error) in {SnapshotError, CanonicalError}, repr(error)
    assert error.path == case.path, str(error)
    assert case.fragment in str(error)


MATRIX = cases.matrix_cases()


@pytest.mark.parametrize("case", _params(MATRIX))
def test_corrupted_field_is_refused_at_its_path(case: cases.Case) -> None:
    _check(case)


@pytest.mark.parametrize("case", _params(cases.SEMANTIC_CASES))
def test_file_breaking_a_rule_is_refused_at_its_path(case: cases.Case) -> None:
    _check(case)


def test_matrix_covers_every_field_of_every_record_type_with_every_mutation() -> None:
    fields = sum(len(f) for f in cases.RECORD_FIELDS.values())
    assert fields == 7 + 10 + 10 + 10 + 5
    assert len(MATRIX) == fields * len(cases.MUTATIONS)
    assert len({c.name for c in MATRIX}) == len(MATRIX)
    assert len({c.name for c in cases.SEMANTIC_CASES}) == len(cases.SEMANTIC_CASES)


def test_every_spoiled_file_differs_from_the_valid_one() -> None:
    for case in (*MATRIX, *cases.SEMANTIC_CASES):
        data = case.make()
        assert data != cases.FIXTURE, case.name


def test_duplicate_key_dataset_really_holds_the_key_twice() -> None:
    doc = cases.document()
    data = cases.with_duplicate_key(doc, doc["nodes"][0], "walks")
    assert data.count(b'"walks":') == cases.FIXTURE.count(b'"walks":') + 1


def test_failed_load_leaves_a_graph_loaded_before_untouched() -> None:
    good = load_graph(cases.FIXTURE)
    for case in cases.SEMANTIC_CASES:
        if case.path is None or case.bug:
            continue
        with pytest.raises(ContextMeshError):
            load_graph(case.make())
    assert dump_graph(good) == cases.FIXTURE


def test_loading_is_pure_and_returns_a_fresh_graph_each_time() -> None:
    first = load_graph(cases.FIXTURE)
    second = load_graph(cases.FIXTURE)
    assert first is not second
    assert first.nodes[cases.CLAIM] is not second.nodes[cases.CLAIM]
    first.record_walk((cases.CLAIM,), ())
    assert dump_graph(second) == cases.FIXTURE

"""The loader's column pass (``contextmesh/formats/graph_columns.py``) never changes what a load yields.

The column pass only decides: it builds the graph when every column is exactly right and otherwise
hands the file to the per-record pass. So for every file — the valid fixture, the demo, generated
graphs and every spoiled file of ``tests/graph_file_cases.py`` — a load with the column pass and a
load with the per-record pass alone must give the same graph or the same refusal. And the column
pass must really be the one that loads a valid file (else the spoiled files test only the other).
The cheap edge-id derivation it relies on (one fold per node) must equal ``ids.edge_id`` for any text.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import graph_file_cases as cases
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmesh.core import vectors
from contextmesh.core.canonical import text_hash, text_hashes, unshared_copy
from contextmesh.core.errors import ContextMeshError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import edge_body, edge_id, fold, long_body, slug
from contextmesh.demo.knowledge import build_world
from contextmesh.formats import graph_file
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.testing import generate_graph, plant_closure


@contextmanager
def record_pass_only() -> Iterator[None]:
    """Loads inside run the per-record pass alone (the column pass declines everything)."""
    saved = graph_file.fast_nodes, graph_file.fast_edges, graph_file.fast_edge_columns
    graph_file.fast_nodes = graph_file.fast_edges = lambda graph, raw: False  # type: ignore[assignment]
    graph_file.fast_edge_columns = lambda graph, columns: False  # type: ignore[assignment]
    try:
        yield
    finally:
        graph_file.fast_nodes, graph_file.fast_edges, graph_file.fast_edge_columns = saved


@contextmanager
def column_pass_required() -> Iterator[None]:
    """Loads inside fail if the per-record pass is ever reached."""

    def refuse(graph: ContextGraph, raw: list[Any]) -> None:
        raise AssertionError("the per-record pass ran: the column pass declined a valid file")

    saved = graph_file._restore_nodes, graph_file._restore_edges
    graph_file._restore_nodes = graph_file._restore_edges = refuse  # type: ignore[assignment]
    try:
        yield
    finally:
        graph_file._restore_nodes, graph_file._restore_edges = saved


def _valid_files() -> dict[str, bytes]:
    generated = generate_graph(1500, seed=3)
    plant_closure(generated, 40, seed=4)
    return {
        "fixture": cases.FIXTURE,
        "demo": dump_graph(build_world(1).graph),
        "generated": dump_graph(generated),
        # Parted, so the edges are columns (ADR 0034): the column pass over them, short and long sources.
        "generated-parted": dump_graph(generated, part_records=400),
        "demo-parted": dump_graph(build_world(1).graph, part_records=7),
        "generated-no-embeddings": dump_graph(generate_graph(800, seed=5, embeddings=False)),
        "empty": dump_graph(ContextGraph()),
    }


VALID = _valid_files()
PART_RECORDS = {"generated-parted": 400, "demo-parted": 7}


def _dump(name: str, graph: ContextGraph) -> bytes:
    """The graph written as ``VALID[name]`` was: in parts when it was."""
    return dump_graph(graph, part_records=PART_RECORDS.get(name))


def _shape(graph: ContextGraph) -> list[Any]:
    """What a load builds beyond the bytes: adjacency in order, sequence numbers, vectors, bindings."""
    return [
        [
            (
                n.id,
                n._seq,
                n.embedding,
                [e.id for e in graph.out_edges(n.id, live_only=False)],
                [e.id for e in graph.in_edges(n.id, live_only=False)],
            )
            for n in graph.nodes.values()
        ],
        [(e.id, e._seq, e.src, e.dst, e.evidence_ids) for e in graph.edges.values()],
        sorted(graph._bound.items()),
        graph._next_seq,
    ]


@pytest.mark.parametrize("name", sorted(VALID))
def test_the_column_pass_loads_every_valid_file_by_itself(name: str) -> None:
    with column_pass_required():
        graph = load_graph(VALID[name])
    assert _dump(name, graph) == VALID[name]


@pytest.mark.parametrize("name", sorted(VALID))
def test_both_passes_build_the_same_graph(name: str) -> None:
    columns = load_graph(VALID[name])
    with record_pass_only():
        records = load_graph(VALID[name])
    assert _dump(name, columns) == _dump(name, records) == VALID[name]
    assert _shape(columns) == _shape(records)
    # The records hold the graph's own strings, not the parsed file's: one object per id.
    for edge in columns.edges.values():
        assert edge.src is columns.nodes[edge.src].id and edge.dst is columns.nodes[edge.dst].id


def _outcome(data: bytes) -> tuple[str, str | None, str] | bytes:
    try:
        return dump_graph(load_graph(data))
    except ContextMeshError as exc:
        return type(exc).__name__, getattr(exc, "path", None), str(exc)


SPOILED = [case for case in (*cases.matrix_cases(), *cases.SEMANTIC_CASES) if not case.bug]


@pytest.mark.parametrize("case", SPOILED, ids=[case.name for case in SPOILED])
def test_a_spoiled_file_meets_the_same_fate_with_or_without_the_column_pass(case: cases.Case) -> None:
    data = case.make()
    with_columns = _outcome(data)
    with record_pass_only():
        without = _outcome(data)
    assert with_columns == without
    if case.path is not None:
        assert not isinstance(with_columns, bytes) and with_columns[1] == case.path


# -- the edge id from folds ---------------------------------------------------------------------

_TEXT = st.text(
    alphabet=st.sampled_from("abcXYZ019 -_:|.ÉéßİıΣσςﬁ\u0130\u2063中"),
    max_size=140,
)
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


@settings(max_examples=400, deadline=None)
@given(_TEXT, st.sampled_from(("supports", "cites", "derived_from", "-odd--type-", "X")), _TEXT)
def test_an_edge_id_from_folded_endpoints_is_the_edge_id(src: str, edge_type: str, dst: str) -> None:
    body = long_body(fold(src)) or edge_body(fold(src), fold(edge_type), fold(dst))
    tails = text_hash(src, 16) + text_hash(edge_type, 4) + text_hash(dst, 16)
    assert f"edge:{body}-{tails}" == edge_id(src, edge_type, dst)
    assert body == slug(f"{src}|{edge_type}|{dst}", "edge").removeprefix("edge:").rsplit("-", 1)[0]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ9 -.ΣİßΈ\u0301"), max_size=300))
def test_the_slug_reads_only_the_head_it_needs_and_says_what_the_whole_text_says(text: str) -> None:
    body = _NOT_SLUG.sub("-", text.lower()).strip("-")[:40].rstrip("-") or "x"
    assert slug(text, "p") == f"p:{body}-{text_hash(text, 6)}"


def test_text_hashes_are_text_hash_each() -> None:
    texts = ["", "a", "é|x|y", "x" * 500]
    assert text_hashes(texts, 6) == [text_hash(t, 6) for t in texts]


def test_an_unshared_copy_is_equal_and_shares_no_container_or_long_string() -> None:
    original = [["node:one-long-identifier", "node:two-long-identifier"], [{"k": ["v-long-value", 1.5]}]]
    copied = unshared_copy(original)
    assert copied == original
    assert copied[0] is not original[0] and copied[0][0] is not original[0][0]
    assert copied[1][0] is not original[1][0] and copied[1][0]["k"] is not original[1][0]["k"]
    assert copied[1][0]["k"][0] is not original[1][0]["k"][0]
    assert unshared_copy([("a tuple",)]) == [["a tuple"]] and unshared_copy([{1: "int key"}]) is None


# -- the vector store ---------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=12).map(lambda t: "i8:" + t), st.binary(min_size=0, max_size=40)))
def test_checked_bytes_accepts_exactly_what_check_accepts(value: str | bytes) -> None:
    text = value if isinstance(value, str) else vectors.PREFIX + base64.b64encode(value).decode()
    raw = vectors.checked_bytes(text)
    assert (raw is not None) == (vectors.check(text) is None)
    if raw is not None:
        store = vectors.VectorStore()
        handle = store.add(raw)
        assert store.text(handle) == text and store.raw(handle) == raw


def test_the_store_gives_back_every_text_it_took_in_bulk() -> None:
    texts = [vectors.encode([0.1 * i, -0.5, 0.25]) for i in range(5)]
    store = vectors.VectorStore()
    handles = store.add_many([vectors.checked_bytes(t) for t in texts[:2]] + [None] + [vectors.checked_bytes(texts[2])])
    assert handles[2] is None
    assert [store.text(h) for h in handles if h is not None] == texts[:3]

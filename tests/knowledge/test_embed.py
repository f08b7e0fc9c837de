"""Embeddings: the hashed default is a pure function of text; the index scores only stem-sharing nodes."""

from __future__ import annotations

import os
import subprocess
import sys

from contextmesh.core import vectors
from contextmesh.knowledge.embed import DEFAULT_DIMENSIONS, HashedEmbedder, VectorIndex, cosine

TEXTS = [
    "The Index Builder ran out of memory during the nightly rebuild.",
    "Tenant Acme grew sixfold in Q2.",
    "",
]

_SCRIPT = """
import sys
from contextmesh.knowledge.embed import HashedEmbedder
embedder = HashedEmbedder()
for text in sys.argv[1:]:
    print(embedder.embed(text))
"""


def _similarity(embedder: HashedEmbedder, left: str, right: str) -> float:
    return cosine(vectors.decode(embedder.embed(left)), vectors.decode(embedder.embed(right)))


def test_hashed_embedder_is_identical_across_processes_and_hash_seeds() -> None:
    embedder = HashedEmbedder()
    expected = [embedder.embed(text) for text in TEXTS]
    procs = []
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        procs.append(
            subprocess.Popen([sys.executable, "-c", _SCRIPT, *TEXTS], env=env, stdout=subprocess.PIPE, text=True)
        )
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        assert out.splitlines() == expected


def test_hashed_embedder_is_a_pure_function_of_the_text() -> None:
    assert HashedEmbedder().embed(TEXTS[0]) == HashedEmbedder().embed(TEXTS[0])
    assert HashedEmbedder().embed(TEXTS[0]) != HashedEmbedder().embed(TEXTS[1])


def test_embedding_is_compact_and_well_formed() -> None:
    embedder = HashedEmbedder()
    assert embedder.dimensions == DEFAULT_DIMENSIONS
    assert embedder.name == f"hashed-{DEFAULT_DIMENSIONS}"
    stored = embedder.embed(TEXTS[0])
    assert stored.startswith(vectors.PREFIX)
    assert vectors.check(stored) is None
    assert len(vectors.decode(stored)) == DEFAULT_DIMENSIONS
    assert len(stored.encode("utf-8")) <= 1024


def test_text_without_content_words_embeds_to_zeros() -> None:
    stored = HashedEmbedder(dimensions=16).embed("the of and")
    assert list(vectors.decode(stored)) == [0] * 16


def test_similar_texts_are_closer_than_unrelated_ones() -> None:
    embedder = HashedEmbedder()
    anchor = "index builder memory limit"
    similar = _similarity(embedder, anchor, "the index builders hit their memory limits")
    unrelated = _similarity(embedder, anchor, "refund policy for annual plans")
    assert similar > 0.8
    assert similar > unrelated + 0.5
    assert abs(_similarity(embedder, anchor, anchor) - 1.0) < 0.03  # i8 quantisation


def test_embedding_ignores_case_plurals_and_stop_words() -> None:
    embedder = HashedEmbedder()
    assert embedder.embed("The Shard Maps") == embedder.embed("shard map")


def test_features_weight_stems_and_their_trigrams() -> None:
    assert HashedEmbedder().features("maps") == [("w:map", 1.0), ("c:#ma", 0.4), ("c:map", 0.4), ("c:ap#", 0.4)]


# -- the index ----------------------------------------------------------------------------------


def _index(entries: dict[str, str]) -> VectorIndex:
    embedder = HashedEmbedder()
    index = VectorIndex()
    for node_id, text in entries.items():
        index.add(node_id, text, embedder.embed(text))
    return index


def test_search_never_returns_a_node_sharing_no_stem_even_when_it_is_similar() -> None:
    embedder = HashedEmbedder()
    # "indexes" stems to "indexe", not "index": it shares trigrams with the query but no stem.
    entries = {
        "claim:a": "the index builder ran out of memory",
        "claim:b": "indexes",
        "claim:c": "refund policy for annual plans",
        "claim:d": "memory of the replica",
    }
    index = _index(entries)
    query = "index"
    assert _similarity(embedder, query, entries["claim:b"]) > 0.3
    found = index.search(query, embedder.embed(query), k=1000)
    assert [node_id for node_id, _ in found] == ["claim:a"]


def test_search_ranks_candidates_by_cosine_and_stops_at_k() -> None:
    embedder = HashedEmbedder()
    index = _index(
        {
            "claim:far": "memory budget of the replica pool and the staging cluster",
            "claim:near": "index builder memory",
            "claim:none": "refund policy",
        }
    )
    query = "index builder memory"
    found = index.search(query, embedder.embed(query), k=10)
    assert [node_id for node_id, _ in found] == ["claim:near", "claim:far"]
    assert found[0][1] > found[1][1]
    assert index.search(query, embedder.embed(query), k=1) == found[:1]


def test_search_breaks_ties_by_indexing_order() -> None:
    embedder = HashedEmbedder()
    text = "shard map"
    index = VectorIndex()
    for node_id in ("claim:z", "claim:a", "claim:m"):
        index.add(node_id, text, embedder.embed(text))
    found = index.search("shard", embedder.embed("shard"), k=3)
    assert [node_id for node_id, _ in found] == ["claim:z", "claim:a", "claim:m"]


def test_candidates_are_the_nodes_sharing_a_stem_in_first_seen_order() -> None:
    index = _index({"n1": "shard map", "n2": "tenant router", "n3": "shard planner", "n4": "map of tenants"})
    assert index.candidates(["map"]) == ["n1", "n4"]
    assert index.candidates(["tenant", "shard"]) == ["n2", "n4", "n1", "n3"]
    assert index.candidates(["refund"]) == []
    assert len(index) == 4
    assert index.vector("n1") is not None
    assert index.vector("missing") is None

"""The build pipeline on the bundled demo: stage reports add up, drops carry reasons, bytes are stable."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from demo_cache import DemoWorlds

from contextmesh.core.errors import OntologyError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.core.model import Provenance
from contextmesh.demo import CORPUS_PATH
from contextmesh.demo.knowledge import DemoWorld, break_sizing_assumption, build_world
from contextmesh.knowledge.corpus import load_corpus
from contextmesh.knowledge.extract import drop_reason
from contextmesh.knowledge.pipeline import STAGES, BuildResult, build, prune_unwalked

ILLEGAL_PAIR = "rb-2 -mentions-> inc219-3"
NEVER_WALK_PRUNED = {"source", "assumption", "evidence"}


@pytest.fixture(scope="module")
def built() -> BuildResult:
    """The pipeline alone over the demo corpus (no sidecar, no walks)."""
    return build(load_corpus(CORPUS_PATH))


@pytest.fixture(scope="module")
def world(demo_worlds: DemoWorlds) -> Iterator[DemoWorld]:
    """The demo world with its sidecar recorded and two walk rounds.

    Read-only: shared with other modules, and checked unchanged after this one.
    """
    yield demo_worlds.shared(2)
    demo_worlds.check_unchanged(2)


# -- the stage reports ----------------------------------------------------------------------------


def test_stages_run_in_their_written_order(built: BuildResult) -> None:
    assert STAGES == ("CHUNK", "EXTRACT", "RESOLVE", "LINK", "EMBED", "PRUNE")
    assert [stage.name for stage in built.report.stages] == list(STAGES)
    assert [entry["name"] for entry in built.report.to_dict()] == list(STAGES)


def test_chunk_takes_every_span_in_and_makes_one_chunk_per_span(built: BuildResult) -> None:
    corpus = load_corpus(CORPUS_PATH)
    chunk = built.report.stage("CHUNK")
    assert chunk.admitted == len(corpus.spans()) == len(built.chunks)
    assert chunk.dropped == 0
    assert chunk.detail == {"sources": len(corpus.sources), "spans": len(corpus.spans())}
    assert [c.key for c in built.chunks] == [span.key for _, span in corpus.spans()]


def test_extract_admitted_plus_dropped_is_every_span(built: BuildResult) -> None:
    chunk, extract = built.report.stage("CHUNK"), built.report.stage("EXTRACT")
    assert extract.admitted + extract.dropped == chunk.admitted
    assert extract.admitted == len(built.graph.by_type("claim", live_only=False))
    assert extract.dropped > 0
    corpus = load_corpus(CORPUS_PATH)
    texts = {span.key: span.text for _, span in corpus.spans()}
    for drop in extract.drops:
        assert drop.reason == drop_reason(texts[drop.item])


def test_every_resolve_drop_has_a_reason(built: BuildResult) -> None:
    resolve = built.report.stage("RESOLVE")
    assert resolve.dropped > 0
    assert all(drop.reason.strip() for drop in resolve.drops)
    assert all(drop.item.strip() for drop in resolve.drops)
    assert resolve.detail["entities"] == len(load_corpus(CORPUS_PATH).entities)
    assert resolve.detail["surface_forms_folded"] > 0


def test_resolve_admitted_counts_the_mentions_link_writes(built: BuildResult) -> None:
    graph = built.graph
    resolve = built.report.stage("RESOLVE")
    claim_mentions = sum(1 for e in graph.edges.values() if e.type == "mentions" and graph.node(e.src).type == "claim")
    source_mentions = sum(
        1 for e in graph.edges.values() if e.type == "mentions" and graph.node(e.src).type == "source"
    )
    # admitted = claim mentions + title mentions; every title mention is a source mention edge
    assert claim_mentions <= resolve.admitted <= claim_mentions + source_mentions
    assert resolve.admitted > claim_mentions  # some titles name entities too


def test_link_admitted_is_the_edges_written_and_detail_counts_them_by_type(built: BuildResult) -> None:
    link = built.report.stage("LINK")
    assert link.admitted == len(built.graph.edges)
    assert sum(link.detail.values()) == link.admitted
    assert link.detail == {t: n for t, n in built.graph.edge_counts(live_only=False).items() if n}


def test_the_illegal_claim_to_claim_mentions_is_dropped_with_the_ontologys_message(built: BuildResult) -> None:
    link = built.report.stage("LINK")
    matching = [drop for drop in link.drops if drop.item == ILLEGAL_PAIR]
    assert len(matching) == 1
    # the same message the graph gives any claim-[mentions]->claim write
    probe = ContextGraph()
    a = probe.add_node("claim", "a", provenance=Provenance(source_id="s"))
    b = probe.add_node("claim", "b", provenance=Provenance(source_id="s"))
    with pytest.raises(OntologyError) as caught:
        probe.add_edge(a.id, "mentions", b.id)
    assert matching[0].reason == str(caught.value)
    assert "claim-[mentions]->claim is not a legal pair" in matching[0].reason
    assert link.to_dict()["drop_reasons"] == {str(caught.value): 1}
    assert link.dropped == 1


def test_the_illegal_pair_leaves_no_edge_behind(built: BuildResult) -> None:
    claims = {n.attrs["key"]: n.id for n in built.graph.by_type("claim")}
    assert built.graph.find_edge(claims["rb-2"], "mentions", claims["inc219-3"]) is None
    assert built.graph.untyped_edges == 0


def test_embed_admits_every_node_and_prune_accounts_for_all_of_them(built: BuildResult) -> None:
    embed, prune = built.report.stage("EMBED"), built.report.stage("PRUNE")
    assert embed.admitted == len(built.graph)
    assert embed.dropped == 0
    assert prune.admitted + prune.dropped == embed.admitted
    assert prune.admitted == sum(1 for n in built.graph if n.live)


def test_the_unmentioned_catalogue_entity_is_pruned_at_build(built: BuildResult) -> None:
    vector_cache = slug("Vector Cache", "entity")
    node = built.graph.node(vector_cache)
    assert node.pruned
    assert built.graph.degree(vector_cache) == 0
    prune = built.report.stage("PRUNE")
    assert [(d.item, d.reason) for d in prune.drops] == [(vector_cache, "nothing connects it")]


def test_progress_reports_extract_and_embed_to_completion() -> None:
    seen: dict[str, list[tuple[int, int]]] = {}
    build(
        load_corpus(CORPUS_PATH), progress=lambda stage, done, total: seen.setdefault(stage, []).append((done, total))
    )
    assert set(seen) == {"EXTRACT", "EMBED"}
    for ticks in seen.values():
        assert [done for done, _ in ticks] == list(range(1, len(ticks) + 1))
        assert ticks[-1][0] == ticks[-1][1]


# -- the demo world ---------------------------------------------------------------------------------


def test_the_recorded_demo_uses_at_least_eight_edge_types(world: DemoWorld) -> None:
    used = [t for t, n in world.graph.edge_counts().items() if n]
    assert len(used) >= 8, used
    assert world.graph.untyped_edges == 0


def test_every_node_has_an_embedding_of_at_most_one_kilobyte(world: DemoWorld) -> None:
    for node in world.graph:
        assert node.embedding is not None, node.id
        assert len(node.embedding.encode("utf-8")) <= 1024, node.id


def test_prune_unwalked_spares_sources_assumptions_and_evidence_and_never_revives() -> None:
    fresh = build_world(2)
    break_sizing_assumption(fresh)  # adds evidence, invalidates part of the graph
    graph = fresh.graph
    walked = {n.id for n in graph if n.walks}
    assert walked
    protected = [n for n in graph if n.type in NEVER_WALK_PRUNED]
    assert {n.type for n in protected} == NEVER_WALK_PRUNED
    assert all(n.walks == 0 for n in graph if n.type in {"assumption", "evidence"})

    doomed = prune_unwalked(graph, graph.build + 1)
    assert doomed
    assert not any(graph.node(nid).type in NEVER_WALK_PRUNED for nid in doomed)
    assert not any(n.pruned for n in protected)
    assert not set(doomed) & walked
    assert all(graph.node(nid).pruned for nid in doomed)

    entity = next(nid for nid in doomed if graph.node(nid).type == "entity")
    with pytest.raises(OntologyError, match="never revived"):
        graph.revive(entity)
    assert graph.node(entity).pruned
    assert prune_unwalked(graph, graph.build + 1) == []
    assert all(graph.node(nid).pruned for nid in doomed)


def test_a_build_pruned_entity_is_never_revived(world: DemoWorld) -> None:
    vector_cache = slug("Vector Cache", "entity")
    with pytest.raises(OntologyError, match="never revived"):
        world.graph.revive(vector_cache)


def test_prune_unwalked_judges_only_nodes_older_than_the_window() -> None:
    graph = ContextGraph()
    graph.next_build()
    src = graph.add_node("source", "notes", attrs={"origin": "t", "retrieved_at": None})
    old = graph.add_node("claim", "old claim", provenance=Provenance(source_id=src.id))
    walked = graph.add_node("claim", "walked claim", provenance=Provenance(source_id=src.id))
    graph.add_node("assumption", "hosts are trusted", attrs={"status": "active", "version": 1})
    graph.add_node("evidence", "an observation", attrs={"kind": "observation"})
    graph.record_walk([walked.id], [])
    graph.next_build()
    new = graph.add_node("claim", "new claim", provenance=Provenance(source_id=src.id))
    assert prune_unwalked(graph, graph.build) == [old.id]
    assert not graph.node(new.id).pruned
    assert not graph.node(walked.id).pruned


# -- determinism --------------------------------------------------------------------------------------

_DUMP = """
import hashlib
from contextmesh.demo.knowledge import build_world
from contextmesh.formats.graph_file import dump_graph
print(hashlib.sha256(dump_graph(build_world(2).result.graph)).hexdigest())
"""


def test_the_demo_build_is_byte_identical_under_any_hash_seed() -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _DUMP],
            env={**os.environ, "PYTHONHASHSEED": seed},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in ("0", "1", "2718281")
    ]
    digests = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        digests.append(out.strip())
    assert len(digests[0]) == 64
    assert len(set(digests)) == 1, digests


def test_the_in_process_build_matches_its_own_bytes(world: DemoWorld) -> None:
    from contextmesh.formats.graph_file import dump_graph

    again = build_world(2)
    assert hashlib.sha256(dump_graph(again.graph)).digest() == hashlib.sha256(dump_graph(world.graph)).digest()

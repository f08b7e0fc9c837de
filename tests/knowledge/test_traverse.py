"""Walks on small hand-built graphs: the four dead ends, telemetry-only writes, order, rendering."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from contextmesh.core.errors import OntologyError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import NodeRecord, Provenance
from contextmesh.formats.graph_file import graph_to_dict
from contextmesh.knowledge.embed import HashedEmbedder
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.traverse import DEAD_END_REASONS, Step, Walker, WalkerSettings

EMBEDDER = HashedEmbedder(dimensions=64)


class Mesh:
    """A tiny graph and resolver built by hand, every node embedded."""

    def __init__(self) -> None:
        self.graph = ContextGraph()
        self.graph.next_build()
        self.resolver = Resolver()
        self.notes = self._put(
            self.graph.add_node("source", "Ops notes", attrs={"origin": "test", "retrieved_at": None})
        )

    def _put(self, node: NodeRecord) -> NodeRecord:
        node.embedding = EMBEDDER.embed(node.label)
        return node

    def entity(self, name: str, *aliases: str) -> NodeRecord:
        node = self.graph.add_node("entity", name, attrs={"canonical": name, "aliases": list(aliases)})
        self.resolver.register(node.id, name, aliases)
        return self._put(node)

    def claim(self, text: str, *mentions: NodeRecord, source: NodeRecord | None = None) -> NodeRecord:
        where = source or self.notes
        node = self.graph.add_node("claim", text, provenance=Provenance(source_id=where.id))
        self.graph.add_edge(node.id, "derived_from", where.id)
        for entity in mentions:
            self.graph.add_edge(node.id, "mentions", entity.id)
        return self._put(node)

    def walker(self) -> Walker:
        return Walker(self.graph, self.resolver, embedder=EMBEDDER)


def _without_telemetry(graph: ContextGraph) -> dict[str, Any]:
    data = copy.deepcopy(graph_to_dict(graph))
    for node in data["nodes"]:
        node.pop("walks")
    for edge in data["edges"]:
        edge.pop("traversals")
    return data


def _telemetry(graph: ContextGraph) -> tuple[int, int]:
    return sum(n.walks for n in graph), sum(e.traversals for e in graph.edges.values())


# -- the four dead ends -----------------------------------------------------------------------------


def test_no_resolved_mention_is_entity_unresolved_listing_the_words_tried() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    mesh.claim("The Index Builder ran out of memory at night.", builder)
    walk = mesh.walker().ask("What is the refund policy for annual plans?")
    assert walk.dead_end is not None
    assert walk.dead_end.reason == "entity_unresolved"
    for word in ("refund", "policy", "annual", "plans"):
        assert f"'{word}'" in walk.dead_end.detail
    assert walk.answer_id is None
    assert walk.path == []
    assert walk.mentions == []


def test_no_allowed_edge_leaving_the_entity_is_no_typed_edge() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    mesh.claim("The Index Builder ran out of memory at night.", builder)
    walker = mesh.walker()
    walk = walker.ask("Why did the Index Builder fail?", policy=("cites",))
    assert walk.dead_end is not None
    assert walk.dead_end.reason == "no_typed_edge"
    assert "'Index Builder'" in walk.dead_end.detail
    # the same question with the default policy answers
    assert walker.ask("Why did the Index Builder fail?").dead_end is None


def test_reaching_only_an_entity_and_a_source_is_wrong_node_type() -> None:
    mesh = Mesh()
    planner = mesh.entity("Shard Planner")
    mesh.graph.add_edge(planner.id, "derived_from", mesh.notes.id)
    walk = mesh.walker().ask("What does the Shard Planner do?")
    assert walk.dead_end is not None
    assert walk.dead_end.reason == "wrong_node_type"
    assert "1 entity, 1 source" in walk.dead_end.detail
    assert "'Shard Planner'" in walk.dead_end.detail


def test_a_pruned_seed_is_pruned_too_early() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    mesh.claim("The Index Builder ran out of memory at night.", builder)
    mesh.graph.prune([builder.id])
    walk = mesh.walker().ask("Why did the Index Builder fail?")
    assert walk.dead_end is not None
    assert walk.dead_end.reason == "pruned_too_early"
    assert "'Index Builder'" in walk.dead_end.detail
    assert "no longer walkable" in walk.dead_end.detail


def test_an_invalidated_claim_the_walk_needed_is_pruned_too_early() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    claim = mesh.claim("The Index Builder ran out of memory at night.", builder)
    mesh.graph.invalidate([claim.id])
    walk = mesh.walker().ask("Why did the Index Builder fail?")
    assert walk.dead_end is not None
    assert walk.dead_end.reason == "pruned_too_early"
    assert f"claim '{claim.label}' (invalidated)" in walk.dead_end.detail
    assert "'Index Builder'" in walk.dead_end.detail


def test_a_pruned_claim_the_walk_needed_is_pruned_too_early() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    claim = mesh.claim("The Index Builder ran out of memory at night.", builder)
    mesh.graph.prune([claim.id])
    walk = mesh.walker().ask("Why did the Index Builder fail?")
    assert walk.dead_end is not None
    assert walk.dead_end.reason == "pruned_too_early"
    assert f"claim '{claim.label}' (pruned)" in walk.dead_end.detail


def test_an_invalidated_claim_is_never_on_a_path_when_another_answers() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    fallen = mesh.claim("The Index Builder ran out of memory at night.", builder)
    standing = mesh.claim("The Index Builder runs on the build pool.", builder)
    mesh.graph.invalidate([fallen.id])
    walk = mesh.walker().ask("Why did the Index Builder run out of memory?")
    assert walk.answer_id == standing.id
    assert fallen.id not in {step.node_id for step in walk.path}


# -- answers ----------------------------------------------------------------------------------------


def test_a_walk_moves_only_walk_and_traversal_telemetry() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder", "IB")
    mesh.claim("The Index Builder ran out of memory at night.", builder)
    mesh.claim("The IB runs in one pod.", builder)
    before = _without_telemetry(mesh.graph)
    before_counts = _telemetry(mesh.graph)
    walker = mesh.walker()
    walk = walker.ask("Why did the Index Builder run out of memory?")
    assert walk.dead_end is None
    walker.ask("What is the refund policy?")  # a dead end writes nothing
    assert _without_telemetry(mesh.graph) == before
    nodes_walked, edges_traversed = _telemetry(mesh.graph)
    assert nodes_walked == before_counts[0] + len(walk.path)
    assert edges_traversed == before_counts[1] + walk.hops


def test_a_dead_end_moves_no_telemetry() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    mesh.claim("The Index Builder ran out of memory at night.", builder)
    walker = mesh.walker()
    walker.ask("Why did the Index Builder fail?", policy=("cites",))
    walker.ask("What about refunds?")
    assert _telemetry(mesh.graph) == (0, 0)


@pytest.mark.parametrize("first", ["Alpha", "Bravo"])
def test_equal_candidates_break_ties_by_insertion_order(first: str) -> None:
    mesh = Mesh()
    kettle = mesh.entity("Kettle")
    second = "Bravo" if first == "Alpha" else "Alpha"
    a = mesh.claim(f"{first} kettle reading is stable.", kettle)
    mesh.claim(f"{second} kettle reading is stable.", kettle)
    walk = mesh.walker().ask("What about the Kettle?")
    assert walk.answer_id == a.id
    assert walk.answer is not None
    assert walk.answer.startswith(first)


def test_a_walk_is_deterministic() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    for i in range(5):
        mesh.claim(f"Index Builder fact number {i} is recorded here.", builder)
    walker = mesh.walker()
    first = walker.ask("What is recorded about the Index Builder?")
    second = walker.ask("What is recorded about the Index Builder?")
    assert first.to_dict() == second.to_dict()


def test_the_path_renders_forward_and_backward_edges() -> None:
    mesh = Mesh()
    planner = mesh.entity("Shard Planner")
    mesh.graph.add_edge(planner.id, "derived_from", mesh.notes.id)
    claim = mesh.claim("Shards are rewritten every evening before the build.")
    walk = mesh.walker().ask("What does the Shard Planner rewrite?")
    assert walk.dead_end is None
    assert walk.answer_id == claim.id
    assert [step.render() for step in walk.path] == [
        "(entity) Shard Planner",
        "-[derived_from]-> (source) Ops notes",
        f"<-[derived_from]- (claim) {claim.label}",
    ]
    assert walk.hops == 2
    path = walk.to_dict()["path"]
    assert isinstance(path, list)
    assert [s["direction"] for s in path] == [None, "out", "in"]


def test_a_mention_edge_into_the_claim_renders_backward() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    claim = mesh.claim("The Index Builder ran out of memory at night.", builder)
    walk = mesh.walker().ask("Why did the Index Builder run out of memory?")
    assert [step.render() for step in walk.path] == [
        "(entity) Index Builder",
        f"<-[mentions]- (claim) {claim.label}",
    ]
    assert [step.render() for step in walk.justification] == ["-[derived_from]-> (source) Ops notes"]


def test_step_render_marks_the_start_without_an_arrow() -> None:
    assert Step("n", "claim", "text").render() == "(claim) text"
    assert Step("n", "claim", "text", "cites", "e", True).render() == "-[cites]-> (claim) text"
    assert Step("n", "claim", "text", "cites", "e", False).render() == "<-[cites]- (claim) text"


def test_a_policy_naming_an_unknown_edge_type_raises() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    mesh.claim("The Index Builder ran out of memory at night.", builder)
    walker = mesh.walker()
    with pytest.raises(OntologyError, match="teleports"):
        walker.ask("Why did the Index Builder fail?", policy=("mentions", "teleports"))
    assert walker.walks == []


# -- what the walks add up to -----------------------------------------------------------------------


def test_dead_end_ledger_always_has_all_four_reasons() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    mesh.claim("The Index Builder ran out of memory at night.", builder)
    walker = mesh.walker()
    assert list(walker.dead_end_ledger()) == list(DEAD_END_REASONS)
    assert walker.dead_end_ledger() == dict.fromkeys(DEAD_END_REASONS, 0)
    walker.ask("What about refunds?")
    walker.ask("What about refunds?")
    walker.ask("Why did the Index Builder fail?", policy=("cites",))
    walker.ask("Why did the Index Builder fail?")
    assert walker.dead_end_ledger() == {
        "entity_unresolved": 2,
        "no_typed_edge": 1,
        "wrong_node_type": 0,
        "pruned_too_early": 0,
    }


def test_hop_histogram_counts_answered_walks_only() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    planner = mesh.entity("Shard Planner")
    mesh.graph.add_edge(planner.id, "derived_from", mesh.notes.id)
    mesh.claim("The Index Builder ran out of memory at night.", builder)
    walker = mesh.walker()
    walker.ask("Why did the Index Builder run out of memory?")  # 1 hop
    walker.ask("Why did the Index Builder run out of memory?")  # 1 hop
    walker.ask("What does the Shard Planner do?")  # 2 hops through the source
    walker.ask("What about refunds?")  # dead end: 0 hops, not counted
    walker.ask("Why did the Index Builder fail?", policy=("cites",))  # dead end
    assert walker.hop_histogram() == {1: 2, 2: 1}
    assert walker.resolved_rate == pytest.approx(4 / 5)


def test_two_resolved_entities_with_no_allowed_edge_are_no_typed_edge() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    mesh.entity("Shard Planner")
    mesh.claim("The Index Builder ran out of memory at night.", builder)
    walk = mesh.walker().ask("Did the Index Builder call the Shard Planner?", policy=("cites",))
    assert walk.dead_end is not None
    assert walk.dead_end.reason == "no_typed_edge"


def test_a_settings_policy_naming_an_unknown_edge_type_raises() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    mesh.claim("The Index Builder ran out of memory at night.", builder)
    with pytest.raises(OntologyError, match="teleports"):
        walker = Walker(mesh.graph, mesh.resolver, settings=WalkerSettings(policy=("teleports",)))
        walker.ask("Why did the Index Builder fail?")


def test_a_walk_keeps_the_head_of_the_ranking_it_chose_from_best_first_and_out_of_its_json() -> None:
    mesh = Mesh()
    builder = mesh.entity("Index Builder")
    other = mesh.claim("The Index Builder runs on the build pool.", builder)
    fallen = mesh.claim("The Index Builder ran out of memory at night.", builder)
    right = mesh.claim("The Index Builder ran out of memory at night after the corpus doubled.", builder)
    mesh.graph.invalidate([fallen.id])
    walk = mesh.walker().ask("Why did the Index Builder run out of memory after the corpus doubled?")
    assert walk.answer_id == right.id
    assert walk.considered[0] == right.id  # the answer heads what was considered
    assert other.id in walk.considered[1:]  # and the one that lost is placed after it
    assert fallen.id not in walk.considered  # what cannot be walked was never a candidate
    assert "considered" not in walk.to_dict()
    dead = mesh.walker().ask("What about refunds?")
    assert dead.dead_end is not None and dead.considered == []

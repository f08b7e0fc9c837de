"""Invalidation: the closure of a rejected assumption, its reason chains and what it preserves.

Most tests here are properties over random legal typed graphs (``belief_graphs``), checked
against a reference closure written independently below: a plain fixpoint over the edge list
with the direction table spelled out by hand, not read through the engine.
"""

from __future__ import annotations

import re
from collections import deque

import pytest
from belief_graphs import (
    BeliefGraph,
    add_claim,
    add_entity,
    add_evidence,
    add_source,
    belief_graphs,
    custom_ontology,
    snapshot,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.belief.invalidation import PRESERVED_LIST_LIMIT, blast_radius, closure_from
from contextmesh.core.canonical import digest
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import Provenance
from contextmesh.core.ontology import ONTOLOGY, Ontology
from contextmesh.formats.graph_file import graph_from_dict, graph_to_dict

# GRAPH.md's Invalidation column, written out by hand so the reference does not trust the parser.
DEFAULT_DIRECTIONS = {"derived_from": "backward", "depends_on": "backward", "produces": "forward"}
# The edited ontology used below: produces carries nothing, mentions carries forward.
CUSTOM_CHANGES = {"produces": "none", "mentions": "forward"}
CUSTOM_DIRECTIONS = {"derived_from": "backward", "depends_on": "backward", "mentions": "forward"}
CUSTOM = custom_ontology(CUSTOM_CHANGES)
NON_PROPAGATING = ("mentions", "cites", "supports", "supersedes", "contradicts", "justified_by", "resolves_to")

_BACK = re.compile(r"^<-([a-z_]+)-$")
_FORWARD = re.compile(r"^-([a-z_]+)->$")
_SETTINGS = settings(max_examples=60, deadline=None)


# -- the independent reference ------------------------------------------------------------------


def _live_nodes(graph: ContextGraph) -> set[str]:
    return {nid for nid, n in graph.nodes.items() if not n.pruned and not n.invalidated}


def _live_edges(graph: ContextGraph) -> list[tuple[str, str, str]]:
    live = _live_nodes(graph)
    return [
        (e.src, e.type, e.dst) for e in graph.edges.values() if not e.invalidated and e.src in live and e.dst in live
    ]


def reference_closure(graph: ContextGraph, assumption: str, directions: dict[str, str]) -> set[str]:
    """Least fixpoint: a node falls if it has a live backward-type out-edge to a fallen node or a
    live forward-type in-edge from a fallen node; an assumption never falls as a backward source."""
    if assumption not in _live_nodes(graph):
        return set()
    edges = _live_edges(graph)
    fallen = {assumption}
    changed = True
    while changed:
        changed = False
        for src, edge_type, dst in edges:
            way = directions.get(edge_type, "none")
            if way == "backward" and dst in fallen and src not in fallen and graph.nodes[src].type != "assumption":
                fallen.add(src)
                changed = True
            elif way == "forward" and src in fallen and dst not in fallen:
                fallen.add(dst)
                changed = True
    return fallen - {assumption}


def reference_distances(graph: ContextGraph, assumption: str, directions: dict[str, str]) -> dict[str, int]:
    """Fewest propagating hops from the assumption to each fallen node (plain BFS)."""
    step: dict[str, list[str]] = {}
    for src, edge_type, dst in _live_edges(graph):
        way = directions.get(edge_type, "none")
        if way == "backward" and graph.nodes[src].type != "assumption":
            step.setdefault(dst, []).append(src)
        elif way == "forward":
            step.setdefault(src, []).append(dst)
    distance = {assumption: 0}
    queue = deque([assumption])
    while queue:
        here = queue.popleft()
        for there in step.get(here, ()):
            if there not in distance:
                distance[there] = distance[here] + 1
                queue.append(there)
    del distance[assumption]
    return distance


def check_chain(drawn: BeliefGraph, node_id: str, chain: list[str], directions: dict[str, str]) -> None:
    """Walk a reason chain token by token and find every step as a live edge of the graph."""
    graph = drawn.graph
    start = graph.node(drawn.target)
    assert chain[0] == f"assumption({start.label})"
    assert len(chain) % 2 == 1 and len(chain) >= 3
    here = drawn.target
    for token, label in zip(chain[1::2], chain[2::2], strict=True):
        there = drawn.node_by_label(label)
        if back := _BACK.match(token):
            edge = graph.find_edge(there, back.group(1), here)
            assert directions.get(back.group(1)) == "backward", token
        else:
            forward = _FORWARD.match(token)
            assert forward is not None, f"unreadable chain token {token!r}"
            edge = graph.find_edge(here, forward.group(1), there)
            assert directions.get(forward.group(1)) == "forward", token
        assert edge is not None and graph.edge_is_live(edge), f"{here} {token} {there} is not a live edge"
        here = there
    assert here == node_id


# -- properties over generated graphs -----------------------------------------------------------


@_SETTINGS
@given(belief_graphs())
def test_fallen_preserved_and_the_assumption_partition_the_live_nodes(drawn: BeliefGraph) -> None:
    live_before = _live_nodes(drawn.graph)
    report = Assumptions(drawn.graph).reject(drawn.target, evidence_id=drawn.evidence)
    fallen, preserved = set(report.invalidated), set(report.preserved_ids)
    assert len(preserved) == len(report.preserved_ids)
    assert fallen | preserved | {drawn.target} == live_before
    assert not fallen & preserved
    assert drawn.target not in fallen | preserved
    assert all(not drawn.graph.nodes[n].live for n in fallen | {drawn.target})
    assert all(drawn.graph.nodes[n].live for n in preserved)


@_SETTINGS
@given(belief_graphs())
def test_closure_equals_an_independent_fixpoint(drawn: BeliefGraph) -> None:
    expected = reference_closure(drawn.graph, drawn.target, DEFAULT_DIRECTIONS)
    dry = blast_radius(drawn.graph, drawn.target)
    assert set(dry.invalidated) == expected
    report = Assumptions(drawn.graph).reject(drawn.target, evidence_id=drawn.evidence)
    assert report.invalidated == dry.invalidated
    assert report.blast_radius == len(expected)


@_SETTINGS
@given(belief_graphs())
def test_every_chain_starts_at_the_assumption_and_follows_propagating_edges_in_their_direction(
    drawn: BeliefGraph,
) -> None:
    report = blast_radius(drawn.graph, drawn.target)
    for node_id, chain in report.invalidated.items():
        check_chain(drawn, node_id, chain, DEFAULT_DIRECTIONS)
        assert report.why(node_id) == " ".join(chain)


@_SETTINGS
@given(belief_graphs())
def test_every_chain_is_a_shortest_one(drawn: BeliefGraph) -> None:
    report = blast_radius(drawn.graph, drawn.target)
    distances = reference_distances(drawn.graph, drawn.target, DEFAULT_DIRECTIONS)
    assert {n: (len(chain) - 1) // 2 for n, chain in report.invalidated.items()} == distances


@_SETTINGS
@given(belief_graphs())
def test_non_propagating_edges_never_carry_a_rejection(drawn: BeliefGraph) -> None:
    # The same graph with every edge of the seven other types removed falls exactly the same way.
    document = graph_to_dict(drawn.graph)
    document["edges"] = [e for e in document["edges"] if e["type"] not in NON_PROPAGATING]
    stripped = graph_from_dict(document)
    assert set(blast_radius(stripped, drawn.target).invalidated) == set(
        blast_radius(drawn.graph, drawn.target).invalidated
    )


@_SETTINGS
@given(belief_graphs(isolated_target=True))
def test_an_assumption_with_only_non_propagating_edges_has_radius_zero(drawn: BeliefGraph) -> None:
    report = Assumptions(drawn.graph).reject(drawn.target, evidence_id=drawn.evidence)
    assert report.blast_radius == 0
    assert report.invalidated == {}


@_SETTINGS
@given(belief_graphs())
def test_blast_radius_is_a_dry_run(drawn: BeliefGraph) -> None:
    before = snapshot(drawn.graph)
    blast_radius(drawn.graph, drawn.target)
    Assumptions(drawn.graph).blast_radius(drawn.target)
    assert snapshot(drawn.graph) == before


@_SETTINGS
@given(belief_graphs())
def test_rejection_flags_exactly_the_closure_bound_edges_and_edges_between_fallen_nodes(drawn: BeliefGraph) -> None:
    graph = drawn.graph
    expected = reference_closure(graph, drawn.target, DEFAULT_DIRECTIONS) | {drawn.target}
    doomed = {
        e.id
        for e in graph.edges.values()
        if not e.invalidated and ((e.src in expected and e.dst in expected) or e.assumption_id == drawn.target)
    }
    flagged_nodes_before = {n.id for n in graph if n.invalidated}
    flagged_edges_before = {e.id for e in graph.edges.values() if e.invalidated}
    report = Assumptions(graph).reject(drawn.target, evidence_id=drawn.evidence)
    assert set(report.invalidated_edges) == doomed
    assert report.invalidated_edges == sorted(doomed, key=graph.seq)
    assert {n.id for n in graph if n.invalidated} == flagged_nodes_before | expected
    # Besides the doomed edges only the new contradicts edge is written, and it is not flagged.
    contradicts = graph.find_edge(drawn.evidence, "contradicts", drawn.target)
    assert contradicts is not None and not contradicts.invalidated
    assert {e.id for e in graph.edges.values() if e.invalidated} == flagged_edges_before | doomed


@_SETTINGS
@given(belief_graphs(ontology=CUSTOM))
def test_a_custom_ontology_closure_follows_that_ontologys_directions(drawn: BeliefGraph) -> None:
    report = blast_radius(drawn.graph, drawn.target)
    assert set(report.invalidated) == reference_closure(drawn.graph, drawn.target, CUSTOM_DIRECTIONS)
    for node_id, chain in report.invalidated.items():
        check_chain(drawn, node_id, chain, CUSTOM_DIRECTIONS)


@settings(max_examples=40, deadline=None)
@given(belief_graphs())
def test_an_already_rejected_assumption_has_radius_zero(drawn: BeliefGraph) -> None:
    ledger = Assumptions(drawn.graph)
    ledger.reject(drawn.target, evidence_id=drawn.evidence)
    before = snapshot(drawn.graph)
    assert blast_radius(drawn.graph, drawn.target).invalidated == {}
    assert snapshot(drawn.graph) == before


# -- named scenarios ------------------------------------------------------------------------------


def _scenario(ontology: Ontology = ONTOLOGY) -> tuple[ContextGraph, dict[str, str]]:
    """D depends_on A, derived_from C (C derived_from S), produces E; D2 rests on C2 only."""
    graph = ContextGraph(ontology)
    ledger, log = Assumptions(graph), DecisionLog(graph)
    s = add_source(graph, "runbook").id
    a = ledger.assume("argon2 is available on every host").id
    c = add_claim(graph, "argon2 is the recommended hasher", s).id
    graph.add_edge(c, "derived_from", s)
    c2 = add_claim(graph, "sessions expire after a day", s).id
    e = add_entity(graph, "password hasher").id
    prov = Provenance(source_id=s)
    d = log.decide("use argon2", rationale="recommended", provenance=prov, assumptions=[a], rests_on=[c], produces=[e])
    d2 = log.decide("expire sessions daily", rationale="policy", provenance=prov, rests_on=[c2])
    ev = add_evidence(graph, "argon2 missing on host 7").id
    return graph, {"S": s, "A": a, "C": c, "C2": c2, "E": e, "D": d.id, "D2": d2.id, "EV": ev}


def test_rejecting_the_ground_of_a_decision_takes_down_the_decision_and_what_it_produced() -> None:
    graph, ids = _scenario()
    report = Assumptions(graph).reject(ids["A"], evidence_id=ids["EV"])
    assert list(report.invalidated) == [ids["D"], ids["E"]]
    assert report.invalidated[ids["E"]] == [
        "assumption(argon2 is available on every host)",
        "<-depends_on-",
        "use argon2",
        "-produces->",
        "password hasher",
    ]
    for standing in ("S", "C", "C2", "D2", "EV"):
        assert ids[standing] in report.preserved_ids
        assert graph.is_live(ids[standing])
    assert report.why(ids["C"]) == f"{ids['C']} was not invalidated"
    assert report.preserved_count > report.blast_radius


def test_a_custom_ontology_with_produces_marked_none_stops_at_the_decision() -> None:
    default_graph, default_ids = _scenario()
    custom_graph, custom_ids = _scenario(custom_ontology({"produces": "none"}))
    assert set(blast_radius(default_graph, default_ids["A"]).invalidated) == {default_ids["D"], default_ids["E"]}
    assert set(blast_radius(custom_graph, custom_ids["A"]).invalidated) == {custom_ids["D"]}


@pytest.mark.parametrize("rejected", ["first", "second"])
def test_grounds_are_conjunctive_a_decision_falls_when_either_assumption_is_rejected(rejected: str) -> None:
    graph = ContextGraph()
    ledger = Assumptions(graph)
    s = add_source(graph).id
    grounds = {"first": ledger.assume("the quota holds").id, "second": ledger.assume("the region is up").id}
    decision = DecisionLog(graph).decide(
        "ship it", rationale="both hold", provenance=Provenance(source_id=s), assumptions=list(grounds.values())
    )
    evidence = add_evidence(graph).id
    report = ledger.reject(grounds[rejected], evidence_id=evidence)
    assert decision.id in report.invalidated
    assert not graph.is_live(decision.id)
    other = grounds["second" if rejected == "first" else "first"]
    assert ledger.record(other).status == "active"
    assert graph.is_live(other)


def test_report_dict_names_every_field() -> None:
    graph, ids = _scenario()
    data = Assumptions(graph).reject(ids["A"], evidence_id=ids["EV"]).to_dict()
    assert data["assumption_id"] == ids["A"]
    assert data["evidence_id"] == ids["EV"]
    assert data["blast_radius"] == 2
    assert [item["id"] for item in data["invalidated"]] == [ids["D"], ids["E"]]
    live = sorted(n.id for n in graph if n.live)
    assert data["preserved"] == live
    assert data["preserved_count"] == len(live)
    assert data["preserved_digest"] == digest(live)


def _graph_with_preserved(count: int) -> tuple[ContextGraph, str, str]:
    graph = ContextGraph()
    ledger = Assumptions(graph)
    evidence = add_evidence(graph).id  # one preserved node
    assumption = ledger.assume("the cache is warm").id
    for i in range(count - 1):
        graph.add_node("entity", f"e{i}", id=f"entity:e{i}", attrs={"canonical": f"e{i}", "aliases": []})
    return graph, assumption, evidence


@pytest.mark.parametrize("count", [PRESERVED_LIST_LIMIT, PRESERVED_LIST_LIMIT + 1])
def test_preserved_list_is_inlined_up_to_ten_thousand_ids_then_only_its_digest(count: int) -> None:
    graph, assumption, evidence = _graph_with_preserved(count)
    report = Assumptions(graph).reject(assumption, evidence_id=evidence)
    data = report.to_dict()
    expected = sorted(n.id for n in graph if n.live)
    assert len(expected) == count
    assert data["preserved_count"] == count
    assert data["preserved_digest"] == digest(expected) == report.preserved_digest
    if count <= 10_000:
        assert data["preserved"] == expected
    else:
        assert data["preserved"] is None


# -- several seeds at once (a revision superseding claims) ----------------------------------------


def reference_seeded(graph: ContextGraph, seeds: set[str]) -> set[str]:
    """Least fixpoint from several fallen seeds; forward edges carry out of fallen non-seeds only."""
    edges = _live_edges(graph)
    fallen: set[str] = set()
    changed = True
    while changed:
        changed = False
        for src, edge_type, dst in edges:
            way = DEFAULT_DIRECTIONS.get(edge_type, "none")
            down = fallen | seeds
            if way == "backward" and dst in down and src not in down and graph.nodes[src].type != "assumption":
                fallen.add(src)
                changed = True
            elif way == "forward" and src in fallen and dst not in down:
                fallen.add(dst)
                changed = True
    return fallen


@_SETTINGS
@given(belief_graphs(), st.data())
def test_closure_from_several_seeds_equals_an_independent_fixpoint(drawn: BeliefGraph, data: st.DataObject) -> None:
    live = sorted(n for n in _live_nodes(drawn.graph) if drawn.graph.nodes[n].type in {"claim", "source"})
    seeds = data.draw(st.lists(st.sampled_from(live), unique=True, max_size=3)) if live else []
    fallen = closure_from(drawn.graph, {seed: [f"seed({seed})"] for seed in seeds})
    assert set(fallen) == reference_seeded(drawn.graph, set(seeds))
    assert not set(fallen) & set(seeds)
    assert all(chain[0].startswith("seed(") for chain in fallen.values())


@_SETTINGS
@given(belief_graphs())
def test_closure_is_closure_from_its_assumption(drawn: BeliefGraph) -> None:
    start = drawn.graph.node(drawn.target)
    seeded = closure_from(drawn.graph, {drawn.target: [f"assumption({start.label})"]})
    assert seeded == blast_radius(drawn.graph, drawn.target).invalidated

"""Shared builders and hypothesis strategies for the belief-layer tests.

:func:`belief_graphs` draws small random graphs that are legal under an ontology: assumptions;
decisions depending on them and on each other; claims depending on assumptions; decisions that
produce entities and sources; ``derived_from`` chains (decision → claim → source ← entity); and,
between the same nodes, edges of every other legal type (``mentions``, ``cites``, ``supports``,
``supersedes``, ``contradicts``, ``justified_by``, ``resolves_to``). Some nodes are pruned, some
edges already invalidated and some edges bound to the target assumption, so liveness matters.

Every label is unique, so a reason chain (which names nodes by label) maps back to node ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.core.errors import IdentityError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import NodeRecord, Provenance
from contextmesh.core.ontology import ONTOLOGY, Ontology, graph_md_path, parse_ontology
from contextmesh.formats.graph_file import dump_graph

__all__ = [
    "BeliefGraph",
    "add_claim",
    "add_entity",
    "add_evidence",
    "add_source",
    "belief_graphs",
    "custom_ontology",
    "snapshot",
]

_OTHER_EDGES = ("mentions", "cites", "supports", "supersedes", "contradicts", "justified_by", "resolves_to")


# -- plain builders ---------------------------------------------------------------------------


def add_source(graph: ContextGraph, label: str = "design notes") -> NodeRecord:
    return graph.add_node("source", label, attrs={"origin": f"file://{label}", "retrieved_at": "2024-05-01"})


def add_claim(graph: ContextGraph, label: str, source_id: str) -> NodeRecord:
    return graph.add_node("claim", label, provenance=Provenance(source_id=source_id))


def add_entity(graph: ContextGraph, label: str) -> NodeRecord:
    return graph.add_node("entity", label, attrs={"canonical": label, "aliases": []})


def add_evidence(graph: ContextGraph, label: str = "a failing benchmark", kind: str = "disproof") -> NodeRecord:
    return graph.add_node("evidence", label, attrs={"kind": kind})


def snapshot(graph: ContextGraph) -> bytes:
    """The graph's file bytes: two equal snapshots mean nothing was written in between."""
    return dump_graph(graph)


def custom_ontology(replacements: dict[str, str]) -> Ontology:
    """This repository's GRAPH.md with the Invalidation cell of some edge rows edited.

    ``replacements`` maps an edge type to its new direction (``backward``, ``forward``, ``none``).
    """
    lines = []
    for line in graph_md_path().read_text(encoding="utf-8").splitlines():
        cells = line.split("|")
        if len(cells) > 4 and cells[1].strip().strip("`") in replacements:
            edge_type = cells[1].strip().strip("`")
            cells[3] = f" {replacements[edge_type]} "
        lines.append("|".join(cells))
    return parse_ontology("\n".join(lines), origin="edited GRAPH.md")


# -- the strategy -----------------------------------------------------------------------------


@dataclass
class BeliefGraph:
    """A drawn graph, the assumption under test and a live evidence node that can reject it."""

    graph: ContextGraph
    target: str
    evidence: str
    assumptions: list[str]

    def node_by_label(self, label: str) -> str:
        matches = [n.id for n in self.graph if n.label == label]
        assert len(matches) == 1, f"label {label!r} names {matches}"
        return matches[0]


def _subset(draw: st.DrawFn, pool: list[str], max_size: int = 3) -> list[str]:
    if not pool:
        return []
    return draw(st.lists(st.sampled_from(pool), max_size=max_size, unique=True))


@st.composite
def belief_graphs(draw: st.DrawFn, ontology: Ontology = ONTOLOGY, isolated_target: bool = False) -> BeliefGraph:
    """A small random legal typed graph with assumptions, see the module docstring.

    With ``isolated_target`` the assumption under test is touched only by non-propagating edges
    (``contradicts`` from evidence, ``justified_by`` to evidence, ``supersedes`` between
    assumptions), however the rest of the graph is drawn.
    """
    graph = ContextGraph(ontology)
    ledger = Assumptions(graph)
    log = DecisionLog(graph)
    pools: dict[str, list[str]] = {t: [] for t in ontology.node_types}

    for i in range(draw(st.integers(1, 3))):
        pools["source"].append(add_source(graph, f"S{i} notes").id)
    for i in range(draw(st.integers(1, 3))):
        pools["assumption"].append(ledger.assume(f"A{i} holds").id)
    grounds = list(pools["assumption"])
    if isolated_target:
        target = ledger.assume("Z stands alone").id
        pools["assumption"].append(target)
    else:
        target = draw(st.sampled_from(grounds))

    for i in range(draw(st.integers(0, 5))):
        claim = add_claim(graph, f"C{i} claim", draw(st.sampled_from(pools["source"]))).id
        pools["claim"].append(claim)
        if draw(st.booleans()):
            graph.add_edge(claim, "derived_from", draw(st.sampled_from(pools["source"])))
        for assumption in _subset(draw, grounds, 2):
            graph.add_edge(claim, "depends_on", assumption)
    for i in range(draw(st.integers(0, 4))):
        entity = add_entity(graph, f"E{i} entity").id
        pools["entity"].append(entity)
        if draw(st.booleans()):
            graph.add_edge(entity, "derived_from", draw(st.sampled_from(pools["source"])))
    for i in range(draw(st.integers(0, 2))):
        pools["evidence"].append(add_evidence(graph, f"V{i} observation").id)
    for i in range(draw(st.integers(0, 5))):
        record = log.decide(
            f"D{i} decision",
            rationale=f"reason {i}",
            provenance=Provenance(source_id=draw(st.sampled_from(pools["source"]))),
            assumptions=_subset(draw, grounds, 2),
            rests_on=_subset(draw, pools["claim"], 2),
            needs=_subset(draw, pools["decision"], 2),
            produces=_subset(draw, pools["entity"] + pools["source"], 2),
        )
        pools["decision"].append(record.id)

    # Extra edges of every legal type between the same nodes, propagating or not; a later
    # decision -[depends_on]-> earlier decision and decision -[produces]-> source can close cycles.
    triples = [
        (edge_type, src_type, dst_type)
        for edge_type in (*_OTHER_EDGES, "depends_on", "derived_from", "produces")
        for src_type, dst_type in ontology.legal_pairs(edge_type)
        if pools[src_type] and pools[dst_type]
    ]
    if triples:
        extra = draw(st.lists(st.tuples(st.sampled_from(triples), st.integers(0, 20), st.integers(0, 20)), max_size=14))
        for (edge_type, src_type, dst_type), i, j in extra:
            src, dst = pools[src_type][i % len(pools[src_type])], pools[dst_type][j % len(pools[dst_type])]
            if src == dst or (isolated_target and target in (src, dst) and edge_type in ontology.propagating):
                continue
            try:
                graph.add_edge(src, edge_type, dst)
            except IdentityError:  # a 6-hex edge-id collision: refused by design (rule 9), rare
                continue

    # Bind a few edges to the target; then take some nodes and edges out of play.
    edges = list(graph.edges)
    if edges:
        for edge_id in _subset(draw, edges, 2):
            ledger.justifies(target, edge_id)
    others = [n.id for n in graph if n.id != target]
    graph.prune(_subset(draw, others, 2))
    if edges:
        graph.invalidate(edge_ids=_subset(draw, edges, 2))

    evidence = add_evidence(graph, "the disproof").id
    return BeliefGraph(graph, target, evidence, pools["assumption"])

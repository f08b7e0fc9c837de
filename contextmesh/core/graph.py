"""``ContextGraph``: typed nodes and edges, checked on every write.

Records and each node's adjacency lists keep insertion order: networkx groups parallel edges by
neighbour and moves a re-added edge, and a ``MultiDiGraph`` beside the records cost more memory
than they do, so one is built only on demand (:attr:`ContextGraph.nx`, ADR 0015). Records are
compact: slotted, type names interned, vectors in one :class:`~contextmesh.core.vectors.VectorStore`,
an edge found by its derived id rather than through a second index of endpoint triples; a loaded
file's edges stay checked columns until a record is asked for (:mod:`~contextmesh.core.edge_table`,
ADR 0038), and a node's adjacency is gathered from them then (:mod:`~contextmesh.core.graph_adjacency`).

Invariants (each tested in ``tests/core/test_graph.py``; the rules behind 1, 2 and 5 are the
functions of :mod:`contextmesh.core.graph_rules`, applied here on every write):

1. No code path stores an edge without a type from the ontology, or between a pair of node types
   the ontology does not list for that type (``untyped_edges`` is always 0).
2. Every node carries the must-carry names of its type; ``provenance`` is satisfied only by the
   field, never by an attribute of that name.
3. A repeat observation (same id, same type, same label) merges; an id already naming a
   different node or edge is refused; a decision is never merged and never minted here.
4. Every order-sensitive listing (``out_edges``, ``in_edges``, node iteration) follows insertion
   order: edges e1(a→x), e2(b→x), e3(a→x) come back from ``in_edges(x)`` as e1, e2, e3.
5. An explicit-id decision's digest-covered edges are frozen once it is recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import networkx as nx
from pydantic import JsonValue

from contextmesh.core import graph_rules, vectors
from contextmesh.core.canonical import ensure_canonical
from contextmesh.core.edge_ids import EdgeIds
from contextmesh.core.edge_table import EdgeTable
from contextmesh.core.errors import IdentityError, NotFoundError, OntologyError
from contextmesh.core.graph_adjacency import Adjacency
from contextmesh.core.graph_changes import GraphChanges
from contextmesh.core.graph_rules import check_edge, check_evidence, check_must_carry, check_node_type, check_not_frozen
from contextmesh.core.ids import slug
from contextmesh.core.model import AssumptionRecord, EdgeRecord, NodeRecord, Provenance
from contextmesh.core.ontology import ONTOLOGY, Ontology
from contextmesh.core.vectors import VectorStore

__all__ = ["ContextGraph"]


class ContextGraph(Adjacency):
    """A typed context graph. Every write is checked against :attr:`ontology`."""

    def __init__(self, ontology: Ontology = ONTOLOGY) -> None:
        self.ontology = ontology
        self.build = 0
        self.nodes: dict[str, NodeRecord] = {}
        self.edges = EdgeTable()  # a loaded file's edges as checked columns, records on demand (ADR 0038)
        self.assumptions: dict[str, AssumptionRecord] = {}
        # Built on first use (see ``nx``): a load or a bulk build that never runs an algorithm
        # should not pay for it; at 500,000 edges it was the largest single cost of a load.
        self._nx: nx.MultiDiGraph[str] | None = None
        self._next_seq = 0
        self._bound: dict[str, list[str]] = {}  # assumption id -> edges bound to it, in binding order
        self._legal = {t: frozenset(p) for t, p in ontology.signatures.items()}
        # One string object per type name, however many records carry it.
        self._names = {name: name for name in (*ontology.node_types, *ontology.edge_types)}
        self._vectors = VectorStore()
        self._changes: GraphChanges | None = None  # the ids a session journals (ADR 0020), once it tracks
        self._ids = EdgeIds(ontology.edge_types)  # refuses tables whose types share an id tail
        # The graph file version a loader read and upgraded (2), or None: a session that loaded an
        # upgraded graph writes a full snapshot next, never a journal over the old file (ADR 0021).
        self.upgraded_from: int | None = None

    # -- reading --------------------------------------------------------------------------

    @property
    def nx(self) -> nx.MultiDiGraph[str]:
        """The graph as a ``networkx.MultiDiGraph`` (edge keys are edge ids), for algorithms only.

        Built from the records on first access, in insertion order, so it holds exactly what
        eager mirroring would have built; every later write keeps it in step.
        """
        if self._nx is None:
            view: nx.MultiDiGraph[str] = nx.MultiDiGraph()
            view.add_nodes_from(self.nodes)
            for edge in self.edges.values():
                view.add_edge(edge.src, edge.dst, key=edge.id)
            self._nx = view
        return self._nx

    def __len__(self) -> int:
        return len(self.nodes)

    def __bool__(self) -> bool:
        return True  # an empty graph is still a graph

    def __iter__(self) -> Iterator[NodeRecord]:
        return iter(self.nodes.values())

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def node(self, node_id: str) -> NodeRecord:
        """The node with this id, or :class:`NotFoundError` suggesting near misses."""
        try:
            return self.nodes[node_id]
        except KeyError:
            raise NotFoundError(graph_rules.missing_message("node", node_id, self.nodes)) from None

    def edge(self, edge_id_: str) -> EdgeRecord:
        """The edge with this id, or :class:`NotFoundError`."""
        try:
            return self.edges[edge_id_]
        except KeyError:
            raise NotFoundError(graph_rules.missing_message("edge", edge_id_, self.edges)) from None

    def seq(self, item_id: str) -> int:
        """Insertion sequence number of a node or edge: the tie-breaker of every ordered walk."""
        record = self.nodes.get(item_id) or self.edges.get(item_id)
        if record is None:
            raise KeyError(item_id)
        return record._seq

    def find_edge(self, src: str, edge_type: str, dst: str) -> EdgeRecord | None:
        """The edge of this type between these endpoints, if one exists."""
        # An edge's id is derived from exactly these three, and ids are unique: the edge, if it
        # exists, is stored under that id (a different edge there is an id collision).
        source, target = self.nodes.get(src), self.nodes.get(dst)
        if source is None or target is None or edge_type not in self._ids.type_parts:
            return None
        edge = self.edges.get(self._ids.of(source, edge_type, target))
        if edge is None or edge.src != src or edge.type != edge_type or edge.dst != dst:
            return None
        return edge

    def is_live(self, node_id: str) -> bool:
        """True when the node exists and is neither pruned nor invalidated."""
        node = self.nodes.get(node_id)
        return node is not None and node.live

    def edge_is_live(self, edge: EdgeRecord) -> bool:
        """True when the edge is not invalidated and both endpoints are live."""
        return edge.live and self.is_live(edge.src) and self.is_live(edge.dst)

    def by_type(self, node_type: str, *, live_only: bool = True) -> list[NodeRecord]:
        """Nodes of one type in insertion order."""
        return [n for n in self.nodes.values() if n.type == node_type and (n.live or not live_only)]

    def type_counts(self, *, live_only: bool = True) -> dict[str, int]:
        """Node count per type, every type of the ontology present (zeros included)."""
        counts = dict.fromkeys(self.ontology.node_types, 0)
        for node in self.nodes.values():
            if node.live or not live_only:
                counts[node.type] += 1
        return counts

    def edge_counts(self, *, live_only: bool = True) -> dict[str, int]:
        """Edge count per type, every type of the ontology present (zeros included)."""
        counts = dict.fromkeys(self.ontology.edge_types, 0)
        for edge in self.edges.values():
            if not live_only or self.edge_is_live(edge):
                counts[edge.type] += 1
        return counts

    @property
    def untyped_edges(self) -> int:
        """Always 0: there is no way to store an edge without a type (GRAPH.md rule 1)."""
        return sum(1 for e in self.edges.values() if e.type not in self._legal)

    # -- writing nodes ----------------------------------------------------------------------

    def add_node(
        self,
        node_type: str,
        label: str,
        *,
        id: str | None = None,
        attrs: Mapping[str, JsonValue] | None = None,
        provenance: Provenance | None = None,
        embedding: str | None = None,
    ) -> NodeRecord:
        """Add a node, or merge a repeat observation of the same node.

        A repeat (same id, type and label) merges ``attrs``, fills a missing provenance and
        replaces the embedding if one is given. A decision cannot be added here: decisions are
        recorded through ``DecisionLog.decide`` (GRAPH.md rule 10).
        """
        if node_type == "decision":
            raise OntologyError(
                f"decision node '{id or label}' cannot be minted through add_node; call DecisionLog.decide(), "
                "which enforces identity and provenance (GRAPH.md rule 10)"
            )
        return self._put_node(node_type, label, id, attrs, provenance, embedding)

    def _put_node(
        self,
        node_type: str,
        label: str,
        node_id: str | None,
        attrs: Mapping[str, JsonValue] | None,
        provenance: Provenance | None,
        embedding: str | None,
    ) -> NodeRecord:
        check_node_type(self.ontology, node_type)
        if not isinstance(label, str):
            raise OntologyError(f"a node label must be text, not {type(label).__name__}")
        nid = node_id if node_id is not None else slug(label, node_type)
        new_attrs = dict(attrs or {})
        ensure_canonical(new_attrs, f"node '{nid}'.attrs")
        if embedding is not None and vectors.checked_bytes(embedding) is None:  # the fast test; check() says why
            raise OntologyError(f"node '{nid}': embedding refused: {vectors.check(embedding)}")
        existing = self.nodes.get(nid)
        if existing is not None:
            if existing.type != node_type or existing.label != label:
                raise IdentityError(
                    f"node id '{nid}' is already {existing.type} '{existing.label}'; "
                    f"refusing to treat {node_type} '{label}' as the same node"
                )
            if node_type == "decision":
                raise IdentityError(
                    f"decision id '{nid}' already exists; a decision is an immutable event and is never merged "
                    "by a repeat add -- record a new decision that supersedes it"
                )
            merged = {**existing.attrs, **new_attrs}
            check_must_carry(
                self.ontology,
                node_type,
                nid,
                merged,
                existing.provenance or provenance,
                embedding or existing.embedding,
            )
            existing.attrs = merged
            if existing.provenance is None and provenance is not None:
                existing.provenance = provenance
            if embedding is not None:
                existing.embedding = embedding
            self.touch(nid)
            return existing
        check_must_carry(self.ontology, node_type, nid, new_attrs, provenance, embedding)
        record = NodeRecord(
            nid, self._names[node_type], label, new_attrs, provenance, embedding, self.build, 0, False, False
        )
        self._store_node(record)
        return record

    def _store_node(self, record: NodeRecord) -> None:
        """Take a new record in: its sequence number, empty adjacency, its vector into the store."""
        text = record._embedding
        record._vectors = self._vectors
        if type(text) is str:
            record.embedding = text  # into the store when it is a valid vector, else kept as text
        record._out = []
        record._in = []
        record._seq = self._next_seq
        self._next_seq += 1
        self.nodes[record.id] = record
        if self._nx is not None:
            self._nx.add_node(record.id)
        self.touch(record.id)

    def _mint_decision(
        self, node_id: str, label: str, attrs: Mapping[str, JsonValue], provenance: Provenance | None
    ) -> NodeRecord:
        """Create a decision node. Only ``DecisionLog`` and the snapshot loader call this."""
        if node_id in self.nodes:
            existing = self.nodes[node_id]
            raise IdentityError(
                f"decision id '{node_id}' already exists as {existing.type} '{existing.label}'; "
                "a decision is an immutable event and is never merged"
            )
        return self._put_node("decision", label, node_id, attrs, provenance, None)

    # -- writing edges ----------------------------------------------------------------------

    def add_edge(
        self,
        src: str,
        edge_type: str,
        dst: str,
        *,
        evidence_ids: Iterable[str] = (),
        weight: float = 1.0,
    ) -> EdgeRecord:
        """Add a typed edge, or merge a repeat observation (weights add, evidence ids union).

        Refused with :class:`OntologyError` when the pair is not legal for the type, listing the
        legal pairs. An explicit-id decision's digest-covered edges cannot be added afterwards.
        """
        return self._put_edge(src, edge_type, dst, tuple(evidence_ids), weight, frozen_check=True)

    def _put_edge(
        self,
        src: str,
        edge_type: str,
        dst: str,
        evidence_ids: tuple[str, ...],
        weight: float,
        *,
        frozen_check: bool,
    ) -> EdgeRecord:
        source, target = check_edge(self.ontology, self._legal, self.nodes, src, edge_type, dst, weight)
        check_evidence(self.nodes, src, edge_type, dst, evidence_ids)
        if frozen_check and source.type == "decision":
            check_not_frozen(source, target, edge_type)
        eid = self._ids.of(source, edge_type, target)
        edge = self.edges.get(eid)
        if edge is not None and edge.src == src and edge.type == edge_type and edge.dst == dst:
            merged = edge.weight + weight
            if merged == float("inf"):
                raise OntologyError(f"merging weight {weight!r} into edge '{eid}' would overflow to infinity")
            edge.weight = merged
            known = edge.evidence_ids
            edge.evidence_ids = known + tuple(e for e in dict.fromkeys(evidence_ids) if e not in known)
            self.touch(eid)
            return edge
        if edge is not None:
            raise IdentityError(
                f"edge id '{eid}' is already '{edge.src}'-[{edge.type}]->'{edge.dst}'; refusing to treat "
                f"'{src}'-[{edge_type}]->'{dst}' as the same edge (two node ids share the 64-bit SHA-1 tail of "
                "edge ids, ADR 0021)"
            )
        # Endpoints and type as the graph's own string objects: one copy of each, however many edges.
        record = EdgeRecord(
            eid,
            source.id,
            target.id,
            self._names[edge_type],
            tuple(dict.fromkeys(evidence_ids)) if evidence_ids else (),
            weight,
            self.build,
            None,
            0,
            False,
        )
        self._store_edge(record, source, target)
        return record

    def _store_edge(
        self, record: EdgeRecord, source: NodeRecord | None = None, target: NodeRecord | None = None
    ) -> None:
        """Take a new edge in; ``source`` and ``target``, when a write has them, spare two look-ups."""
        self.edges[record.id] = record
        self._outs(source or self.nodes[record.src]).append(record)
        self._ins(target or self.nodes[record.dst]).append(record)
        record._seq = self._next_seq
        self._next_seq += 1
        if self._nx is not None:
            self._nx.add_edge(record.src, record.dst, key=record.id)
        if record.assumption_id is not None:
            self._bound.setdefault(record.assumption_id, []).append(record.id)
        self.touch(record.id)

    # -- assumptions, flags and telemetry ---------------------------------------------------

    def add_assumption(self, record: AssumptionRecord) -> NodeRecord:
        """Store an assumption record and its mirroring node (node first: a refusal changes nothing)."""
        if record.id in self.assumptions:
            raise IdentityError(f"assumption '{record.id}' already has a record")
        node = self._put_node(
            "assumption",
            record.statement,
            record.id,
            {"status": record.status, "version": record.version},
            None,
            None,
        )
        self.assumptions[record.id] = record
        self.touch(record.id)
        return node

    def sync_assumption(self, record: AssumptionRecord) -> None:
        """The one writer of an assumption node's mirror of its record's status and version."""
        node = self.node(record.id)
        node.attrs = {**node.attrs, "status": record.status, "version": record.version}
        self.assumptions[record.id] = record
        self.touch(record.id)

    def bind_edge(self, edge_id_: str, assumption_id: str) -> None:
        """Bind an edge to an assumption; rebinding to a different one is refused."""
        edge = self.edge(edge_id_)
        if edge.assumption_id not in (None, assumption_id):
            raise IdentityError(
                f"edge '{edge_id_}' is already bound to '{edge.assumption_id}'; refusing to silently rebind it "
                f"to '{assumption_id}'"
            )
        if edge.assumption_id is None:
            edge.assumption_id = assumption_id
            self._bound.setdefault(assumption_id, []).append(edge.id)
            self.touch(edge.id)

    def bound_edges(self, assumption_id: str) -> list[EdgeRecord]:
        """Edges bound to an assumption (``justifies``), in binding order."""
        return [self.edges[eid] for eid in self._bound.get(assumption_id, ())]

    def invalidate(self, node_ids: Iterable[str] = (), edge_ids: Iterable[str] = ()) -> None:
        """Flag nodes and edges invalidated. Flags are never cleared except by a decision rerun."""
        for nid in node_ids:
            self.node(nid).invalidated = True
            self.touch(nid)
        for eid in edge_ids:
            self.edge(eid).invalidated = True
            self.touch(eid)

    def revive(self, node_id: str) -> None:
        """Clear an entity's invalidated flag when the decision producing it runs again (rule 7)."""
        node = self.node(node_id)
        if node.type != "entity":
            raise OntologyError(f"only an entity is revived by a rerun; '{node_id}' is a {node.type}")
        if node.pruned:
            raise OntologyError(f"'{node_id}' was pruned, and a pruned node is never revived")
        node.invalidated = False
        self.touch(node_id)

    def prune(self, node_ids: Iterable[str]) -> None:
        """Flag nodes pruned; they stay in the graph, out of walks, and are never revived."""
        for nid in node_ids:
            self.node(nid).pruned = True
            self.touch(nid)

    def record_walk(self, node_ids: Iterable[str], edge_ids: Iterable[str]) -> None:
        """Telemetry: one more walk visited these nodes and traversed these edges."""
        nodes, edges = list(dict.fromkeys(node_ids)), list(edge_ids)
        for nid in nodes:
            self.node(nid).walks += 1
        for eid in edges:
            self.edge(eid).traversals += 1
        if self._changes is not None:
            self._changes.counted(nodes, edges)

    def touch(self, item_id: str) -> None:
        """Note that the stored record ``item_id`` changed: the graph's writes call it, and so must code
        that assigns a stored record's field itself, or a session's journal misses it (ADR 0020)."""
        if self._changes is not None:
            self._changes.touched(self, item_id)

    def subgraph(self, keep: Iterable[str]) -> ContextGraph:
        """A copy holding only the ``keep`` nodes, the edges between them and their assumption
        records, in the same insertion order, with every flag and counter as it is here.

        A kept edge names only kept nodes: evidence ids of dropped nodes are left out and a binding
        to a dropped assumption is cleared, so the copy is a graph that saves and loads (G46).
        """
        wanted = set(keep)
        copy = ContextGraph(self.ontology)
        copy.build = self.build
        for node in self.nodes.values():
            if node.id in wanted:
                copy._store_node(node.model_copy(deep=True))
        for edge in self.edges.values():
            if edge.src in wanted and edge.dst in wanted:
                update: dict[str, object] = {}
                if any(e not in wanted for e in edge.evidence_ids):
                    update["evidence_ids"] = tuple(e for e in edge.evidence_ids if e in wanted)
                if edge.assumption_id is not None and edge.assumption_id not in wanted:
                    update["assumption_id"] = None
                copy._store_edge(edge.model_copy(update=update))  # every field is immutable or a scalar
        for assumption_id, record in self.assumptions.items():
            if assumption_id in wanted:
                copy.assumptions[assumption_id] = record.model_copy()
        return copy

    def _undo(self, node_ids: Iterable[str], edge_ids: Iterable[str]) -> None:
        """Remove nodes and edges a failed operation just added (edges first). Rollback only."""
        for eid in edge_ids:
            edge = self.edges.get(eid)
            if edge is None:
                continue
            # Gathered before the pop: a loaded node's lists are built from the table on first use.
            outs, ins = self._outs(self.nodes[edge.src]), self._ins(self.nodes[edge.dst])
            del self.edges[eid]
            outs.remove(edge)
            ins.remove(edge)
            if self._nx is not None:
                self._nx.remove_edge(edge.src, edge.dst, key=eid)
        for nid in node_ids:
            if self.nodes.pop(nid, None) is None:
                continue
            self.assumptions.pop(nid, None)
            if self._nx is not None:
                self._nx.remove_node(nid)

    def next_build(self) -> int:
        """Advance the processing clock (the build counter) and return the new value."""
        self.build += 1
        return self.build

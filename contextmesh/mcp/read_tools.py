"""The seven read tools: plain Python over a :class:`~contextmesh.session.session.Session`.

Each tool is a function ``tool(session, **arguments) -> <pydantic model>``; its keyword
parameters (with their ``Annotated`` constraints) are exactly the published input schema, and its
return model the published output schema. :data:`READ_TOOLS` lists them for the server.

Invariants (``tests/mcp/test_tools.py``):

1. A read changes no structure: after any read tool, every node record except ``walks``, every
   edge except ``traversals`` and every assumption record are unchanged.
2. Only ``mesh_ask`` moves telemetry (``walks``, ``traversals``, the resolver's log), and only it
   commits — under the session's checkpoint policy, through :meth:`Session.ask`.
3. ``mesh_blast_radius`` is a pure dry run; ``mesh_explain_as_of`` and
   ``mesh_reconstruct_decision`` return exactly what the engine returns.
4. A refusal is a :class:`MeshToolError` whose message says what was wrong; an unknown id may
   suggest near misses and never falls back to one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Annotated, Any

from pydantic import BaseModel, Field

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.invalidation import PRESERVED_LIST_LIMIT, blast_radius, render_chain
from contextmesh.belief.reconstruct import reconstruct_decision
from contextmesh.belief.temporal import explain_as_of
from contextmesh.core.errors import ContextMeshError, OntologyError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import AssumptionRecord, EdgeRecord
from contextmesh.core.ontology import EdgeType
from contextmesh.mcp.labels import AmbiguousLabelError, resolve
from contextmesh.mcp.models import (
    AskResult,
    AsOfResult,
    AssumptionOut,
    BlastRadiusResult,
    EdgeOut,
    FallenOut,
    HealthResult,
    LineageResult,
    NodeResult,
    ProvenanceOut,
    ReconstructionResult,
)
from contextmesh.mcp.quoting import quote
from contextmesh.session.session import Session

__all__ = [
    "READ_TOOLS",
    "MeshToolError",
    "ToolSpec",
    "assumption_out",
    "mesh_ask",
    "mesh_blast_radius",
    "mesh_explain_as_of",
    "mesh_get_node",
    "mesh_health",
    "mesh_lineage",
    "mesh_reconstruct_decision",
    "node_view",
]

_SUGGEST_SCAN_LIMIT = 20_000
_SUGGEST_ID_LIMIT = 300  # the longest id the tools' schemas accept


class MeshToolError(ContextMeshError):
    """A tool refused its arguments or the state it found; the message is for the calling model."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, the function behind it and whether it only reads."""

    name: str
    fn: Callable[..., BaseModel]
    read_only: bool
    title: str

    @property
    def description(self) -> str:
        """The function's docstring: what the model reads before calling."""
        return inspect.getdoc(self.fn) or self.name

    def parameters(self) -> list[inspect.Parameter]:
        """The published parameters: the function's, minus the leading session."""
        return list(inspect.signature(self.fn, eval_str=True).parameters.values())[1:]


# -- argument types (their constraints are the published input schema) ---------------------------

Question = Annotated[str, Field(min_length=1, max_length=2000, description="the question, in plain words")]
NodeId = Annotated[
    str,
    Field(min_length=1, max_length=300, description="a node id, e.g. 'claim:…' or 'decision:…', or its unique label"),
]
AssumptionId = Annotated[
    str,
    Field(min_length=1, max_length=300, description="an assumption node id, 'assumption:…', or its unique statement"),
]
DecisionId = Annotated[
    str, Field(min_length=1, max_length=300, description="a decision node id, 'decision:…', or its unique label")
]
IsoDate = Annotated[str, Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", description="a source-time date, YYYY-MM-DD")]
Policy = Annotated[
    list[EdgeType] | None,
    Field(max_length=len(EdgeType), description="narrow this walk to these edge types (default: the session's)"),
]
Depth = Annotated[int, Field(ge=1, le=10, description="how many steps back from the decision")]


# -- shared views -------------------------------------------------------------------------------


def assumption_out(record: AssumptionRecord) -> AssumptionOut:
    """An assumption record as published."""
    return AssumptionOut.model_validate(record.model_dump(mode="json"))


def _edge_out(graph: ContextGraph, edge: EdgeRecord) -> EdgeOut:
    return EdgeOut(
        id=edge.id,
        type=edge.type,
        src=edge.src,
        src_label=graph.node(edge.src).label,
        dst=edge.dst,
        dst_label=graph.node(edge.dst).label,
        weight=edge.weight,
        assumption_id=edge.assumption_id,
        evidence_ids=list(edge.evidence_ids),
        traversals=edge.traversals,
        invalidated=edge.invalidated,
        live=graph.edge_is_live(edge),
    )


def _suggest(wanted: str, ids: list[str]) -> str:
    # difflib's cost grows with both lengths: a resource URI can carry an id of any length.
    if len(ids) > _SUGGEST_SCAN_LIMIT or len(wanted) > _SUGGEST_ID_LIMIT:
        return ""
    near = get_close_matches(wanted, ids, n=3, cutoff=0.6)
    return f"; ids that look close: {', '.join(near)}" if near else ""


def node_view(graph: ContextGraph, node_id: str) -> NodeResult:
    """A node with its edges both ways and, for an assumption, its record."""
    node = graph.nodes.get(node_id)
    if node is None:
        prefix = node_id.partition(":")[0] + ":"
        same_kind = [i for i in graph.nodes if i.startswith(prefix)]
        raise MeshToolError(f"no node {quote(node_id)} in the graph{_suggest(node_id, same_kind)}")
    provenance = None
    if node.provenance is not None:
        provenance = ProvenanceOut.model_validate(node.provenance.model_dump(mode="json"))
    record = graph.assumptions.get(node_id)
    return NodeResult(
        id=node.id,
        type=node.type,
        label=node.label,
        attrs=node.attrs,
        provenance=provenance,
        has_embedding=node.embedding is not None,
        build=node.build,
        walks=node.walks,
        pruned=node.pruned,
        invalidated=node.invalidated,
        live=node.live,
        degree=graph.degree(node_id),
        out_edges=[_edge_out(graph, e) for e in graph.out_edges(node_id, live_only=False)],
        in_edges=[_edge_out(graph, e) for e in graph.in_edges(node_id, live_only=False)],
        assumption=None if record is None else assumption_out(record),
    )


def _named(graph: ContextGraph, given: str, node_type: str | None = None) -> str:
    """The id ``given`` means (itself, or the one live node labelled so: :mod:`contextmesh.mcp.labels`)."""
    try:
        return resolve(graph, given, node_type)
    except AmbiguousLabelError as exc:
        raise MeshToolError(str(exc)) from None


def _assumption(graph: ContextGraph, assumption_id: str) -> AssumptionRecord:
    record = graph.assumptions.get(assumption_id)
    if record is None:
        known = list(graph.assumptions)
        example = ", ".join(known[:5]) or "none"
        raise MeshToolError(
            f"no assumption {quote(assumption_id)}; the graph has {len(known)} (e.g. {example})"
            f"{_suggest(assumption_id, known)}"
        )
    return record


# -- the seven read tools -----------------------------------------------------------------------


def mesh_ask(session: Session, question: Question, policy: Policy = None) -> AskResult:
    """Ask the graph a question. Answers with the path the walk took (each step's node and typed
    edge) and the answer's justification, or names one of four dead ends with what it tried.
    Moves walk telemetry (and, under the every-ask checkpoint policy, commits it just after the
    reply, in the generation telemetry_generation names); changes nothing else."""
    if not question.strip():
        raise MeshToolError("question is empty")
    try:
        walk = session.ask(question, policy=None if policy is None else tuple(EdgeType(p).value for p in policy))
    except OntologyError as exc:
        raise MeshToolError(str(exc)) from None
    data: dict[str, Any] = dict(walk.to_dict())
    data.update(
        answered=walk.dead_end is None,
        generation=session.generation,
        telemetry_generation=session.lands_in,
        pending=session.pending,
    )
    return AskResult.model_validate(data)


def mesh_get_node(session: Session, node_id: NodeId) -> NodeResult:
    """One node by id: its record, every edge in and out (invalidated ones included, each with the
    label at its other end) and, for an assumption, its versioned record."""
    return node_view(session.graph, _named(session.graph, node_id))


def mesh_health(session: Session) -> HealthResult:
    """The graph's health: every signal (untyped edges, orphans, provenance gaps, unresolved
    entities, missing relationships, stale assumptions, open contradictions, dead ends,
    invalidated nodes) with a count, a detail and a remedy, plus the graph's size."""
    report = session.health()
    return HealthResult.model_validate(report.to_dict())


def mesh_lineage(session: Session, assumption_id: AssumptionId) -> LineageResult:
    """The supersession chain through an assumption, oldest version first: what it replaced,
    what replaced it, and each version's status and evidence."""
    assumption_id = _named(session.graph, assumption_id, "assumption")
    _assumption(session.graph, assumption_id)
    chain = Assumptions(session.graph).lineage(assumption_id)
    return LineageResult(assumption_id=assumption_id, depth=len(chain), chain=[assumption_out(r) for r in chain])


def mesh_blast_radius(session: Session, assumption_id: AssumptionId) -> BlastRadiusResult:
    """A dry run: what would fall if this assumption were rejected now — each node with the reason
    chain that takes it down — and the preserved complement. Changes nothing."""
    graph = session.graph
    assumption_id = _named(graph, assumption_id, "assumption")
    record = _assumption(graph, assumption_id)
    report = blast_radius(graph, assumption_id)
    note = None
    if record.status == "rejected":
        note = (
            f"already rejected (build {record.rejected_at_build}) through evidence "
            f"{', '.join(record.evidence_ids) or 'on record'}: what stood on it fell then, so nothing more can fall"
        )
        if record.superseded_by is not None:
            note += f"; its replacement is '{record.superseded_by}'"
    elif record.status == "superseded":
        note = (
            f"superseded by '{record.superseded_by}': the radius is what still stands on this older version "
            "(work repaired onto the successor stands on that one)"
        )
    fallen = sorted(report.invalidated.items())
    preserved = sorted(report.preserved_ids)
    return BlastRadiusResult(
        assumption_id=assumption_id,
        statement=record.statement,
        status=record.status,
        note=note,
        blast_radius=report.blast_radius,
        would_invalidate=[
            FallenOut(id=nid, label=graph.node(nid).label, type=graph.node(nid).type, because=render_chain(chain))
            for nid, chain in fallen
        ],
        would_invalidate_edges=list(report.invalidated_edges),
        would_preserve_count=len(preserved),
        would_preserve=preserved if len(preserved) <= PRESERVED_LIST_LIMIT else None,
        would_preserve_digest=report.preserved_digest,
    )


def mesh_explain_as_of(session: Session, question: Question, as_of: IsoDate) -> AsOfResult:
    """Answer a question from the graph as it stood on a date (source time): nothing dated later,
    and no rejection whose evidence came later, leaks in. Each path node is classed known, later
    or undated. Moves no telemetry."""
    try:
        result = explain_as_of(
            session.graph, session.resolver, question, as_of, flat=session.flat, embedder=session.embedder
        )
    except ContextMeshError as exc:
        raise MeshToolError(str(exc)) from None
    return AsOfResult.model_validate(result.to_dict())


def mesh_reconstruct_decision(
    session: Session, decision_id: DecisionId, as_of: IsoDate | None = None, depth: Depth = 3
) -> ReconstructionResult:
    """Walk back from a decision to the reasons it stood on (assumptions, claims, sources, needed
    decisions, up to `depth` steps), split into those that existed when it was made and those that
    came later; with `as_of`, from the graph as it stood on that date."""
    decision_id = _named(session.graph, decision_id, "decision")
    try:
        result = reconstruct_decision(session.graph, decision_id, as_of=as_of, depth=depth)
    except (ContextMeshError, ValueError) as exc:  # NotFoundError, TemporalError, a bad depth
        raise MeshToolError(str(exc)) from None
    return ReconstructionResult.model_validate(result.to_dict())


READ_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("mesh_ask", mesh_ask, True, "Ask the graph"),
    ToolSpec("mesh_get_node", mesh_get_node, True, "Get a node"),
    ToolSpec("mesh_health", mesh_health, True, "Graph health"),
    ToolSpec("mesh_lineage", mesh_lineage, True, "Assumption lineage"),
    ToolSpec("mesh_blast_radius", mesh_blast_radius, True, "Blast radius (dry run)"),
    ToolSpec("mesh_explain_as_of", mesh_explain_as_of, True, "Answer as of a date"),
    ToolSpec("mesh_reconstruct_decision", mesh_reconstruct_decision, True, "Reconstruct a decision"),
)

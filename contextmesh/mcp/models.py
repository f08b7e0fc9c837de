"""The typed results of the MCP tools: pydantic models, so every tool publishes an output schema.

Each model mirrors one engine ``to_dict()`` (a walk, a health report, an invalidation receipt, a
reconstruction …) field for field; ``extra="forbid"`` makes a drift between the engine and the
published schema fail loudly in the tests instead of leaking an undocumented key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, WithJsonSchema

if TYPE_CHECKING:
    from contextmesh.belief.invalidation import InvalidationReport
    from contextmesh.execution.plan import RecheckReport, RoundReport

__all__ = [
    "JSON_TYPES",
    "AnyJson",
    "AsOfResult",
    "AskResult",
    "AssumptionOut",
    "BlastRadiusResult",
    "DeadEndOut",
    "EdgeOut",
    "EvidenceOut",
    "FallenOut",
    "FlowRunOut",
    "FlowRunReport",
    "HealthResult",
    "InvalidationOut",
    "LineageResult",
    "NodeResult",
    "ProvenanceOut",
    "ReasonOut",
    "RecheckResult",
    "ReconstructionResult",
    "RepairResult",
    "ResumeResult",
    "SignalOut",
    "StepOut",
    "SubmitResult",
    "WalkOut",
    "result_of",
]


# Any JSON value, with a schema that says so (a bare ``{}`` reads as "constrains nothing" to schema linters).
# One branch per type, not a ``type`` array: clients that map tool schemas onto a single-``type``
# dialect (the OpenAPI subset some model providers use) reject or drop an array.
JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
AnyJson = Annotated[JsonValue, WithJsonSchema({"anyOf": [{"type": name} for name in JSON_TYPES]})]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- walks -------------------------------------------------------------------------------------


class StepOut(_Out):
    """One node on a path and the edge that led to it (none for the start)."""

    node_id: str
    type: str
    label: str
    edge: str | None
    edge_id: str | None
    direction: Literal["out", "in"] | None


class DeadEndOut(_Out):
    """Why a walk could not answer, and what it tried."""

    reason: Literal["entity_unresolved", "no_typed_edge", "wrong_node_type", "pruned_too_early"]
    detail: str
    rejected: str | None = Field(description="the label of the best candidate the walk turned down, if any")
    candidates: list[str] = Field(description="what an ambiguous mention could mean (empty otherwise)")


class WalkOut(_Out):
    """A walk exactly as ``Walk.to_dict()`` gives it."""

    question: str
    mentions: list[str]
    answer_id: str | None
    answer: str | None
    hops: int
    score: float
    confidence: float = Field(description="the share of the question the answer carries (0 for a dead end)")
    notes: list[str] = Field(description="live contradictions of the answer")
    tokens: int
    flat_tokens: int = Field(description="tokens flat top-k retrieval would send; 0 when not computed")
    path: list[StepOut]
    justification: list[StepOut]
    dead_end: DeadEndOut | None


class AskResult(WalkOut):
    """A walk, whether it answered, and where the session stands after it."""

    answered: bool = Field(description="true when the walk found a path (no dead end)")
    generation: int = Field(
        description="the newest generation this server has committed or loaded, the one the answer was read from; "
        "under every-ask this ask's telemetry is committed after the reply (see telemetry_generation)"
    )
    telemetry_generation: int | None = Field(
        description="the generation that holds this ask's telemetry (walk counters, resolver log and learned "
        "aliases) once its commit lands: under every-ask a background commit within a group window (0.2 s) of "
        "this reply, shared with the asks answered meanwhile; a crash before then loses only that telemetry. "
        "null when no commit is due (on-exit, never) or the inline commit was skipped"
    )
    pending: int = Field(description="asks whose telemetry is not yet committed, this one included until it lands")


# -- nodes and assumptions ----------------------------------------------------------------------


class ProvenanceOut(_Out):
    """Where a node's content came from."""

    source_id: str
    span: list[int] | None
    extractor: str
    checks: list[str]
    recorded_at_build: int


class AssumptionOut(_Out):
    """The versioned record behind an assumption node."""

    id: str
    statement: str
    status: Literal["active", "rejected", "superseded"]
    version: int
    created_by: str
    created_at_build: int
    evidence_ids: list[str]
    supersedes: str | None
    superseded_by: str | None
    rejected_at_build: int | None


class EdgeOut(_Out):
    """One edge touching a node, with the label of the node at its other end."""

    id: str
    type: str
    src: str
    src_label: str
    dst: str
    dst_label: str
    weight: float
    assumption_id: str | None
    evidence_ids: list[str]
    traversals: int
    invalidated: bool
    live: bool


class NodeResult(_Out):
    """A node, its edges both ways (invalidated ones included) and, for an assumption, its record."""

    id: str
    type: str
    label: str
    attrs: dict[str, AnyJson]
    provenance: ProvenanceOut | None
    has_embedding: bool
    build: int
    walks: int
    pruned: bool
    invalidated: bool
    live: bool
    degree: int
    out_edges: list[EdgeOut]
    in_edges: list[EdgeOut]
    assumption: AssumptionOut | None


class SignalOut(_Out):
    """One health signal."""

    kind: str
    severity: Literal["info", "warn", "error"]
    count: int
    detail: str
    remedy: str
    items: list[str]


class HealthResult(_Out):
    """Every health signal plus the graph's size, as ``HealthReport.to_dict()`` gives it."""

    status: Literal["ok", "warn", "error"]
    nodes_live: int
    nodes_total: int
    edges_live: int
    edge_types_used: int
    signals: list[SignalOut]


class LineageResult(_Out):
    """The supersession chain through an assumption, oldest first."""

    assumption_id: str
    depth: int
    chain: list[AssumptionOut]


class FallenOut(_Out):
    """A node that would fall, and the reason chain that takes it down."""

    id: str
    label: str
    type: str
    because: str


class BlastRadiusResult(_Out):
    """What would fall if an assumption were rejected now: a dry run that changes nothing."""

    assumption_id: str
    statement: str
    status: Literal["active", "rejected", "superseded"]
    note: str | None = Field(description="why the radius is what it is for rejected or superseded ground")
    hypothetical: Literal[True] = True
    blast_radius: int
    would_invalidate: list[FallenOut]
    would_invalidate_edges: list[str]
    would_preserve_count: int
    would_preserve: list[str] | None = Field(description="sorted; null beyond 10,000 ids (see the digest)")
    would_preserve_digest: str = Field(description="SHA-256 over the RFC 8785 bytes of the sorted preserved ids")


# -- temporal -----------------------------------------------------------------------------------


class AsOfResult(_Out):
    """An answer from the graph as it stood on a date, as ``AsOf.to_dict()`` gives it."""

    as_of: str
    walk: WalkOut
    path_classes: dict[str, Literal["known", "later", "undated"]]
    counts: dict[str, int]


class ReasonOut(_Out):
    """One node a decision stood on, how it was reached and its source-time date."""

    node_id: str
    type: str
    label: str
    via: str
    depth: int
    date: str | None
    live: bool


class ReconstructionResult(_Out):
    """A decision's reasons split by whether they existed when it was made."""

    decision_id: str
    title: str
    rationale: str
    date: str | None
    stood_on: list[ReasonOut]
    came_later: list[ReasonOut]


# -- writes ---------------------------------------------------------------------------------------


class EvidenceOut(_Out):
    """A stored observation."""

    id: str
    type: Literal["evidence"]
    label: str
    source_id: str
    external_id: str | None
    metadata: dict[str, AnyJson]


class SubmitResult(_Out):
    """What ``mesh_submit_evidence`` stored; a replay of the same payload creates and commits nothing."""

    evidence_id: str
    created: bool
    committed: bool
    generation: int
    node: EvidenceOut
    source_created: bool = False
    # With a document: its current revision, whether this call wrote it, the claims it superseded
    # and the plan tasks that went stale with them.
    document_revision: str | None = None
    document_wrote: bool = False
    superseded: list[str] = []
    stale: list[str] = []


class InvalidationOut(_Out):
    """An invalidation receipt, as ``InvalidationReport.to_dict()`` gives it."""

    assumption_id: str
    statement: str
    evidence_id: str | None
    blast_radius: int
    invalidated: list[dict[str, str]]
    invalidated_edges: list[str]
    preserved_count: int
    preserved: list[str] | None
    preserved_digest: str
    replacement_id: str | None

    @classmethod
    def receipts(cls, reports: Sequence[InvalidationReport]) -> list[InvalidationOut]:
        """The receipts of an engine report's invalidations."""
        return [cls.model_validate(report.to_dict()) for report in reports]


class FlowRunOut(_Out):
    """A flow run a deployment started for this call (absent for in-process work)."""

    id: str
    url: str | None
    state: str
    completed: bool


class RecheckResult(_Out):
    """What the registered auditors found."""

    round: int
    audited: list[str]
    audit_errors: dict[str, str]
    failed: dict[str, str]
    stale: list[str]
    invalidations: list[InvalidationOut]
    ledger_head: str | None
    generation: int
    committed: bool
    flow_run: FlowRunOut | None = None
    skipped: list[str] = []  # auditors not run: nothing they watch changed (ADR 0019)


class RepairResult(_Out):
    """A task moved onto new ground and another registered key."""

    task: str
    state: str
    worker_key: str
    auditor_key: str | None
    assumes: str
    assumption_id: str
    replaces: str = Field(description="the id of the ground the task stood on before")
    ledger_head: str | None
    generation: int


class ResumeResult(_Out):
    """One round over the pending and stale work whose ground stands (or nothing to do)."""

    round: int
    layers: list[list[str]]
    executed: list[str]
    cached: list[str]
    blocked: dict[str, str]
    failed: dict[str, str]
    stale: list[str]
    invalidations: list[InvalidationOut]
    changed: bool
    ledger_head: str | None
    generation: int
    flow_run: FlowRunOut | None = None


class FlowRunReport(_Out):
    """A recheck or resume flow run followed by its handle: its state and, once it ended, its report."""

    kind: Literal["recheck", "resume"]
    flow_run: FlowRunOut
    recheck: RecheckResult | None = Field(description="what mesh_recheck would have returned, once the run ended")
    resume: ResumeResult | None = Field(description="what mesh_resume would have returned, once the run ended")


_Result = TypeVar("_Result", RecheckResult, ResumeResult)


def result_of(model: type[_Result], report: RoundReport | RecheckReport, **context: Any) -> _Result:
    """A recheck's or a round's tool result: the report's own fields, its receipts, and ``context``
    (the ledger head, the generation, … — what the report cannot know), for in-process work and a
    flow run's report alike."""
    own = {
        name: getattr(report, name) for name in model.model_fields if name != "invalidations" and hasattr(report, name)
    }
    return model(**own, invalidations=InvalidationOut.receipts(report.invalidations), **context)

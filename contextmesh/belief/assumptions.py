"""Assumptions: versioned records mirrored on ``assumption`` nodes, rejected only through evidence.

:class:`Assumptions` is the one writer that keeps an assumption's record and its node in
agreement. An assumption is rejected only by naming an existing, live ``evidence`` node: the
rejection writes ``evidence -[contradicts]-> assumption``, marks the record rejected and flags
exactly the closure that stood on it (:mod:`contextmesh.belief.invalidation`). A rejected assumption is
never edited back to life; a replacement supersedes it and ``lineage`` shows both.

Invariants (``tests/test_assumptions.py``):

1. Every failed precondition raises before any write: the graph is byte-identical afterwards.
2. A rejection's writes are applied together or rolled back together.
3. ``lineage`` returns the supersession chain oldest first and never loops.
4. An edge bound with ``justifies`` cannot be rebound to another assumption.
"""

from __future__ import annotations

from collections.abc import Iterable

from contextmesh.belief.invalidation import InvalidationReport, apply_invalidation, blast_radius
from contextmesh.core.errors import BeliefError, NotFoundError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.core.model import AssumptionRecord

__all__ = ["Assumptions"]


class Assumptions:
    """Create, supersede, bind, reject, replace and trace assumptions on one graph."""

    def __init__(self, graph: ContextGraph) -> None:
        self.graph = graph

    def record(self, assumption_id: str) -> AssumptionRecord:
        """The record behind an assumption id."""
        try:
            return self.graph.assumptions[assumption_id]
        except KeyError:
            raise NotFoundError(f"no assumption '{assumption_id}' in this graph") from None

    def assume(
        self, statement: str, *, created_by: str = "agent", evidence_ids: Iterable[str] = ()
    ) -> AssumptionRecord:
        """Take ``statement`` as true (version 1), optionally justified by evidence nodes.

        Asking again with the same statement returns the existing record, whatever its status.
        """
        evidence = tuple(dict.fromkeys(evidence_ids))
        assumption_id = slug(statement, "assumption")
        existing = self.graph.assumptions.get(assumption_id)
        if existing is not None:
            if existing.statement != statement:
                raise BeliefError(
                    f"assumption id '{assumption_id}' is already '{existing.statement}'; refusing to treat "
                    f"'{statement}' as the same assumption"
                )
            missing = [e for e in evidence if e not in existing.evidence_ids]
            if missing:
                raise BeliefError(
                    f"assumption '{assumption_id}' already exists ({existing.status}) without evidence {missing}; "
                    "re-asking the same statement does not add justification"
                )
            return existing
        return self._create(assumption_id, statement, 1, created_by, evidence, supersedes=None)

    def _create(
        self,
        assumption_id: str,
        statement: str,
        version: int,
        created_by: str,
        evidence: tuple[str, ...],
        *,
        supersedes: str | None,
    ) -> AssumptionRecord:
        for evidence_id in evidence:
            self._require_live_evidence(evidence_id)
        record = AssumptionRecord(
            id=assumption_id,
            statement=statement,
            status="active",
            version=version,
            created_by=created_by,
            created_at_build=self.graph.build,
            evidence_ids=evidence,
            supersedes=supersedes,
            superseded_by=None,
            rejected_at_build=None,
        )
        self.graph.add_assumption(record)
        added_edges: list[str] = []
        try:
            for evidence_id in evidence:
                added_edges.append(self.graph.add_edge(assumption_id, "justified_by", evidence_id).id)
            if supersedes is not None:
                added_edges.append(self.graph.add_edge(assumption_id, "supersedes", supersedes).id)
        except Exception:
            self.graph._undo([assumption_id], added_edges)
            raise
        return record

    def supersede(self, old_id: str, statement: str, *, created_by: str = "agent") -> AssumptionRecord:
        """Replace an active assumption with a new version; the old one becomes ``superseded``."""
        old = self.record(old_id)
        if old.status != "active":
            raise BeliefError(f"cannot supersede '{old_id}': its status is {old.status}, not active")
        new = self._new_ground(old, statement, created_by)
        self._link_successor(old.model_copy(update={"status": "superseded"}), new)
        return self.graph.assumptions[new.id]

    def replace_rejected(self, old_id: str, statement: str, *, created_by: str = "agent") -> AssumptionRecord:
        """New ground for a rejected assumption: the next version, linked both ways as its successor.

        The old record stays rejected and gains ``superseded_by``. Supersession is one-to-one, so
        a rejected assumption that already has a successor is refused, as is an active one (that
        is :meth:`supersede`).
        """
        old = self.record(old_id)
        if old.status != "rejected":
            raise BeliefError(f"cannot replace '{old_id}' as rejected ground: its status is {old.status}")
        if old.superseded_by is not None:
            raise BeliefError(f"cannot replace '{old_id}': '{old.superseded_by}' already succeeds it")
        new = self._new_ground(old, statement, created_by)
        self._link_successor(self.graph.assumptions[old_id], new)
        return new

    def _new_ground(self, old: AssumptionRecord, statement: str, created_by: str) -> AssumptionRecord:
        version = old.version + 1
        new_id = slug(f"{statement}|v{version}", "assumption")
        taken = self.graph.nodes.get(new_id)
        if taken is not None:
            raise BeliefError(
                f"replacement '{statement}' is not new ground: id '{new_id}' already names '{taken.label}'"
            )
        return self._create(new_id, statement, version, created_by, (), supersedes=old.id)

    def _link_successor(self, old: AssumptionRecord, new: AssumptionRecord) -> None:
        self.graph.sync_assumption(old.model_copy(update={"superseded_by": new.id}))

    def justifies(self, assumption_id: str, edge_id: str) -> None:
        """Bind an edge to an assumption: if the assumption falls, the edge falls with it."""
        record = self.record(assumption_id)
        if record.status != "active":
            raise BeliefError(f"cannot bind an edge to '{assumption_id}': its status is {record.status}")
        edge = self.graph.edge(edge_id)
        if not self.graph.edge_is_live(edge):
            raise BeliefError(f"cannot bind edge '{edge_id}': it is not live")
        try:
            self.graph.bind_edge(edge_id, assumption_id)
        except Exception as exc:
            raise BeliefError(str(exc)) from None

    def depends(self, node_id: str, assumption_id: str) -> None:
        """``node -[depends_on]-> assumption``: the node falls if the assumption does."""
        self.record(assumption_id)
        self.graph.add_edge(node_id, "depends_on", assumption_id)

    def active(self) -> list[AssumptionRecord]:
        """Active assumptions in insertion order."""
        return [a for a in self.graph.assumptions.values() if a.status == "active"]

    def lineage(self, assumption_id: str) -> list[AssumptionRecord]:
        """The supersession chain that ends at ``assumption_id``, oldest first."""
        chain = [self.record(assumption_id)]
        seen = {assumption_id}
        while chain[0].supersedes is not None and chain[0].supersedes not in seen:
            seen.add(chain[0].supersedes)
            chain.insert(0, self.record(chain[0].supersedes))
        newest = chain[-1]
        while newest.superseded_by is not None and newest.superseded_by not in seen:
            seen.add(newest.superseded_by)
            newest = self.record(newest.superseded_by)
            chain.append(newest)
        return chain

    def blast_radius(self, assumption_id: str) -> InvalidationReport:
        """What would fall if the assumption were rejected now. A pure dry run."""
        self.record(assumption_id)
        return blast_radius(self.graph, assumption_id)

    def _require_live_evidence(self, evidence_id: object) -> None:
        if not isinstance(evidence_id, str) or not evidence_id:
            raise BeliefError(f"an evidence id is non-empty text, not {evidence_id!r}")
        node = self.graph.nodes.get(evidence_id)
        if node is None:
            raise BeliefError(f"no evidence node '{evidence_id}' in this graph; submit the observation first")
        if node.type != "evidence":
            raise BeliefError(f"'{evidence_id}' is a {node.type}, not evidence; only evidence can reject (rule 8)")
        if not node.live:
            raise BeliefError(f"evidence '{evidence_id}' is no longer live and cannot reject anything")

    def reject(
        self, assumption_id: str, *, evidence_id: str, replacement: str | None = None, created_by: str = "agent"
    ) -> InvalidationReport:
        """Reject an assumption through evidence that contradicts it, and invalidate its closure.

        Preconditions, all checked before any write: the evidence is a live ``evidence`` node, the
        assumption exists and is active, and a replacement statement is new ground.
        """
        self._require_live_evidence(evidence_id)
        record = self.record(assumption_id)
        if record.status != "active":
            raise BeliefError(f"cannot reject '{assumption_id}': its status is {record.status}, not active")
        if replacement is not None:
            replacement_id = slug(f"{replacement}|v{record.version + 1}", "assumption")
            if replacement_id in self.graph.nodes:
                raise BeliefError(
                    f"replacement '{replacement}' is not new ground: id '{replacement_id}' already exists"
                )
        report = blast_radius(self.graph, assumption_id)
        existing_edge = self.graph.find_edge(evidence_id, "contradicts", assumption_id)
        added = None
        try:
            if existing_edge is None:
                added = self.graph.add_edge(evidence_id, "contradicts", assumption_id).id
            rejected = record.model_copy(
                update={
                    "status": "rejected",
                    "rejected_at_build": self.graph.build,
                    "evidence_ids": (
                        *record.evidence_ids,
                        *((evidence_id,) if evidence_id not in record.evidence_ids else ()),
                    ),
                }
            )
            self.graph.sync_assumption(rejected)
        except Exception:
            self.graph.sync_assumption(record)
            self.graph._undo([], [added] if added else [])
            raise
        apply_invalidation(self.graph, assumption_id, report)
        report.evidence_id = evidence_id
        report.preserved_ids = [
            n.id for n in self.graph if n.live and n.id != assumption_id and n.id not in report.invalidated
        ]
        if replacement is not None:
            report.replacement_id = self.replace_rejected(assumption_id, replacement, created_by=created_by).id
        return report

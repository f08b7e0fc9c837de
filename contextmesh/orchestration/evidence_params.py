"""Evidence as task-run parameters: plain dicts out to Prefect, read-only views back in the task body.

A task run's parameters are plain data (``prefect_executor``, invariant 1); an auditor reads
:class:`~contextmesh.execution.context.EvidenceView` items with read-only metadata. Shared by the
one-auditor audit runs and the batch runs (:mod:`contextmesh.orchestration.audit_batch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from contextmesh.execution.context import EvidenceView

__all__ = ["evidence_data", "evidence_views"]


def evidence_data(evidence: Sequence[EvidenceView]) -> list[dict[str, Any]]:
    """The views as plain dicts, in order."""
    return [
        {
            "id": e.id,
            "text": e.text,
            "source_id": e.source_id,
            "external_id": e.external_id,
            "metadata": dict(e.metadata),
        }
        for e in evidence
    ]


def evidence_views(data: list[dict[str, Any]]) -> tuple[EvidenceView, ...]:
    """The dicts back as views whose metadata cannot be changed."""
    return tuple(
        EvidenceView(
            id=e["id"],
            text=e["text"],
            source_id=e["source_id"],
            external_id=e["external_id"],
            metadata=MappingProxyType(dict(e["metadata"])),
        )
        for e in data
    )

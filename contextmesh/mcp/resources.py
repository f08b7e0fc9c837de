"""The ``contextmesh://`` resources: the ontology, health, the session, assumptions, nodes.

Static: ``contextmesh://schema`` (GRAPH.md, text/markdown), ``contextmesh://health``,
``contextmesh://session`` (``Session.describe()`` plus whether it persists and this process's
counters) and ``contextmesh://assumptions``. Templates: ``contextmesh://node/{node_id}`` (what
``mesh_get_node`` returns) and ``contextmesh://assumption/{assumption_id}`` (the record, its
lineage, and what would fall with it). Every JSON resource is sorted-key JSON from
:func:`contextmesh.core.canonical.file_bytes`. Reading a resource changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contextmesh.core.canonical import file_bytes
from contextmesh.core.ontology import graph_md_path
from contextmesh.mcp.read_tools import (
    assumption_out,
    mesh_blast_radius,
    mesh_health,
    mesh_lineage,
    node_view,
)
from contextmesh.mcp.served_session import ServedSession

__all__ = [
    "RESOURCES",
    "TEMPLATES",
    "ResourceSpec",
    "assumption_json",
    "assumptions_json",
    "health_json",
    "node_json",
    "schema_text",
    "session_json",
]


@dataclass(frozen=True)
class ResourceSpec:
    """One resource or template: its URI, name, MIME type and description."""

    uri: str
    name: str
    mime_type: str
    description: str


def _json(value: Any) -> str:
    return file_bytes(value).decode("utf-8")


def schema_text(served: ServedSession) -> str:
    """GRAPH.md: node and edge types, legal pairs, invalidation directions and the rules."""
    return graph_md_path().read_text(encoding="utf-8")


def health_json(served: ServedSession) -> str:
    """The health report (what ``mesh_health`` returns)."""
    return _json(mesh_health(served.session).model_dump(mode="json"))


def session_json(served: ServedSession) -> str:
    """What is served, whether it persists, its plan and ledger, and the commit counters."""
    return _json(served.describe())


def assumptions_json(served: ServedSession) -> str:
    """Every assumption record, in insertion order."""
    records = [assumption_out(r).model_dump(mode="json") for r in served.session.graph.assumptions.values()]
    return _json({"count": len(records), "assumptions": records})


def node_json(served: ServedSession, node_id: str) -> str:
    """One node (what ``mesh_get_node`` returns)."""
    return _json(node_view(served.session.graph, node_id).model_dump(mode="json"))


def assumption_json(served: ServedSession, assumption_id: str) -> str:
    """One assumption: its record, its lineage and its (dry-run) blast radius."""
    session = served.session
    lineage = mesh_lineage(session, assumption_id)
    radius = mesh_blast_radius(session, assumption_id)
    record = session.graph.assumptions[assumption_id]
    return _json(
        {
            "assumption": assumption_out(record).model_dump(mode="json"),
            "lineage": [r.id for r in lineage.chain],
            "blast_radius": radius.blast_radius,
            "would_invalidate": [f.id for f in radius.would_invalidate],
            "note": radius.note,
        }
    )


RESOURCES: tuple[tuple[ResourceSpec, Any], ...] = (
    (ResourceSpec("contextmesh://schema", "schema", "text/markdown", "GRAPH.md, the ontology"), schema_text),
    (ResourceSpec("contextmesh://health", "health", "application/json", "the graph's health signals"), health_json),
    (
        ResourceSpec("contextmesh://session", "session", "application/json", "what is served and whether it persists"),
        session_json,
    ),
    (
        ResourceSpec("contextmesh://assumptions", "assumptions", "application/json", "every assumption record"),
        assumptions_json,
    ),
)
TEMPLATES: tuple[tuple[ResourceSpec, Any], ...] = (
    (ResourceSpec("contextmesh://node/{node_id}", "node", "application/json", "one node and its edges"), node_json),
    (
        ResourceSpec(
            "contextmesh://assumption/{assumption_id}",
            "assumption",
            "application/json",
            "one assumption: record, lineage, blast radius",
        ),
        assumption_json,
    ),
)

"""ContextMesh: a typed context graph that keeps why things hold, and what to redo when they stop."""

from contextmesh.core.errors import (
    BeliefError,
    CanonicalError,
    ContextMeshError,
    ExecutionError,
    IdentityError,
    InputError,
    NotFoundError,
    OntologyError,
    SessionError,
    SnapshotError,
)
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import AssumptionRecord, EdgeRecord, NodeRecord, Provenance
from contextmesh.core.ontology import ONTOLOGY, EdgeType, NodeType, Ontology

__version__ = "0.2.0"

__all__ = [
    "ONTOLOGY",
    "AssumptionRecord",
    "BeliefError",
    "CanonicalError",
    "ContextGraph",
    "ContextMeshError",
    "EdgeRecord",
    "EdgeType",
    "ExecutionError",
    "IdentityError",
    "InputError",
    "NodeRecord",
    "NodeType",
    "NotFoundError",
    "Ontology",
    "OntologyError",
    "Provenance",
    "SessionError",
    "SnapshotError",
]

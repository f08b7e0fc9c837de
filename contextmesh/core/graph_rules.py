"""What a write to the graph must satisfy, checked before anything is stored.

Each rule raises :class:`OntologyError` naming the value and the GRAPH.md rule it breaks: a node
type the ontology defines, the must-carry names of that type, an edge type with a legal pair of
endpoint types and no self edge, a finite positive weight, and — once an explicit-id decision is
recorded — no new edge of a kind its content digest vouches for. :class:`ContextGraph` applies
them on every write; the graph file's loader applies the edge rules to every stored edge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextmesh.core.errors import OntologyError
from contextmesh.core.model import NodeRecord, Provenance
from contextmesh.core.ontology import Ontology

__all__ = [
    "DIGEST_COVERED",
    "check_edge",
    "check_evidence",
    "check_must_carry",
    "check_node_type",
    "check_not_frozen",
    "is_digest_covered",
]

# Edge types out of an explicit-id decision whose targets its content digest vouches for.
DIGEST_COVERED = frozenset({"cites", "derived_from", "produces", "supersedes"})
_FIELD_NAMES = frozenset(NodeRecord.model_fields)
_INFINITY = float("inf")  # once, not a float() call per edge


def is_digest_covered(edge_type: str, target_type: str) -> bool:
    """True when an edge out of an explicit decision is part of what its digest covers."""
    return edge_type in DIGEST_COVERED or (edge_type == "depends_on" and target_type == "assumption")


def check_node_type(ontology: Ontology, node_type: str) -> None:
    """The ontology defines ``node_type``."""
    if node_type not in ontology.must_carry:
        raise OntologyError(f"no such node type '{node_type}'; GRAPH.md defines {sorted(ontology.node_types)}")


def check_must_carry(
    ontology: Ontology,
    node_type: str,
    node_id: str,
    attrs: Mapping[str, Any],
    provenance: Provenance | None,
    embedding: str | None,
) -> None:
    """The node carries every must-carry name of its type."""
    # A required name that is a record field is satisfied only by that field being set; the
    # nullable fields are provenance and embedding (the others always hold a value).
    required = ontology.must_carry[node_type]
    fields = {"provenance": provenance, "embedding": embedding}
    missing = sorted(
        name
        for name in required
        if (name in fields and fields[name] is None) or (name not in _FIELD_NAMES and name not in attrs)
    )
    if missing:
        raise OntologyError(
            f"{node_type} node '{node_id}' is missing {', '.join(missing)}; "
            f"GRAPH.md's Must carry for {node_type} is {sorted(required)}"
        )


def check_edge(
    ontology: Ontology,
    legal_pairs: Mapping[str, frozenset[tuple[str, str]]],
    nodes: Mapping[str, NodeRecord],
    src: str,
    edge_type: str,
    dst: str,
    weight: float,
) -> tuple[NodeRecord, NodeRecord]:
    """A known type between two known, distinct nodes whose types it allows, with a usable weight;
    returns the two endpoints."""
    legal = legal_pairs.get(edge_type)
    if legal is None:
        raise OntologyError(f"no such edge type '{edge_type}'; GRAPH.md defines {sorted(ontology.edge_types)}")
    source = nodes.get(src)
    if source is None:
        raise OntologyError(f"unknown source node '{src}'")
    target = nodes.get(dst)
    if target is None:
        raise OntologyError(f"unknown target node '{dst}'")
    if src == dst:
        raise OntologyError(f"self edge on '{src}'")
    if (source.type, target.type) not in legal:
        allowed = ", ".join(f"{a}->{b}" for a, b in sorted(legal))
        raise OntologyError(
            f"{source.type}-[{edge_type}]->{target.type} is not a legal pair; GRAPH.md allows {allowed}"
        )
    if type(weight) is not float or not weight > 0.0 or weight == _INFINITY:
        raise OntologyError(f"edge weight must be a finite float above 0, not {weight!r}")
    return source, target


def check_not_frozen(source: NodeRecord, target: NodeRecord, edge_type: str) -> None:
    """No new digest-covered edge out of a decision recorded with an explicit id."""
    if (
        source.type == "decision"
        and source.attrs.get("decision_identity") == "explicit"
        and is_digest_covered(edge_type, target.type)
    ):
        raise OntologyError(
            f"decision '{source.id}' was recorded with an explicit id, so its {edge_type} edges are part of the "
            f"content its digest vouches for; refusing to add {source.id}-[{edge_type}]->{target.id} -- pass it to "
            "DecisionLog.decide() instead"
        )


def missing_message(kind: str, key: str, known: Mapping[str, object]) -> str:
    """The error text for a node or edge id the graph does not hold, with near spellings when few."""
    from difflib import get_close_matches  # noqa: PLC0415 - only on the error path

    near = get_close_matches(key, list(known), n=3, cutoff=0.8) if len(known) < 50_000 else []
    hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
    return f"no {kind} '{key}' in this graph{hint}"


def check_evidence(
    nodes: Mapping[str, NodeRecord], src: str, edge_type: str, dst: str, evidence_ids: tuple[str, ...]
) -> None:
    """Every evidence id of an edge names a node: the loader refuses a file where one does not
    (graph-v3 G46), so a write that let one through would store a graph that no longer loads."""
    for evidence_id in evidence_ids:
        if evidence_id not in nodes:
            raise OntologyError(
                f"evidence id '{evidence_id}' of '{src}'-[{edge_type}]->'{dst}' names no node; "
                "an edge's evidence ids name nodes of the graph (graph-v3 G46)"
            )

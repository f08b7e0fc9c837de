"""The graph file format ``contextmesh.graph`` v3: a writer and a strict loader.

``docs/formats/graph-v3.md`` specifies the format for an independent reader. In short: one JSON
object with ``schema``, ``version`` (3), ``ontology`` (the digest of the tables the graph was
checked against), ``build``, and the lists ``nodes``, ``edges`` and ``assumptions`` in insertion
order. Object keys are sorted; the file ends with a newline.

Invariants of the loader (``tests/formats/test_graph_file.py`` and the corruption matrix pin them):

1. Every field of every record is required; ``null`` is accepted only where the writer writes it;
   values are type-checked, never coerced; unknown fields and duplicate keys are refused.
2. Every node and edge is held to the same rules as a live write, so an illegal pair or a missing
   must-carry name in a file is refused like one in code. Nodes and edges are first checked and
   built column by column (:mod:`contextmesh.formats.graph_columns`, validated once, constructed
   without re-validation; a parted file's edges straight from its edge columns, ADR 0034); a list
   that pass does not accept whole is restored record by record through the live write's checks,
   which report the first problem in the format page's order.
3. Cross-references are checked once every record exists: edge endpoints, evidence ids naming
   nodes, assumption node ↔ record agreement, two-sided supersession, bound edges, and the
   recomputed fingerprint of every explicit-id decision.
4. A refused file raises :class:`SnapshotError` with a path and leaves no partial graph behind
   (the graph is built privately and returned only when every check passed).
5. ``dump_graph(load_graph(b)) == b`` for every file this module wrote.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from contextmesh.core import vectors
from contextmesh.core.canonical import digest
from contextmesh.core.errors import ContextMeshError, SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.graph_rules import check_edge
from contextmesh.core.ids import edge_id
from contextmesh.core.model import AssumptionRecord, EdgeRecord, EdgeSchema, NodeSchema, Provenance
from contextmesh.core.ontology import ONTOLOGY, Ontology
from contextmesh.formats.graph_columns import fast_edges, fast_nodes
from contextmesh.formats.graph_edge_columns import fast_edge_columns
from contextmesh.formats.graph_edge_parts import EdgeColumns
from contextmesh.formats.graph_parts import graph_bytes, parse_graph
from contextmesh.formats.graph_references import check_cross_references
from contextmesh.formats.graph_upgrade import upgrade_v2
from contextmesh.formats.records import (
    check_header,
    exact_keys,
    expect_dict,
    expect_list,
    validate_record,
)

__all__ = [
    "GRAPH_SCHEMA",
    "GRAPH_VERSION",
    "collector_paused",
    "dump_graph",
    "graph_from_dict",
    "graph_to_dict",
    "load_graph",
    "ontology_digest",
]

GRAPH_SCHEMA = "contextmesh.graph"
GRAPH_VERSION = 3
_TOP_FIELDS = ("schema", "version", "ontology", "build", "nodes", "edges", "assumptions")
# Read once: pydantic's ``model_fields`` is a computed class property, and asking it per record
# cost microseconds a record.
_PROVENANCE_FIELDS = tuple(Provenance.model_fields)

_RecordT = TypeVar("_RecordT", bound=BaseModel)
# One validator call per list instead of one per record: the per-record Python around the
# validator (key checks, wrappers) cost as much as the validation itself.
_ASSUMPTION_LIST = TypeAdapter(list[AssumptionRecord])


def ontology_digest(ontology: Ontology) -> str:
    """SHA-256 over the canonical form of the tables that decide what a graph may hold."""
    return digest(
        {
            "node_types": list(ontology.node_types),
            "must_carry": {t: sorted(ontology.must_carry[t]) for t in ontology.node_types},
            "edge_types": list(ontology.edge_types),
            "pairs": {t: [list(p) for p in ontology.legal_pairs(t)] for t in ontology.edge_types},
            "invalidation": {t: ontology.invalidation[t] for t in ontology.edge_types},
        }
    )


def provenance_data(p: Provenance | None) -> dict[str, Any] | None:
    """A record's provenance as the graph file writes it (the journal writes records the same way)."""
    if p is None:
        return None
    return {
        "source_id": p.source_id,
        "span": None if p.span is None else list(p.span),
        "extractor": p.extractor,
        "checks": list(p.checks),
        "recorded_at_build": p.recorded_at_build,
    }


def assumption_data(a: AssumptionRecord) -> dict[str, Any]:
    """An assumption record as the graph file writes it (the journal writes changed ones the same way)."""
    return {
        "id": a.id,
        "statement": a.statement,
        "status": a.status,
        "version": a.version,
        "created_by": a.created_by,
        "created_at_build": a.created_at_build,
        "evidence_ids": list(a.evidence_ids),
        "supersedes": a.supersedes,
        "superseded_by": a.superseded_by,
        "rejected_at_build": a.rejected_at_build,
    }


def graph_to_dict(graph: ContextGraph) -> dict[str, Any]:
    """The graph as plain data, records in insertion order."""
    nodes = [
        {
            "id": n.id,
            "type": n.type,
            "label": n.label,
            "attrs": n.attrs,
            "provenance": provenance_data(n.provenance),
            "embedding": n.embedding,
            "build": n.build,
            "walks": n.walks,
            "pruned": n.pruned,
            "invalidated": n.invalidated,
        }
        for n in graph.nodes.values()
    ]
    edges = [
        {
            "id": e.id,
            "src": e.src,
            "dst": e.dst,
            "type": e.type,
            "evidence_ids": list(e.evidence_ids),
            "weight": e.weight,
            "build": e.build,
            "assumption_id": e.assumption_id,
            "traversals": e.traversals,
            "invalidated": e.invalidated,
        }
        for e in graph.edges.values()
    ]
    assumptions = [assumption_data(a) for a in graph.assumptions.values()]
    return {
        "schema": GRAPH_SCHEMA,
        "version": GRAPH_VERSION,
        "ontology": ontology_digest(graph.ontology),
        "build": graph.build,
        "nodes": nodes,
        "edges": edges,
        "assumptions": assumptions,
    }


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector while a whole graph is written or restored.

    Both allocate millions of objects that all stay alive; the collector's repeated full passes
    over them free nothing and cost seconds on a 500,000-edge graph. The caller's setting is
    restored afterwards (a collector that was already off stays off).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _validate_all(
    adapter: TypeAdapter[list[_RecordT]], model: type[BaseModel], raw: list[Any]
) -> list[_RecordT] | None:
    """Every record validated in one call, or ``None`` when any record is wrong.

    Accepts exactly what per-record :func:`validate_record` accepts (a plain dict with exactly
    the model's keys, then the same validator), so on ``None`` the caller validates record by
    record and reports the first problem, in file order, with the same error as ever.
    """
    fields = model.model_fields.keys()
    if not all(type(record) is dict and record.keys() == fields for record in raw):
        return None
    try:
        return adapter.validate_python(raw)
    except ValidationError:
        return None


def dump_graph(graph: ContextGraph, *, part_records: int | None = None) -> bytes:
    """The file bytes of a graph: one document, or parts of ``part_records`` records (graph_parts)."""
    with collector_paused():
        return graph_bytes(graph_to_dict(graph), part_records)


def load_graph(data: bytes, ontology: Ontology = ONTOLOGY) -> ContextGraph:
    """Parse and restore a graph file, refusing anything that could not be restored faithfully."""
    with collector_paused():
        graph = graph_from_dict(parse_graph(data), ontology)
    release_freed_memory()
    return graph


def release_freed_memory() -> None:
    """Hand the C heap's free memory back to the operating system (glibc's ``malloc_trim``).

    A load frees the parsed document (several times the graph's size) in blocks the C allocator
    keeps for reuse; on a 100,000-node graph that kept 80 MB resident for nothing. Elsewhere, or
    where the call is unavailable, this does nothing.
    """
    global _TRIM  # noqa: PLW0603 - looked up once per process
    if _TRIM is None:
        _TRIM = _find_trim()
    if _TRIM is not False:
        _TRIM(0)


def _find_trim() -> Any:
    if sys.platform != "linux":
        return False
    try:
        import ctypes  # noqa: PLC0415 - only where the C library may have malloc_trim

        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return False


_TRIM: Any = None


def graph_from_dict(data: Any, ontology: Ontology = ONTOLOGY) -> ContextGraph:
    """Restore a graph from plain data (see the module's invariants)."""
    with collector_paused():
        return _graph_from_dict(data, ontology)


def _graph_from_dict(data: Any, ontology: Ontology) -> ContextGraph:
    top = expect_dict(data, "$")
    upgraded = top.get("schema") == GRAPH_SCHEMA and type(top.get("version")) is int and top["version"] == 2
    if upgraded and type(top.get("edges")) is EdgeColumns:  # v2 was never parted; held to v2's rules all the same
        top["edges"] = top["edges"].records(top["nodes"])
    if upgraded:
        top = upgrade_v2(top)  # v2's edge ids checked, then renamed to v3's (ADR 0021)
    check_header(top, GRAPH_SCHEMA, GRAPH_VERSION, original_versions=(1,), upgraded_versions=(2,))
    exact_keys(top, _TOP_FIELDS, "$")
    expected = ontology_digest(ontology)
    if top["ontology"] != expected:
        raise SnapshotError(
            "ontology",
            f"{top['ontology']!r}",
            f"the graph was checked against other tables than this GRAPH.md (digest {expected})",
        )
    build = top["build"]
    if type(build) is not int or build < 0:
        raise SnapshotError("build", repr(build), "the build counter is a non-negative integer")
    graph = ContextGraph(ontology)
    graph.build = build
    raw_nodes = expect_list(top["nodes"], "nodes")
    if not fast_nodes(graph, raw_nodes):
        _restore_nodes(graph, raw_nodes)
    _restore_assumptions(graph, expect_list(top["assumptions"], "assumptions"))
    if type(top["edges"]) is EdgeColumns:  # a parted file's edge columns (ADR 0034)
        if not fast_edge_columns(graph, top["edges"]):
            _restore_edges(graph, top["edges"].records(top["nodes"]))
    else:
        raw_edges = expect_list(top["edges"], "edges")
        if not fast_edges(graph, raw_edges):
            _restore_edges(graph, raw_edges)
    check_cross_references(graph)
    graph.upgraded_from = 2 if upgraded else None
    return graph


def _refuse(path: str, exc: ContextMeshError, rule: str) -> SnapshotError:
    return SnapshotError(path, str(exc), rule)


def _restore_nodes(graph: ContextGraph, raw_nodes: list[Any]) -> None:
    """G11-G20 record by record, through the live write's checks (the pass that names problems)."""
    for index, raw in enumerate(raw_nodes):
        path = f"nodes[{index}]"
        record = validate_record(NodeSchema, raw, path)
        if record.provenance is not None:
            exact_keys(raw["provenance"], _PROVENANCE_FIELDS, f"{path}.provenance")
        if record.id in graph.nodes:
            raise SnapshotError(f"{path}.id", repr(record.id), "node ids are unique within a file")
        if record.build > graph.build:
            raise SnapshotError(
                f"{path}.build", str(record.build), f"no node is newer than the graph's build {graph.build}"
            )
        if record.embedding is not None and (problem := vectors.check(record.embedding)) is not None:
            raise SnapshotError(f"{path}.embedding", repr(record.embedding[:40]), problem)
        _check_provenance(record.provenance, f"{path}.provenance", graph.build)
        try:
            if record.type == "decision":
                node = graph._mint_decision(record.id, record.label, record.attrs, record.provenance)
            elif record.type == "assumption":
                # Assumption nodes are restored with their records, which own status and version.
                node = graph._put_node(record.type, record.label, record.id, record.attrs, None, record.embedding)
            else:
                node = graph._put_node(
                    record.type, record.label, record.id, record.attrs, record.provenance, record.embedding
                )
        except ContextMeshError as exc:
            raise _refuse(path, exc, "every node is restored through the same checks as a live write") from None
        node.provenance = record.provenance
        if node.embedding != record.embedding:
            node.embedding = record.embedding
        node.build = record.build
        node.walks = record.walks
        node.pruned = record.pruned
        node.invalidated = record.invalidated


def _check_provenance(provenance: Provenance | None, path: str, build: int) -> None:
    if provenance is None:
        return
    if provenance.span is not None and provenance.span[0] > provenance.span[1]:
        raise SnapshotError(f"{path}.span", repr(list(provenance.span)), "a span's start is not after its end")
    if provenance.recorded_at_build > build:
        raise SnapshotError(
            f"{path}.recorded_at_build", str(provenance.recorded_at_build), f"newer than the graph's build {build}"
        )
    if len(set(provenance.checks)) != len(provenance.checks):
        raise SnapshotError(f"{path}.checks", repr(list(provenance.checks)), "each check is listed once")


def _restore_assumptions(graph: ContextGraph, raw_records: list[Any]) -> None:
    validated = _validate_all(_ASSUMPTION_LIST, AssumptionRecord, raw_records)
    for index, raw in enumerate(raw_records):
        path = f"assumptions[{index}]"
        record = validate_record(AssumptionRecord, raw, path) if validated is None else validated[index]
        if record.id in graph.assumptions:
            raise SnapshotError(f"{path}.id", repr(record.id), "each assumption has one record")
        node = graph.nodes.get(record.id)
        if node is None or node.type != "assumption":
            found = "no node" if node is None else f"a {node.type} node"
            raise SnapshotError(f"{path}.id", f"{found} under {record.id!r}", "every record mirrors an assumption node")
        if node.label != record.statement:
            raise SnapshotError(
                f"{path}.statement", repr(record.statement), f"the assumption node's label is {node.label!r}"
            )
        mirror = (node.attrs.get("status"), node.attrs.get("version"))
        # Compare types too: True == 1 and 1.0 == 1 in Python, but not in the file.
        if mirror != (record.status, record.version) or type(mirror[1]) is not int:
            raise SnapshotError(
                f"{path}.status",
                f"node attrs say status={mirror[0]!r}, version={mirror[1]!r} but the record says "
                f"status={record.status!r}, version={record.version!r}",
                "an assumption node mirrors its record exactly",
            )
        for name in ("created_at_build", "rejected_at_build"):
            value = getattr(record, name)
            if value is not None and value > graph.build:
                raise SnapshotError(f"{path}.{name}", str(value), f"newer than the graph's build {graph.build}")
        if record.rejected_at_build is not None and record.rejected_at_build < record.created_at_build:
            raise SnapshotError(
                f"{path}.rejected_at_build", str(record.rejected_at_build), "an assumption falls after it was created"
            )
        if record.supersedes is not None and record.supersedes == record.id:
            raise SnapshotError(f"{path}.supersedes", repr(record.supersedes), "an assumption cannot supersede itself")
        if record.superseded_by is not None and record.superseded_by == record.id:
            raise SnapshotError(
                f"{path}.superseded_by", repr(record.superseded_by), "an assumption cannot supersede itself"
            )
        if record.superseded_by is not None and record.status == "active":
            raise SnapshotError(
                f"{path}.status",
                f"'active' with superseded_by {record.superseded_by!r}",
                "a record with a successor is 'superseded' (or 'rejected' when the successor replaced it)",
            )
        if len(set(record.evidence_ids)) != len(record.evidence_ids):
            raise SnapshotError(f"{path}.evidence_ids", repr(list(record.evidence_ids)), "evidence ids are listed once")
        if record.status == "rejected" and record.rejected_at_build is None:
            raise SnapshotError(f"{path}.rejected_at_build", "null", "a rejected assumption records when it fell")
        if record.status != "rejected" and record.rejected_at_build is not None:
            raise SnapshotError(
                f"{path}.rejected_at_build", str(record.rejected_at_build), "only a rejected assumption has one"
            )
        graph.assumptions[record.id] = record
    for index, node in enumerate(graph.nodes.values()):
        if node.type == "assumption" and node.id not in graph.assumptions:
            raise SnapshotError(f"nodes[{index}].id", repr(node.id), "every assumption node has a record")


def _restore_edges(graph: ContextGraph, raw_edges: list[Any]) -> None:
    """G37-G47 edge by edge, in file order (the pass that names problems)."""
    triples: set[tuple[str, str, str]] = set()
    for index, raw in enumerate(raw_edges):
        path = f"edges[{index}]"
        record = validate_record(EdgeSchema, raw, path)
        if record.id in graph.edges:
            raise SnapshotError(f"{path}.id", repr(record.id), "edge ids are unique within a file")
        if (record.src, record.type, record.dst) in triples:
            raise SnapshotError(
                path, f"a second {record.src}-[{record.type}]->{record.dst}", "one edge per type and endpoint pair"
            )
        if record.build > graph.build:
            raise SnapshotError(
                f"{path}.build", str(record.build), f"no edge is newer than the graph's build {graph.build}"
            )
        try:
            check_edge(graph.ontology, graph._legal, graph.nodes, record.src, record.type, record.dst, record.weight)
        except ContextMeshError as exc:
            raise _refuse(path, exc, "every edge is restored through the same checks as a live write") from None
        expected = edge_id(record.src, record.type, record.dst)
        if record.id != expected:
            raise SnapshotError(
                f"{path}.id", repr(record.id), f"an edge's id is derived from its endpoints: {expected!r}"
            )
        if len(set(record.evidence_ids)) != len(record.evidence_ids):
            raise SnapshotError(f"{path}.evidence_ids", repr(list(record.evidence_ids)), "evidence ids are listed once")
        for position, evidence in enumerate(record.evidence_ids):
            if evidence not in graph.nodes:
                raise SnapshotError(f"{path}.evidence_ids[{position}]", repr(evidence), "evidence ids name nodes")
        if record.assumption_id is not None and record.assumption_id not in graph.assumptions:
            raise SnapshotError(f"{path}.assumption_id", repr(record.assumption_id), "a bound edge names an assumption")
        triples.add((record.src, record.type, record.dst))
        source, target = graph.nodes[record.src], graph.nodes[record.dst]
        graph._store_edge(
            EdgeRecord(
                record.id,
                source.id,
                target.id,
                graph._names[record.type],
                tuple(graph.nodes[e].id for e in record.evidence_ids),
                record.weight,
                record.build,
                record.assumption_id,
                record.traversals,
                record.invalidated,
            )
        )

"""Named datasets for ``tests/test_graph_file.py``: one complete valid graph and every way to spoil its file.

The valid graph holds every node type, both decision identities, an active, a superseded and a
rejected assumption (with its evidence, its ``contradicts`` edge and an invalidated edge bound to
it), embeddings, provenance with and without a span, pruned and invalidated flags, walk and
traversal telemetry and weights other than 1.0. ``FIXTURE`` is its file.

Two kinds of spoiled file live here:

* :func:`matrix_cases` -- generated: every field of every record type (top level, node, edge,
  assumption, provenance) deleted, nulled, retyped, given an unknown sibling and written twice.
* :data:`SEMANTIC_CASES` -- written by hand: files whose every field is well typed but whose
  content breaks a rule of the format (dangling endpoints, one-sided supersession, ...).

Each case names the ``.path`` the loader must report and a fragment of its message, or says the
file is accepted. A case whose expectation the loader does not meet yet carries ``bug``: the test
marks it ``xfail(strict=True)``, so fixing the loader turns it into a failure that asks for the mark
to be removed.

The module is long because it is a table: one entry per named dataset, one dataset per rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contextmesh.core import vectors
from contextmesh.core.canonical import loads
from contextmesh.core.decision_identity import decision_fingerprint
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import edge_id, slug
from contextmesh.core.model import AssumptionRecord, EdgeRecord, NodeRecord, Provenance
from contextmesh.formats.graph_file import dump_graph

Doc = dict[str, Any]

# -- the valid graph -------------------------------------------------------------------------

EXPLICIT_DECISION = "decision:adopt-pgvector"
AUTO_DECISION = "decision:auto:0001"


def _assumption(statement: str, build: int, **changes: Any) -> AssumptionRecord:
    fields: dict[str, Any] = {
        "id": slug(statement, "assumption"),
        "statement": statement,
        "status": "active",
        "version": 1,
        "created_by": "planner",
        "created_at_build": build,
        "evidence_ids": (),
        "supersedes": None,
        "superseded_by": None,
        "rejected_at_build": None,
    }
    fields.update(changes)
    return AssumptionRecord(**fields)


def build_graph() -> ContextGraph:
    """The complete valid graph every case starts from (a pure function: same graph every call)."""
    g = ContextGraph()
    source = g.add_node(
        "source",
        "Design notes, May",
        attrs={"origin": "docs/design.md", "retrieved_at": "2024-05-01T09:00:00Z"},
        embedding=vectors.encode([0.5, -0.25, 0.125, 1.0]),
    )
    alpha = g.add_node(
        "entity",
        "alpha",
        attrs={"canonical": "Alpha", "aliases": ["alpha", "α-store"]},
        embedding=vectors.encode([1.0, 0.0, -1.0, 0.0]),
    )
    bravo = g.add_node(
        "entity",
        "bravo",
        attrs={"canonical": "Bravo", "aliases": []},
        provenance=Provenance(source_id=source.id, extractor="ner", recorded_at_build=0),
    )
    g.next_build()  # build 1
    claim = g.add_node(
        "claim",
        "Alpha scales to ten million rows",
        attrs={"confidence": 0.75},
        provenance=Provenance(
            source_id=source.id, span=(12, 44), extractor="regex", checks=("quoted", "dated"), recorded_at_build=1
        ),
        embedding=vectors.encode([0.9, 0.1, -0.3, 0.2]),
    )
    old_claim = g.add_node(
        "claim",
        "Bravo is deprecated",
        provenance=Provenance(source_id=source.id, extractor="manual", recorded_at_build=1),
    )
    benchmark = g.add_node("evidence", "Load test at 12M rows failed", attrs={"kind": "benchmark"})
    incident = g.add_node("evidence", "Incident 41 report", attrs={"kind": "incident", "severity": 2})

    budget = _assumption("The budget allows one database", 1, created_by="agent")
    g.add_assumption(budget)
    older = _assumption("Traffic stays under 100 rps", 1)
    g.add_assumption(older)
    newer = _assumption("Traffic stays under 500 rps", 1, version=2, supersedes=older.id)
    g.add_assumption(newer)
    g.sync_assumption(older.model_copy(update={"status": "superseded", "superseded_by": newer.id}))
    fits = _assumption("One node holds the data", 1)
    g.add_assumption(fits)

    g.add_edge(claim.id, "mentions", alpha.id, weight=1.5)
    g.add_edge(claim.id, "mentions", bravo.id, weight=1.5)
    g.add_edge(claim.id, "derived_from", source.id)
    g.add_edge(old_claim.id, "derived_from", source.id, weight=0.5)
    g.add_edge(old_claim.id, "cites", claim.id, weight=0.25)
    g.add_edge(bravo.id, "resolves_to", alpha.id, weight=0.75)
    g.add_edge(alpha.id, "derived_from", source.id)
    g.add_edge(incident.id, "supports", claim.id, evidence_ids=(incident.id,), weight=2.0)
    g.add_edge(newer.id, "supersedes", older.id)
    g.add_edge(budget.id, "justified_by", incident.id)

    g.next_build()  # build 2
    g._mint_decision(
        EXPLICIT_DECISION,
        "Adopt pgvector for retrieval",
        {"rationale": "Alpha scales and the budget allows one database", "decision_identity": "explicit"},
        Provenance(source_id=source.id, span=(0, 11), extractor="planner", recorded_at_build=2),
    )
    for edge_type, target in (
        ("cites", source.id),
        ("derived_from", claim.id),
        ("produces", bravo.id),
        ("depends_on", budget.id),
        ("depends_on", fits.id),
    ):
        g._put_edge(EXPLICIT_DECISION, edge_type, target, (), 1.0, frozen_check=False)
    g.node(EXPLICIT_DECISION).attrs["decision_digest"] = decision_fingerprint(g, EXPLICIT_DECISION)
    g.add_edge(claim.id, "supports", EXPLICIT_DECISION, weight=0.5)

    g._mint_decision(
        AUTO_DECISION,
        "Shard by tenant",
        {"rationale": "One node holds the data, so shard later", "decision_identity": "auto"},
        Provenance(source_id=source.id, extractor="planner", recorded_at_build=2),
    )
    charlie = g.add_node("entity", "charlie shard", attrs={"canonical": "Charlie", "aliases": ["c1"]})
    g.add_edge(AUTO_DECISION, "depends_on", EXPLICIT_DECISION)
    produced = g.add_edge(AUTO_DECISION, "produces", charlie.id, evidence_ids=(claim.id,), weight=3.25)
    g.bind_edge(produced.id, fits.id)

    g.next_build()  # build 3: the load test disproves "One node holds the data"
    contradiction = g.add_edge(benchmark.id, "contradicts", fits.id, evidence_ids=(benchmark.id,))
    g.sync_assumption(
        fits.model_copy(update={"status": "rejected", "rejected_at_build": 3, "evidence_ids": (benchmark.id,)})
    )
    g.invalidate(node_ids=(fits.id, AUTO_DECISION, charlie.id), edge_ids=(produced.id,))
    g.prune((old_claim.id,))
    g.record_walk((claim.id, alpha.id, bravo.id), (edge_id(claim.id, "mentions", alpha.id),))
    g.record_walk((claim.id, source.id), (edge_id(claim.id, "derived_from", source.id), contradiction.id))
    return g


FIXTURE = dump_graph(build_graph())


def document() -> Doc:
    """A fresh parse of the valid file, to mutate."""
    doc: Doc = loads(FIXTURE)
    return doc


def node_index(node_id: str) -> int:
    return [n["id"] for n in document()["nodes"]].index(node_id)


def edge_index(src: str, edge_type: str, dst: str) -> int:
    return [e["id"] for e in document()["edges"]].index(edge_id(src, edge_type, dst))


def assumption_index(assumption_id: str) -> int:
    return [a["id"] for a in document()["assumptions"]].index(assumption_id)


def _id_of(label: str) -> str:
    return next(n["id"] for n in document()["nodes"] if n["label"] == label)


SOURCE = _id_of("Design notes, May")
ALPHA = _id_of("alpha")
BRAVO = _id_of("bravo")
CLAIM = _id_of("Alpha scales to ten million rows")
OLD_CLAIM = _id_of("Bravo is deprecated")
BENCHMARK = _id_of("Load test at 12M rows failed")
INCIDENT = _id_of("Incident 41 report")
BUDGET = _id_of("The budget allows one database")
OLDER = _id_of("Traffic stays under 100 rps")
NEWER = _id_of("Traffic stays under 500 rps")
FITS = _id_of("One node holds the data")
CHARLIE = _id_of("charlie shard")

# -- turning a document back into bytes ----------------------------------------------------------


def encode(doc: Any) -> bytes:
    """Compact JSON with sorted keys, written by the standard library (not by the code under test)."""
    return (json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


_MARK = "\u2063duplicate-marker"


def with_duplicate_key(doc: Doc, holder: dict[str, Any], key: str) -> bytes:
    """The bytes of ``doc`` with ``key`` written twice (same value) in the object ``holder``."""
    holder[_MARK] = _MARK
    text = encode(doc).decode("utf-8")
    del holder[_MARK]
    marker = json.dumps(_MARK, ensure_ascii=False)
    value = json.dumps(holder[key], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert text.count(f"{marker}:{marker}") == 1
    return text.replace(f"{marker}:{marker}", f"{json.dumps(key)}:{value}").encode("utf-8")


def rename_node(doc: Doc, old: str, new: str) -> None:
    """Rename a node everywhere it is referenced, re-deriving the ids of the edges that touch it."""
    for node in doc["nodes"]:
        if node["id"] == old:
            node["id"] = new
    for edge in doc["edges"]:
        edge["src"] = new if edge["src"] == old else edge["src"]
        edge["dst"] = new if edge["dst"] == old else edge["dst"]
        edge["evidence_ids"] = [new if e == old else e for e in edge["evidence_ids"]]
        edge["id"] = edge_id(edge["src"], edge["type"], edge["dst"])


# -- the corruption matrix ---------------------------------------------------------------------------

MUTATIONS = ("delete", "null", "retype", "unknown", "duplicate")
TOP_FIELDS = ("schema", "version", "ontology", "build", "nodes", "edges", "assumptions")
RECORD_FIELDS: dict[str, tuple[str, ...]] = {
    "top": TOP_FIELDS,
    "nodes": tuple(NodeRecord.model_fields),
    "edges": tuple(EdgeRecord.model_fields),
    "assumptions": tuple(AssumptionRecord.model_fields),
    "provenance": tuple(Provenance.model_fields),
}


@dataclass(frozen=True)
class Case:
    """One spoiled (or legitimately unusual) file and what loading it must do.

    ``path is None`` means the file is accepted; otherwise the loader raises a ContextMeshError
    whose ``.path`` is ``path`` and whose message contains ``fragment``.
    """

    name: str
    make: Callable[[], bytes]
    path: str | None
    fragment: str = ""
    bug: str | None = None


def _target(kind: str, field: str) -> tuple[str, Callable[[Doc], dict[str, Any]]]:
    """Where a matrix mutation of ``kind.field`` is applied: the record's path and a getter."""
    if kind == "top":
        return "", lambda doc: doc
    if kind == "nodes":
        i = node_index(CLAIM)  # every nullable field of this node holds a value
        return f"nodes[{i}]", lambda doc: doc["nodes"][i]
    if kind == "provenance":
        i = node_index(CLAIM)
        return f"nodes[{i}].provenance", lambda doc: doc["nodes"][i]["provenance"]
    if kind == "edges":
        i = edge_index(AUTO_DECISION, "produces", CHARLIE)  # bound, with evidence ids
        return f"edges[{i}]", lambda doc: doc["edges"][i]
    # assumptions: the rejected record holds evidence and rejected_at_build; the supersession
    # fields are exercised on the pair that uses them.
    owner = {"supersedes": NEWER, "superseded_by": OLDER}.get(field, FITS)
    i = assumption_index(owner)
    return f"assumptions[{i}]", lambda doc: doc["assumptions"][i]


def _wrong_type(value: Any) -> Any:
    """A value of another JSON type than ``value``."""
    if isinstance(value, bool):
        return "true"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return 7
    if isinstance(value, list):
        return {"0": value}
    return [value]


def _field_path(prefix: str, field: str) -> str:
    return f"{prefix}.{field}" if prefix else field


def _expect_null(kind: str, field: str, path: str) -> tuple[str | None, str]:
    """Where ``null`` is refused (and why), or ``(None, "")`` where the writer itself writes null."""
    top_rules = {
        "schema": "reads 'contextmesh.graph' files",
        "version": "the version is an integer",
        "ontology": "other tables than this GRAPH.md",
        "build": "non-negative integer",
        "nodes": "a list is required",
        "edges": "a list is required",
        "assumptions": "a list is required",
    }
    if kind == "top":
        return field, top_rules[field]
    if (kind, field) in {("nodes", "embedding"), ("provenance", "span"), ("edges", "assumption_id")}:
        return None, ""
    if (kind, field) == ("nodes", "provenance"):  # a claim must carry provenance
        return path.rsplit(".", 1)[0], "missing provenance"
    if (kind, field) == ("assumptions", "supersedes"):  # the older record still names this one
        return f"assumptions[{assumption_index(OLDER)}].superseded_by", "supersession is two-sided"
    if (kind, field) == ("assumptions", "superseded_by"):  # the newer record still names this one
        return f"assumptions[{assumption_index(NEWER)}].supersedes", "supersession is two-sided"
    if (kind, field) == ("assumptions", "rejected_at_build"):
        return path, "a rejected assumption records when it fell"
    return path, "None"


def _expect_retype(kind: str, field: str, path: str, wrong: Any) -> tuple[str, str]:
    if kind == "top":
        rules = {
            "schema": "reads 'contextmesh.graph' files",
            "version": "the version is an integer",
            "ontology": "other tables than this GRAPH.md",
            "build": "non-negative integer",
        }
        return field, rules.get(field, "a list is required")
    if kind == "edges" and field == "weight":
        return path, "expected a JSON float"
    return path, repr(wrong)


def _matrix_case(kind: str, field: str, mutation: str) -> Case:
    prefix, get = _target(kind, field)
    path = _field_path(prefix, field)
    name = f"{kind}.{field}-{mutation}"

    if mutation == "delete":

        def make() -> bytes:
            doc = document()
            del get(doc)[field]
            return encode(doc)

        if kind == "top" and field in {"schema", "version"}:  # the header is read first
            return Case(name, make, field, "reads 'contextmesh.graph'" if field == "schema" else "integer")
        return Case(name, make, path, "required")

    if mutation == "null":

        def make() -> bytes:
            doc = document()
            get(doc)[field] = None
            return encode(doc)

        where, fragment = _expect_null(kind, field, path)
        return Case(name, make, where, fragment)

    if mutation == "retype":
        wrong = _wrong_type(get(document())[field])

        def make() -> bytes:
            doc = document()
            get(doc)[field] = wrong
            return encode(doc)

        where, fragment = _expect_retype(kind, field, path, wrong)
        return Case(name, make, where, fragment)

    if mutation == "unknown":
        sibling = f"{field}_extra"

        def make() -> bytes:
            doc = document()
            get(doc)[sibling] = get(doc)[field]
            return encode(doc)

        return Case(name, make, _field_path(prefix, sibling), "unknown field")

    def make() -> bytes:
        doc = document()
        return with_duplicate_key(doc, get(doc), field)

    # canonical.loads names the object that holds the key twice ("$" for the top level), and the key.
    return Case(name, make, prefix or "$", f"the key '{field}' twice")


def matrix_cases() -> list[Case]:
    """Every field of every record type × every mutation."""
    return [
        _matrix_case(kind, field, mutation)
        for kind, fields in RECORD_FIELDS.items()
        for field in fields
        for mutation in MUTATIONS
    ]


# -- hand-named semantic cases ---------------------------------------------------------------------


def _edit(change: Callable[[Doc], None]) -> Callable[[], bytes]:
    def make() -> bytes:
        doc = document()
        change(doc)
        return encode(doc)

    return make


def _text(change: Callable[[str], str]) -> Callable[[], bytes]:
    def make() -> bytes:
        text = FIXTURE.decode("utf-8")
        changed = change(text)
        assert changed != text
        return changed.encode("utf-8")

    return make


def _node(doc: Doc, node_id: str) -> dict[str, Any]:
    return next(n for n in doc["nodes"] if n["id"] == node_id)


def _edge(doc: Doc, src: str, edge_type: str, dst: str) -> dict[str, Any]:
    eid = edge_id(src, edge_type, dst)
    return next(e for e in doc["edges"] if e["id"] == eid)


def _record(doc: Doc, assumption_id: str) -> dict[str, Any]:
    return next(a for a in doc["assumptions"] if a["id"] == assumption_id)


def _set(getter: Callable[[Doc], dict[str, Any]], field: str, value: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        getter(doc)[field] = value

    return change


def _dangling_endpoint(doc: Doc) -> None:
    edge = _edge(doc, CLAIM, "mentions", BRAVO)
    edge["dst"] = "entity:nobody-000000"
    edge["id"] = edge_id(edge["src"], edge["type"], edge["dst"])


def _illegal_pair(doc: Doc) -> None:
    edge = _edge(doc, CLAIM, "mentions", BRAVO)
    edge["type"] = "produces"  # claim -> entity is legal for mentions only
    edge["id"] = edge_id(edge["src"], edge["type"], edge["dst"])


def _unknown_edge_type(doc: Doc) -> None:
    edge = _edge(doc, CLAIM, "mentions", BRAVO)
    edge["type"] = "likes"
    edge["id"] = edge_id(edge["src"], edge["type"], edge["dst"])


def _second_copy_of_edge(doc: Doc, new_id: str | None) -> None:
    copy = dict(_edge(doc, CLAIM, "mentions", ALPHA))
    copy["id"] = new_id or copy["id"]
    doc["edges"].append(copy)


def _drop_node(node_id: str) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["nodes"] = [n for n in doc["nodes"] if n["id"] != node_id]

    return change


def _drop_record(assumption_id: str) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["assumptions"] = [a for a in doc["assumptions"] if a["id"] != assumption_id]

    return change


def _original_v1(doc: Doc) -> None:
    # The original project's snapshot: version 1, no ontology digest, its own record shapes.
    doc["version"] = 1
    del doc["ontology"]


def _active_but_superseded_by(doc: Doc) -> None:
    _record(doc, OLDER)["status"] = "active"
    _node(doc, OLDER)["attrs"]["status"] = "active"


def _self_supersession(doc: Doc) -> None:
    record = _record(doc, BUDGET)
    record["supersedes"] = record["superseded_by"] = BUDGET


N = node_index
E = edge_index
A = assumption_index

SEMANTIC_CASES: tuple[Case, ...] = (
    # -- the bytes ---------------------------------------------------------------------------------
    Case("not-json", lambda: b"graph: yes\n", "$", "not strict JSON"),
    Case("empty-file", lambda: b"", "$", "not strict JSON"),
    Case("top-level-a-list", lambda: b"[]\n", "$", "an object is required"),
    Case("top-level-a-string", lambda: b'"contextmesh.graph"\n', "$", "an object is required"),
    Case("nan-literal", _text(lambda t: t.replace('"weight":2.0', '"weight":NaN', 1)), "$", "not strict JSON"),
    Case(
        "infinity-literal", _text(lambda t: t.replace('"weight":2.0', '"weight":Infinity', 1)), "$", "not strict JSON"
    ),
    Case(
        "integer-beyond-2-53",
        _edit(lambda d: _node(d, CLAIM).update(walks=2**53)),
        f"nodes[{N(CLAIM)}].walks",
        "±(2**53 - 1)",
    ),
    Case(
        "integer-beyond-64-bits-where-a-float-is-expected",
        _text(lambda t: t.replace('"weight":2.0', '"weight":18446744073709551616', 1)),
        f"edges[{E(INCIDENT, 'supports', CLAIM)}].weight",
        "integers must lie within",
    ),
    Case(
        "duplicate-key-nested-in-attrs",
        _text(lambda t: t.replace('"kind":"benchmark"', '"kind":"benchmark","kind":"opinion"', 1)),
        f"nodes[{N(BENCHMARK)}].attrs",
        "the key 'kind' twice",
    ),
    # -- the header --------------------------------------------------------------------------------
    Case("original-project-v1-file", _edit(_original_v1), "version", "file of the original ContextMesh project"),
    # Read as v2, a v3 file's first edge id is not the v2 id its triple derives (G6's upgrade check).
    Case("v3-ids-in-a-v2-file", _edit(_set(lambda d: d, "version", 2)), "edges[0].id", "a v2 edge's id is derived"),
    Case(
        "future-version-4",
        _edit(_set(lambda d: d, "version", 4)),
        "version",
        "reads only v3 (and v2, upgraded on load)",
    ),
    Case("version-as-bool", _edit(_set(lambda d: d, "version", True)), "version", "integer"),
    Case(
        "wrong-schema",
        _edit(_set(lambda d: d, "schema", "contextmesh.resolver")),
        "schema",
        "reads 'contextmesh.graph'",
    ),
    Case("ontology-digest-mismatch", _edit(_set(lambda d: d, "ontology", "0" * 64)), "ontology", "other tables"),
    Case("negative-build", _edit(_set(lambda d: d, "build", -1)), "build", "non-negative"),
    # -- values ------------------------------------------------------------------------------------
    Case(
        "string-false-for-a-flag",
        _edit(_set(lambda d: _node(d, CLAIM), "pruned", "false")),
        f"nodes[{N(CLAIM)}].pruned",
        "'false'",
    ),
    Case(
        "bool-where-int",
        _edit(_set(lambda d: _node(d, CLAIM), "walks", True)),
        f"nodes[{N(CLAIM)}].walks",
        "valid integer",
    ),
    Case(
        "int-where-float",
        _edit(_set(lambda d: _edge(d, INCIDENT, "supports", CLAIM), "weight", 1)),
        f"edges[{E(INCIDENT, 'supports', CLAIM)}].weight",
        "expected a JSON float",
    ),
    Case(
        "zero-weight",
        _edit(_set(lambda d: _edge(d, INCIDENT, "supports", CLAIM), "weight", 0.0)),
        f"edges[{E(INCIDENT, 'supports', CLAIM)}].weight",
        "greater than 0",
    ),
    Case(
        "negative-walks",
        _edit(_set(lambda d: _node(d, CLAIM), "walks", -1)),
        f"nodes[{N(CLAIM)}].walks",
        "greater than or equal to 0",
    ),
    Case(
        "empty-node-id",
        _edit(_set(lambda d: _node(d, CHARLIE), "id", "")),
        f"nodes[{N(CHARLIE)}].id",
        "at least 1 character",
    ),
    Case(
        "span-of-three-numbers",
        _edit(lambda d: _node(d, CLAIM)["provenance"].update(span=[1, 2, 3])),
        f"nodes[{N(CLAIM)}].provenance.span",
        "[1, 2, 3]",
    ),
    Case(
        "unknown-assumption-status",
        _edit(_set(lambda d: _record(d, BUDGET), "status", "doubtful")),
        f"assumptions[{A(BUDGET)}].status",
        "'doubtful'",
    ),
    Case(
        "embedding-without-prefix",
        _edit(lambda d: _node(d, CLAIM).update(embedding=_node(d, CLAIM)["embedding"][3:])),
        f"nodes[{N(CLAIM)}].embedding",
        "starts with 'i8:'",
    ),
    Case(
        "embedding-not-base64",
        _edit(_set(lambda d: _node(d, CLAIM), "embedding", "i8:not base64!")),
        f"nodes[{N(CLAIM)}].embedding",
        "padded base64",
    ),
    Case("embedding-of-three-dimensions-is-fine", _edit(_set(lambda d: _node(d, CLAIM), "embedding", "i8:AQID")), None),
    Case(
        "embedding-missing-padding",
        _edit(_set(lambda d: _node(d, CLAIM), "embedding", "i8:AQ")),
        f"nodes[{N(CLAIM)}].embedding",
        "padded base64",
    ),
    Case(
        "embedding-with-minus-128",
        _edit(_set(lambda d: _node(d, CLAIM), "embedding", "i8:gAEC")),
        f"nodes[{N(CLAIM)}].embedding",
        "-128",
    ),
    Case(
        "embedding-empty",
        _edit(_set(lambda d: _node(d, CLAIM), "embedding", "i8:")),
        f"nodes[{N(CLAIM)}].embedding",
        "1 to 4096 dimensions",
    ),
    # -- nodes -------------------------------------------------------------------------------------
    Case(
        "duplicate-node-id",
        _edit(lambda d: d["nodes"].append(dict(_node(d, ALPHA)))),
        f"nodes[{len(document()['nodes'])}].id",
        "node ids are unique",
    ),
    Case(
        "unknown-node-type",
        _edit(_set(lambda d: _node(d, CHARLIE), "type", "person")),
        f"nodes[{N(CHARLIE)}]",
        "no such node type 'person'",
    ),
    Case(
        "source-without-retrieved-at",
        _edit(lambda d: _node(d, SOURCE)["attrs"].pop("retrieved_at")),
        f"nodes[{N(SOURCE)}]",
        "missing retrieved_at",
    ),
    Case(
        "claim-without-provenance",
        _edit(_set(lambda d: _node(d, OLD_CLAIM), "provenance", None)),
        f"nodes[{N(OLD_CLAIM)}]",
        "missing provenance",
    ),
    Case(
        "claim-with-provenance-only-as-an-attr",
        _edit(
            lambda d: _node(d, OLD_CLAIM).update(
                attrs={"provenance": _node(d, OLD_CLAIM)["provenance"]}, provenance=None
            )
        ),
        f"nodes[{N(OLD_CLAIM)}]",
        "missing provenance",
    ),
    Case("entity-without-provenance-is-fine", _edit(_set(lambda d: _node(d, BRAVO), "provenance", None)), None),
    Case(
        "node-newer-than-graph",
        _edit(_set(lambda d: _node(d, CHARLIE), "build", 4)),
        f"nodes[{N(CHARLIE)}].build",
        "newer than the graph's build 3",
    ),
    Case(
        "attrs-value-beyond-2-53",
        _edit(lambda d: _node(d, INCIDENT)["attrs"].update(severity=-(2**53))),
        f"nodes[{N(INCIDENT)}].attrs.severity",
        "±(2**53 - 1)",
    ),
    # -- edges -------------------------------------------------------------------------------------
    Case(
        "dangling-edge-endpoint", _edit(_dangling_endpoint), f"edges[{E(CLAIM, 'mentions', BRAVO)}]", "unknown target"
    ),
    Case(
        "edge-id-not-derived-from-endpoints",
        _edit(_set(lambda d: _edge(d, CLAIM, "mentions", BRAVO), "id", "edge:claim-mentions-bravo-000000")),
        f"edges[{E(CLAIM, 'mentions', BRAVO)}].id",
        "derived from its endpoints",
    ),
    Case(
        "duplicate-edge",
        _edit(lambda d: _second_copy_of_edge(d, None)),
        f"edges[{len(document()['edges'])}].id",
        "edge ids are unique",
    ),
    Case(
        "duplicate-edge-under-another-id",
        _edit(lambda d: _second_copy_of_edge(d, "edge:copy-000000")),
        f"edges[{len(document()['edges'])}]",
        "one edge per type and endpoint pair",
    ),
    Case("illegal-pair", _edit(_illegal_pair), f"edges[{E(CLAIM, 'mentions', BRAVO)}]", "not a legal pair"),
    Case("unknown-edge-type", _edit(_unknown_edge_type), f"edges[{E(CLAIM, 'mentions', BRAVO)}]", "no such edge type"),
    Case(
        "edge-newer-than-graph",
        _edit(_set(lambda d: _edge(d, CLAIM, "mentions", BRAVO), "build", 9)),
        f"edges[{E(CLAIM, 'mentions', BRAVO)}].build",
        "newer than the graph's build 3",
    ),
    Case(
        "edge-evidence-id-not-a-node",
        _edit(_set(lambda d: _edge(d, INCIDENT, "supports", CLAIM), "evidence_ids", ["evidence:ghost-000000"])),
        f"edges[{E(INCIDENT, 'supports', CLAIM)}].evidence_ids[0]",
        "evidence ids name nodes",
    ),
    Case(
        "edge-bound-to-unknown-assumption",
        _edit(_set(lambda d: _edge(d, CLAIM, "mentions", BRAVO), "assumption_id", "assumption:ghost-000000")),
        f"edges[{E(CLAIM, 'mentions', BRAVO)}].assumption_id",
        "a bound edge names an assumption",
    ),
    Case(
        "live-edge-bound-to-rejected-assumption",
        _edit(_set(lambda d: _edge(d, AUTO_DECISION, "produces", CHARLIE), "invalidated", False)),
        f"edges[{E(AUTO_DECISION, 'produces', CHARLIE)}].invalidated",
        "fallen with it",
    ),
    Case(
        "live-edge-bound-to-superseded-assumption-is-fine",
        _edit(_set(lambda d: _edge(d, CLAIM, "mentions", BRAVO), "assumption_id", OLDER)),
        None,
    ),
    # -- assumptions -------------------------------------------------------------------------------
    Case(
        "one-sided-supersedes",
        _edit(_set(lambda d: _record(d, OLDER), "superseded_by", None)),
        f"assumptions[{A(NEWER)}].supersedes",
        "supersession is two-sided",
    ),
    Case(
        "one-sided-superseded-by",
        _edit(_set(lambda d: _record(d, NEWER), "supersedes", None)),
        f"assumptions[{A(OLDER)}].superseded_by",
        "supersession is two-sided",
    ),
    Case(
        "supersedes-names-no-record",
        _edit(_set(lambda d: _record(d, NEWER), "supersedes", "assumption:ghost-000000")),
        f"assumptions[{A(OLDER)}].superseded_by",
        "supersession is two-sided",
    ),
    Case(
        "mirror-status-disagrees",
        _edit(lambda d: _node(d, OLDER)["attrs"].update(status="active")),
        f"assumptions[{A(OLDER)}].status",
        "node attrs say status='active', version=1 but the record says status='superseded'",
    ),
    Case(
        "mirror-version-disagrees",
        _edit(lambda d: _node(d, NEWER)["attrs"].update(version=3)),
        f"assumptions[{A(NEWER)}].status",
        "version=3",
    ),
    Case(
        "mirror-version-as-bool",
        _edit(lambda d: _node(d, BUDGET)["attrs"].update(version=True)),
        f"assumptions[{A(BUDGET)}].status",
        "version=True",
    ),
    Case(
        "mirror-version-as-float",
        _edit(lambda d: _node(d, BUDGET)["attrs"].update(version=1.0)),
        f"assumptions[{A(BUDGET)}].status",
        "version=1.0",
    ),
    Case(
        "assumption-node-without-record",
        _edit(_drop_record(BUDGET)),
        f"nodes[{N(BUDGET)}].id",
        "every assumption node has a record",
    ),
    Case(
        "record-without-node",
        _edit(_drop_node(BUDGET)),
        f"assumptions[{A(BUDGET)}].id",
        "every record mirrors an assumption node",
    ),
    Case(
        "record-names-a-claim",
        _edit(_set(lambda d: _record(d, BUDGET), "id", CLAIM)),
        f"assumptions[{A(BUDGET)}].id",
        "a claim node",
    ),
    Case(
        "duplicate-assumption-record",
        _edit(lambda d: d["assumptions"].append(dict(_record(d, BUDGET)))),
        f"assumptions[{len(document()['assumptions'])}].id",
        "each assumption has one record",
    ),
    Case(
        "statement-differs-from-label",
        _edit(_set(lambda d: _record(d, BUDGET), "statement", "The budget allows two databases")),
        f"assumptions[{A(BUDGET)}].statement",
        "label is 'The budget allows one database'",
    ),
    Case(
        "rejected-without-rejected-at-build",
        _edit(_set(lambda d: _record(d, FITS), "rejected_at_build", None)),
        f"assumptions[{A(FITS)}].rejected_at_build",
        "records when it fell",
    ),
    Case(
        "active-with-rejected-at-build",
        _edit(_set(lambda d: _record(d, BUDGET), "rejected_at_build", 2)),
        f"assumptions[{A(BUDGET)}].rejected_at_build",
        "only a rejected assumption has one",
    ),
    Case(
        "assumption-evidence-id-not-a-node",
        _edit(_set(lambda d: _record(d, FITS), "evidence_ids", ["evidence:ghost-000000"])),
        f"assumptions[{A(FITS)}].evidence_ids[0]",
        "evidence ids name evidence nodes",
    ),
    Case(
        "assumption-evidence-id-names-a-claim",
        _edit(_set(lambda d: _record(d, FITS), "evidence_ids", [BENCHMARK, CLAIM])),
        f"assumptions[{A(FITS)}].evidence_ids[1]",
        "evidence ids name evidence nodes",
    ),
    Case(
        "assumption-newer-than-graph",
        _edit(_set(lambda d: _record(d, BUDGET), "created_at_build", 4)),
        f"assumptions[{A(BUDGET)}].created_at_build",
        "newer than the graph's build 3",
    ),
    Case(
        "active-record-with-a-successor",
        _edit(_active_but_superseded_by),
        f"assumptions[{A(OLDER)}].status",
        "superseded",
    ),
    Case(
        "assumption-superseding-itself",
        _edit(_self_supersession),
        f"assumptions[{A(BUDGET)}].supersedes",
        "itself",
    ),
    # -- decisions ---------------------------------------------------------------------------------
    Case(
        "explicit-decision-rationale-edited",
        _edit(lambda d: _node(d, EXPLICIT_DECISION)["attrs"].update(rationale="Because the CTO said so")),
        f"nodes[{N(EXPLICIT_DECISION)}].attrs.decision_digest",
        "does not match the fingerprint",
    ),
    Case(
        "explicit-decision-lost-a-covered-edge",
        _edit(lambda d: d["edges"].remove(_edge(d, EXPLICIT_DECISION, "depends_on", BUDGET))),
        f"nodes[{N(EXPLICIT_DECISION)}].attrs.decision_digest",
        "does not match the fingerprint",
    ),
    Case(
        "explicit-decision-span-edited",
        _edit(lambda d: _node(d, EXPLICIT_DECISION)["provenance"].update(span=[0, 12])),
        f"nodes[{N(EXPLICIT_DECISION)}].attrs.decision_digest",
        "does not match the fingerprint",
    ),
    Case(
        "explicit-decision-in-auto-namespace",
        _edit(lambda d: rename_node(d, EXPLICIT_DECISION, "decision:auto:adopt-pgvector")),
        f"nodes[{N(EXPLICIT_DECISION)}].id",
        "may not use the auto-minted namespace",
    ),
    Case(
        "auto-decision-outside-auto-namespace",
        _edit(lambda d: rename_node(d, AUTO_DECISION, "decision:shard-by-tenant")),
        f"nodes[{N(AUTO_DECISION)}].id",
        "lives under 'decision:auto:'",
    ),
    Case(
        "unknown-decision-identity",
        _edit(lambda d: _node(d, AUTO_DECISION)["attrs"].update(decision_identity="guessed")),
        f"nodes[{N(AUTO_DECISION)}].attrs.decision_identity",
        "either 'explicit' or 'auto'",
    ),
    Case(
        "decision-without-identity",
        _edit(lambda d: _node(d, AUTO_DECISION)["attrs"].pop("decision_identity")),
        f"nodes[{N(AUTO_DECISION)}].attrs.decision_identity",
        "either 'explicit' or 'auto'",
    ),
    Case(
        "decision-without-rationale",
        _edit(lambda d: _node(d, AUTO_DECISION)["attrs"].pop("rationale")),
        f"nodes[{N(AUTO_DECISION)}]",
        "missing rationale",
    ),
)

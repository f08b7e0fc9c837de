"""Which questions a graph built from a folder of documents can answer at all, decided from structure.

Not a benchmark itself (the leading underscore keeps it out of ``bench/*.py`` listings of
commands). ``bench/answers.py`` asks the water set on the graph a user's folder gives: documents
only, since a folder ingests no ``decisions.json`` or ``scenarios.json`` yet. A question that needs
what only those files make is *not yet runnable* — counted per kind, never dropped silently — and
the same rule holds for the development and the held-out half, because it reads only the question's
structured fields (``kind``, ``edge``, ``gold``, ``after_scenario``), the corpus's decisions file and
the built graph; never a question's text or note (ADR 0039).

A question waits when

1. it is asked after a scenario (the scenario's evidence is not ingested);
2. it is answerable and none of its golds is a document sentence (a decision, assumption or
   evidence is the only right answer, and the graph cannot hold one);
3. it is ``multihop:`` over an edge only decisions and evidence make (``depends_on``, ``produces``,
   ``supports``, ``justified_by``);
4. it is ``multihop:`` over an edge a decision makes at the gold's document — derived from it
   (``source``, ``rests_on``), citing it (``cites``) or superseding across it (``supersedes``) —
   while the documents themselves give no edge of that type joining a gold sentence's document
   (its source or any of its sentences) to another document. Then the one path the question's
   relation can take runs through a decision the folder's graph does not hold. A ``derived_from``
   edge in a folder never leaves its document, so such a question always waits once a decision is
   derived from the gold's document; a ``cites`` or ``supersedes`` question stays runnable when a
   link between documents carries it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextmesh.core.graph import ContextGraph

__all__ = ["DECISION_ONLY_EDGES", "DecisionEdges", "decision_edges", "waits"]

DECISION_ONLY_EDGES = frozenset({"depends_on", "produces", "supports", "justified_by"})
DECISION_MADE_EDGES = ("derived_from", "cites", "supersedes")

DecisionEdges = Mapping[str, frozenset[str]]  # edge type → documents a decision touches over it


def decision_edges(decisions_file: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """Edge type → the documents some decision of ``decisions_file`` meets over that edge.

    A decision is derived from its ``source`` and the documents of its ``rests_on`` quotes, cites
    its ``cites``, and a ``supersedes`` pair meets the documents of both decisions.
    """
    decisions = list(decisions_file.get("decisions", []))
    source_of = {str(d["key"]): str(d.get("source") or "") for d in decisions}
    derived: set[str] = set()
    cited: set[str] = set()
    superseding: set[str] = set()
    for decision in decisions:
        derived.add(source_of[str(decision["key"])])
        derived.update(str(r["doc"]) for r in decision.get("rests_on", []))
        cited.update(str(doc) for doc in decision.get("cites", []))
        earlier = decision.get("supersedes")
        if earlier:
            superseding.update({source_of[str(decision["key"])], source_of.get(str(earlier), "")})
    return {
        "derived_from": frozenset(derived - {""}),
        "cites": frozenset(cited - {""}),
        "supersedes": frozenset(superseding - {""}),
    }


def _document_of(graph: ContextGraph, node_id: str) -> str | None:
    node = graph.node(node_id)
    if node.type == "source":
        return node.id
    return node.provenance.source_id if node.provenance is not None else None


def _documents_carry(graph: ContextGraph, gold_claims: Iterable[str], edge_type: str) -> bool:
    """True when an edge of ``edge_type`` joins a gold claim's document to another document.

    The document counts whole — its source node and every claim made from it — because a link
    lands on a document or its first sentence, and the question may want any sentence of it.
    """
    for claim in gold_claims:
        if claim not in graph:
            continue
        document = _document_of(graph, claim)
        ends = {claim}
        if document is not None:
            ends.add(document)
            ends.update(edge.src for edge in graph.in_edges(document, ("derived_from",)))
        for end in ends:
            for edge in [*graph.out_edges(end, (edge_type,)), *graph.in_edges(end, (edge_type,))]:
                other = edge.dst if edge.src == end else edge.src
                if _document_of(graph, other) not in (None, document):
                    return True
    return False


def waits(
    question: Mapping[str, Any],
    graph: ContextGraph,
    gold_claims: Callable[[Mapping[str, Any]], set[str]],
    by_decisions: DecisionEdges,
) -> bool:
    """True when ``question`` needs what a folder's graph cannot hold (see the module docstring).

    ``gold_claims`` turns one gold into the claim ids built from it; ``by_decisions`` is
    :func:`decision_edges` of the corpus's decisions file (empty when it has none).
    """
    if question.get("after_scenario"):
        return True
    golds = [g for g in question["gold"] if "doc" in g]
    if question["answerable"] and not golds:
        return True
    kind = str(question["kind"])
    if not kind.startswith("multihop:"):
        return False
    edge_type = kind.split(":", 1)[1]
    if edge_type in DECISION_ONLY_EDGES:
        return True
    if edge_type not in DECISION_MADE_EDGES or not golds:
        return False
    touched = by_decisions.get(edge_type, frozenset())
    if not all(str(g["doc"]) in touched for g in golds):
        return False
    claims: set[str] = set()
    for gold in golds:
        claims |= gold_claims(gold)
    return not _documents_carry(graph, claims, edge_type)

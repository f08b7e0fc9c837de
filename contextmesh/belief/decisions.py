"""Decisions: an append-only log of choices, each with its reasons, grounds and products.

``DecisionLog.decide`` is the only way a decision node is created. A decision records its title
and rationale, the source it was made in (provenance), the claims it rests on (``derived_from``,
and ``supports`` from each claim), the assumptions it depends on, the decisions it needs, the
entities it produces, the sources it cites and the decision it supersedes. ``supersedes`` never
deletes: the older decision stays walkable.

Identity (GRAPH.md rule 10): without ``id=`` a decision gets a fresh id under ``decision:auto:``.
With an explicit id the id is an idempotency key over the decision's content fingerprint
(:mod:`contextmesh.core.decision_identity`): the same content returns the same decision, different
content under the same id is refused, and the fingerprint is recomputed whenever a file loads.

Invariant: ``decide`` checks every reference before writing anything, and rolls back whatever it
wrote if a write still fails, so a refused call leaves the graph byte-identical.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contextmesh.core.decision_identity import decision_fingerprint
from contextmesh.core.errors import BeliefError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import AUTO_DECISION_PREFIX, is_auto_decision_id, slug
from contextmesh.core.model import NodeRecord, Provenance

__all__ = ["DecisionLog", "DecisionRecord"]


@dataclass(frozen=True)
class DecisionRecord:
    """A decision as ``decide`` recorded it."""

    id: str
    title: str
    created: bool


class DecisionLog:
    """Records decisions on one graph."""

    def __init__(self, graph: ContextGraph) -> None:
        self.graph = graph

    def decide(
        self,
        title: str,
        *,
        rationale: str,
        provenance: Provenance,
        id: str | None = None,
        rests_on: Iterable[str] = (),
        assumptions: Iterable[str] = (),
        needs: Iterable[str] = (),
        produces: Iterable[str] = (),
        cites: Iterable[str] = (),
        supersedes: str | None = None,
        attrs: dict[str, object] | None = None,
    ) -> DecisionRecord:
        """Record a decision (see the module docstring for identity rules)."""
        rests, grounds, wants = tuple(rests_on), tuple(assumptions), tuple(needs)
        products, cited = tuple(produces), tuple(cites)
        self._check_refs(provenance, rests, grounds, wants, products, cited, supersedes)
        if id is not None and is_auto_decision_id(id):
            raise BeliefError(f"explicit decision id '{id}' uses the reserved prefix '{AUTO_DECISION_PREFIX}'")
        decision_id = id if id is not None else self._fresh_id(title)
        covered = sorted(
            {("derived_from", c) for c in rests}
            | {("depends_on", a) for a in grounds}
            | {("produces", p) for p in products}
            | {("cites", s) for s in cited}
            | ({("supersedes", supersedes)} if supersedes else set())
        )
        if id is not None and decision_id in self.graph.nodes:
            return self._replay(decision_id, title, rationale, provenance, covered)
        node_attrs: dict[str, object] = {
            **(attrs or {}),
            "rationale": rationale,
            "decision_identity": "explicit" if id is not None else "auto",
        }
        node = self.graph._mint_decision(decision_id, title, node_attrs, provenance)  # type: ignore[arg-type]
        added: list[str] = []
        try:
            for edge_type, target in covered:
                added.append(self.graph._put_edge(decision_id, edge_type, target, (), 1.0, frozen_check=False).id)
            for claim in rests:
                added.append(self.graph.add_edge(claim, "supports", decision_id).id)
            for need in wants:
                added.append(self.graph.add_edge(decision_id, "depends_on", need).id)
            if id is not None:
                node.attrs = {**node.attrs, "decision_digest": decision_fingerprint(self.graph, decision_id)}
        except Exception:
            self.graph._undo([decision_id], added)
            raise
        return DecisionRecord(decision_id, title, True)

    def _replay(
        self, decision_id: str, title: str, rationale: str, provenance: Provenance, covered: list[tuple[str, str]]
    ) -> DecisionRecord:
        existing = self.graph.node(decision_id)
        if existing.type != "decision":
            raise BeliefError(f"'{decision_id}' is a {existing.type}, not a decision")
        probe = self._probe(title, rationale, provenance, covered)
        if existing.attrs.get("decision_digest") != probe:
            raise BeliefError(
                f"decision id '{decision_id}' already names different content; an explicit id is an idempotency "
                "key, so the same id must carry the same title, rationale, provenance and edges"
            )
        return DecisionRecord(decision_id, title, False)

    def _probe(self, title: str, rationale: str, provenance: Provenance, covered: list[tuple[str, str]]) -> str:
        """The fingerprint this content would have, computed on a scratch graph."""
        scratch = ContextGraph(self.graph.ontology)
        for _, target in covered:
            node = self.graph.node(target)
            scratch._put_node(node.type, node.label, node.id, node.attrs, node.provenance, None)
        scratch._mint_decision("decision:probe", title, {"rationale": rationale}, provenance)
        for edge_type, target in covered:
            scratch._put_edge("decision:probe", edge_type, target, (), 1.0, frozen_check=False)
        return decision_fingerprint(scratch, "decision:probe")

    def _fresh_id(self, title: str) -> str:
        n = 1
        while (candidate := slug(f"{title}|{n}", "decision:auto")) in self.graph.nodes:
            n += 1
        return candidate

    def _check_refs(
        self,
        provenance: Provenance,
        rests: tuple[str, ...],
        grounds: tuple[str, ...],
        wants: tuple[str, ...],
        products: tuple[str, ...],
        cited: tuple[str, ...],
        supersedes: str | None,
    ) -> None:
        self._expect(provenance.source_id, {"source"}, "provenance.source_id")
        for claim in rests:
            self._expect(claim, {"claim"}, "rests_on")
        for assumption in grounds:
            node = self._expect(assumption, {"assumption"}, "assumptions=")
            if not node.live:
                raise BeliefError(f"cannot rest a new decision on '{assumption}': it is {node.attrs.get('status')}")
        for need in wants:
            self._expect(need, {"decision"}, "needs")
        for product in products:
            self._expect(product, {"entity", "source"}, "produces")
        for source in cited:
            self._expect(source, {"source"}, "cites")
        if supersedes is not None:
            self._expect(supersedes, {"decision"}, "supersedes")

    def _expect(self, node_id: str, types: set[str], where: str) -> NodeRecord:
        node = self.graph.nodes.get(node_id)
        if node is None:
            raise BeliefError(f"{where} names '{node_id}', which is not in this graph")
        if node.type not in types:
            noun = "assumption ids" if types == {"assumption"} else " or ".join(sorted(types)) + " ids"
            raise BeliefError(f"{where} takes {noun}; '{node_id}' is a {node.type}")
        return node

"""A revised document supersedes the claims it no longer makes; what rested on them falls with a chain.

GRAPH.md rule 11, over the container-terminal corpus copied into a temporary folder.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from contextmesh.belief.decisions import DecisionLog
from contextmesh.belief.ingestion import ingest
from contextmesh.core.graph import ContextGraph
from contextmesh.core.model import Provenance
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.revisions import claims_of, current_revisions

TERMINAL = Path(__file__).resolve().parents[1] / "data" / "documents" / "terminal" / "docs"
PLAN = "plans/capacity-2026.md"
OLD, NEW = "together sustain 58 moves", "together sustain 61 moves"


def _ingested(tmp_path: Path) -> tuple[ContextGraph, Resolver, Path]:
    folder = tmp_path / "docs"
    shutil.copytree(TERMINAL, folder)
    graph, resolver = ContextGraph(), Resolver()
    ingest(graph, resolver, [folder])
    return graph, resolver, folder


def _claim(graph: ContextGraph, document: str, text: str) -> str:
    revision = current_revisions(graph)[document]
    [found] = [c for c in claims_of(graph, revision.id).values() if text in graph.nodes[c].label]
    return found


def _decide(graph: ContextGraph, title: str, claims: list[str]) -> str:
    source = graph.nodes.get("source:plan") or graph.add_node(
        "source", "the plan", id="source:plan", attrs={"key": "plan", "origin": "test", "retrieved_at": None}
    )
    return (
        DecisionLog(graph)
        .decide(
            title,
            rationale="because the plan says so",
            provenance=Provenance(source_id=source.id, extractor="test", recorded_at_build=graph.build),
            rests_on=claims,
        )
        .id
    )


def test_a_revision_supersedes_exactly_the_claim_it_no_longer_makes(tmp_path: Path) -> None:
    graph, resolver, folder = _ingested(tmp_path)
    old = _claim(graph, PLAN, OLD)
    kept = _claim(graph, PLAN, "Berth 4 takes the overflow")
    first = current_revisions(graph)[PLAN].id
    (folder / PLAN).write_text((folder / PLAN).read_text().replace(OLD, NEW))
    result = ingest(graph, resolver, [folder])
    second = current_revisions(graph)[PLAN]
    assert second.number == 2 and second.id != first
    assert [s.claim_id for s in result.fallout.superseded] == [old]
    assert old in graph.nodes and not graph.nodes[old].live  # kept, flagged out of walks
    assert graph.find_edge(second.id, "supersedes", old) is not None
    assert graph.find_edge(second.id, "supersedes", first) is not None
    assert graph.nodes[kept].live and graph.find_edge(kept, "derived_from", second.id) is not None
    assert NEW in graph.nodes[_claim(graph, PLAN, NEW)].label


def test_what_rests_on_a_superseded_claim_falls_with_a_chain_through_it(tmp_path: Path) -> None:
    graph, resolver, folder = _ingested(tmp_path)
    resting = _decide(graph, "run the berth 3 cranes as a pair", [_claim(graph, PLAN, OLD)])
    other = _decide(graph, "send overflow to berth 4", [_claim(graph, PLAN, "Berth 4 takes the overflow")])
    (folder / PLAN).write_text((folder / PLAN).read_text().replace(OLD, NEW))
    result = ingest(graph, resolver, [folder])
    assert set(result.fallout.invalidated) == {resting}
    chain = result.fallout.why(resting)
    assert chain.startswith(f"revision 2 of {PLAN} -supersedes-> claim(STS-04 and STS-07")
    assert "<-derived_from- run the berth 3 cranes as a pair" in chain
    assert not graph.nodes[resting].live and graph.nodes[other].live


def test_a_deleted_document_supersedes_every_claim_and_a_returning_sentence_is_a_new_claim(tmp_path: Path) -> None:
    graph, resolver, folder = _ingested(tmp_path)
    made = set(claims_of(graph, current_revisions(graph)[PLAN].id).values())
    text = (folder / PLAN).read_text()
    (folder / PLAN).unlink()
    gone = ingest(graph, resolver, [folder])
    assert {s.claim_id for s in gone.fallout.superseded} == made
    assert current_revisions(graph)[PLAN].deleted
    (folder / PLAN).write_text(text)
    back = ingest(graph, resolver, [folder])
    assert back.increment.survey.count("new") == 1
    again = set(claims_of(graph, current_revisions(graph)[PLAN].id).values())
    assert len(again) == len(made) and not again & made  # superseded claims are never revived

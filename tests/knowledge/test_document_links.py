"""A link in a sentence that is not a claim speaks for its document (GRAPH.md: a source may supersede a
source or a claim), in a full build and in an increment alike, and a walk answers across it (ADR 0036)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from contextmesh.belief.ingestion import ingest
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.embed import HashedEmbedder
from contextmesh.knowledge.folder import read_folder
from contextmesh.knowledge.pipeline import build
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.traverse import Walker

WATER = Path(__file__).resolve().parents[1] / "data" / "corpora" / "water" / "docs"
OLD, NEW = "adr-007-modbus-polling.md", "adr-011-dnp3-unsolicited.md"
# ADR-011's status line "This record [supersedes ADR-007](…)" is not a claim: it asserts nothing.
REPLACED = "SCADA polls every outstation RTU over Modbus TCP once every 60 seconds."
LEAD = "Outstation RTUs report changes to SCADA by exception over DNP3, within two seconds of the change."


def _supersedes(graph: ContextGraph) -> list[tuple[str, str, str]]:
    return sorted(
        (graph.node(e.src).type, graph.node(e.src).label, graph.node(e.dst).label)
        for e in graph.edges.values()
        if e.type == "supersedes"
    )


def _folder(tmp_path: Path, names: list[str]) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    for name in names:
        shutil.copyfile(WATER / name, folder / name)
    return folder


def test_a_full_build_keeps_a_document_level_supersedes_link(tmp_path: Path) -> None:
    corpus, _ = read_folder([_folder(tmp_path, [OLD, NEW])])
    graph = build(corpus, embedder=HashedEmbedder()).graph
    assert _supersedes(graph) == [("source", "ADR-011: DNP3 with unsolicited reporting for outstations", REPLACED)]


@pytest.mark.parametrize("order", [[OLD, NEW], [NEW, OLD]], ids=["old-first", "new-first"])
def test_an_increment_writes_the_same_link_whichever_document_arrives_first(tmp_path: Path, order: list[str]) -> None:
    graph, resolver = ContextGraph(), Resolver()
    for name in order:
        ingest(graph, resolver, [_folder(tmp_path, [name])])
    assert _supersedes(graph) == [("source", "ADR-011: DNP3 with unsolicited reporting for outstations", REPLACED)]


def test_what_replaced_a_claim_is_the_lead_claim_of_the_document_that_supersedes_it(tmp_path: Path) -> None:
    graph, resolver = ContextGraph(), Resolver()
    ingest(graph, resolver, [_folder(tmp_path, [OLD, NEW])])
    walk = Walker(graph, resolver).ask("What took over from polling every outstation RTU over Modbus TCP?")
    assert walk.dead_end is None
    assert walk.answer == LEAD
    # The path shown is the one scored: the replaced claim, the superseding document, its lead claim.
    assert [s.label for s in walk.path[-3:]] == [
        REPLACED,
        "ADR-011: DNP3 with unsolicited reporting for outstations",
        LEAD,
    ]
    assert [(s.edge_type, s.forward) for s in walk.path[-2:]] == [("supersedes", False), ("derived_from", False)]

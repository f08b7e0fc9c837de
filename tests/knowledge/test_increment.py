"""Incremental ingestion: sightings add up to discovery, the survey's statuses, no-op re-reads, order of arrival.

Over the container-terminal corpus (``tests/data/documents/terminal``) and the water corpus
(``tests/data/corpora/water``), each copied into a temporary folder so files can arrive, change
and go.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from entity_lists import measure

from contextmesh.belief.ingestion import ingest
from contextmesh.core.errors import InputError
from contextmesh.core.graph import ContextGraph
from contextmesh.formats.graph_file import dump_graph, graph_to_dict
from contextmesh.knowledge.discovery import discover
from contextmesh.knowledge.folder import read_documents
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.sightings import combine, sightings, sightings_from_data, sightings_to_data
from contextmesh.knowledge.survey import survey

DATA = Path(__file__).resolve().parents[1] / "data"
TERMINAL = DATA / "documents" / "terminal" / "docs"
WATER = DATA / "corpora" / "water" / "docs"


def _documents(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.suffix in {".md", ".txt"})


def _arrive(source: Path, target: Path, names: list[str]) -> None:
    for name in names:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, target / name)


def _fresh(tmp_path: Path, source: Path) -> tuple[ContextGraph, Resolver, Path]:
    folder = tmp_path / "docs"
    folder.mkdir()
    if (source / "entities.json").exists():
        shutil.copyfile(source / "entities.json", folder / "entities.json")
    return ContextGraph(), Resolver(), folder


@pytest.mark.parametrize("corpus", [TERMINAL, WATER], ids=["terminal", "water"])
def test_one_documents_sightings_combined_are_its_discovery(corpus: Path) -> None:
    read = read_documents([corpus])
    for document in read.documents:
        assert combine([sightings(document)]) == discover([document]), document.name


def test_sightings_survive_their_attribute_form_and_refuse_a_broken_one() -> None:
    document = read_documents([TERMINAL]).documents[0]
    found = sightings(document)
    assert sightings_from_data(document.name, sightings_to_data(found), "x") == found
    broken = sightings_to_data(found)
    broken["candidates"][0][2] = -1
    with pytest.raises(InputError) as caught:
        sightings_from_data(document.name, broken, "node.attrs.sightings")
    assert caught.value.path == "node.attrs.sightings.candidates[0][2]"


def test_the_survey_names_new_unchanged_revised_and_deleted(tmp_path: Path) -> None:
    graph, resolver, folder = _fresh(tmp_path, TERMINAL)
    names = _documents(TERMINAL)
    _arrive(TERMINAL, folder, names[:3])
    ingest(graph, resolver, [folder])
    _arrive(TERMINAL, folder, names[3:4])
    (folder / names[0]).write_text((TERMINAL / names[0]).read_text() + "\nA new closing sentence is here.\n")
    (folder / names[1]).unlink()
    statuses = {c.name: c.status for c in survey(graph, [folder]).changes}
    assert statuses == {names[0]: "revised", names[1]: "deleted", names[2]: "unchanged", names[3]: "new"}


def test_ingesting_an_unchanged_folder_writes_nothing(tmp_path: Path) -> None:
    graph, resolver, folder = _fresh(tmp_path, TERMINAL)
    _arrive(TERMINAL, folder, _documents(TERMINAL))
    first = ingest(graph, resolver, [folder])
    assert first.wrote and first.increment.survey.count("new") == 16
    before = dump_graph(graph)
    again = ingest(graph, resolver, [folder])
    assert not again.wrote
    assert again.increment.survey.count("unchanged") == 16
    assert dump_graph(graph) == before


def test_a_dry_run_changes_nothing_and_reports_what_the_real_run_does(tmp_path: Path) -> None:
    graph, resolver, folder = _fresh(tmp_path, TERMINAL)
    _arrive(TERMINAL, folder, _documents(TERMINAL))
    ingest(graph, resolver, [folder])
    plan = folder / "plans" / "capacity-2026.md"
    plan.write_text(plan.read_text().replace("together sustain 58 moves", "together sustain 61 moves"))
    before = dump_graph(graph)
    dry = ingest(graph, resolver, [folder], dry_run=True)
    assert dump_graph(graph) == before
    real = ingest(graph, resolver, [folder])
    assert dry.to_dict() | {"dry_run": True} == real.to_dict() | {"dry_run": True}
    assert len(real.fallout.superseded) == 1
    assert "58 moves" in real.fallout.superseded[0].text


def _content(graph: ContextGraph) -> tuple[object, object, object]:
    """The graph with insertion order taken out: nodes by id, edges by (src, type, dst), assumptions by id."""
    data = graph_to_dict(graph)
    nodes = sorted(data["nodes"], key=lambda n: n["id"])
    edges = sorted(({k: v for k, v in e.items() if k != "id"} for e in data["edges"]), key=repr)
    return nodes, edges, data["build"]


def _built(tmp_path: Path, source: Path, batches: list[list[str]], name: str) -> ContextGraph:
    (tmp_path / name).mkdir()
    graph, resolver, folder = _fresh(tmp_path / name, source)
    for batch in batches:
        _arrive(source, folder, batch)
        ingest(graph, resolver, [folder])
    return graph


def test_any_order_of_arrival_gives_the_same_graph_up_to_insertion_order(tmp_path: Path) -> None:
    names = _documents(TERMINAL)
    at_once = _built(tmp_path, TERMINAL, [names], "once")
    halves = _built(tmp_path, TERMINAL, [names[8:], names[:8]], "halves")
    one_by_one = _built(tmp_path, TERMINAL, [[n] for n in reversed(names)], "reversed")
    assert _content(halves) == _content(at_once)
    assert _content(one_by_one) == _content(at_once)
    assert dump_graph(halves) != dump_graph(at_once)  # the file keeps insertion order: not byte-identical


def test_an_arrival_that_makes_the_catalogue_forget_an_entity_says_so(tmp_path: Path) -> None:
    # "Quarry Lane" is an entity of its own until a document naming "Quarry Lane Pump Station"
    # arrives and it folds in as an alias; an entity is never taken back, so the graph keeps it
    # and the increment reports the divergence by name.
    names = _documents(WATER)
    graph, resolver, folder = _fresh(tmp_path, WATER)
    _arrive(WATER, folder, names[: len(names) // 2])
    ingest(graph, resolver, [folder])
    _arrive(WATER, folder, names[len(names) // 2 :])
    later = ingest(graph, resolver, [folder])
    assert any("Quarry Lane" in line for line in later.increment.divergences), later.increment.divergences


def test_the_terminal_corpus_resolves_nine_in_ten_listed_entities_and_merges_no_pair() -> None:
    # The list was written before any ingestion ran over the corpus (its commit says so).
    hits, total, misses, merges = measure(TERMINAL, TERMINAL.parent / "entities.md")
    assert total == 38
    assert hits / total >= 0.9, misses
    assert merges == []

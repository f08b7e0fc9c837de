"""A session whose graph snapshot is graph v2 loads, replays its journal and commits v3 (ADR 0021).

The fixture was written by main's code before edge ids were widened (``tests/data/graph-v2-session``):
a v2 snapshot with six journal segments, telemetry and journal counters naming v2 edge ids, and a
run ledger whose disproof receipt cites v2 edge ids. Before this change the load stopped at the
snapshot's ``version``; every test here failed then.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from session_helpers import edit_manifest, manifest_doc, reseal_doc

from contextmesh.belief.evidence import submit
from contextmesh.core.canonical import loads
from contextmesh.core.errors import SessionError
from contextmesh.demo.saved import open_demo_session
from contextmesh.formats import graph_parts
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.formats.graph_upgrade import EdgesAnyVersion
from contextmesh.session.session import Session

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "graph-v2-session"


@pytest.fixture
def v2_session(tmp_path: Path) -> tuple[Path, Path]:
    shutil.copytree(FIXTURE / "session", tmp_path / "session")
    shutil.copy2(FIXTURE / "feed.json", tmp_path / "feed.json")
    return tmp_path / "session", tmp_path / "feed.json"


def _open(paths: tuple[Path, Path]) -> Session:
    return open_demo_session(paths[0], feed=paths[1], policy="never")


def _receipt_edges(directory: Path) -> list[str]:
    _, manifest = manifest_doc(directory)
    ledger = loads((directory / manifest["runledger"]["name"]).read_bytes())
    receipts = [entry["receipt"] for entry in ledger["entries"] if entry.get("receipt")]
    assert receipts
    return [edge for receipt in receipts for edge in receipt["invalidated_edges"]]


def test_the_fixture_is_a_v2_snapshot_with_a_journal(v2_session: tuple[Path, Path]) -> None:
    _, manifest = manifest_doc(v2_session[0])
    assert loads((v2_session[0] / manifest["graph"]["name"]).read_bytes())["version"] == 2
    assert len(manifest["journal"]) == 6


def test_the_journal_replays_onto_the_v2_snapshot_as_main_held_the_graph(v2_session: tuple[Path, Path]) -> None:
    session = _open(v2_session)
    assert session.graph.upgraded_from == 2
    # What main's process held after its last commit (counters included), read as v3.
    expected = dump_graph(load_graph((FIXTURE / "expected-v2.json").read_bytes()))
    assert dump_graph(session.graph) == expected
    assert sum(e.traversals for e in session.graph.edges.values()) > 0  # telemetry and journal counters landed


def test_its_next_commit_writes_a_v3_snapshot_and_the_v2_receipt_still_checks(v2_session: tuple[Path, Path]) -> None:
    session = _open(v2_session)
    before = dump_graph(session.graph)
    session.commit()
    _, manifest = manifest_doc(v2_session[0])
    assert manifest["journal"] == []
    assert loads((v2_session[0] / manifest["graph"]["name"]).read_bytes())["version"] == 3
    again = _open(v2_session)  # the ledger is unchanged: its receipt still cites v2 ids
    assert again.graph.upgraded_from is None
    assert dump_graph(again.graph) == before
    cited = _receipt_edges(v2_session[0])
    assert not any(edge in again.graph.edges for edge in cited)
    assert all(edge in EdgesAnyVersion(again.graph) for edge in cited)
    again.ask("Why did the Index Builder run out of memory?")
    again.commit()  # and from here it journals as any v3 session does
    _, manifest = manifest_doc(v2_session[0])
    assert len(manifest["journal"]) == 1


def test_a_v2_telemetry_id_that_names_no_edge_is_refused(v2_session: tuple[Path, Path]) -> None:
    def forge(document: Any) -> None:
        document["edges"][0][0] = "edge:claim-stratus-cloud-reserves-about-eight-000000"

    # The journal's segments are bound to the telemetry they apply to: drop them, so the forged
    # telemetry is what the load reads (a v2 snapshot without a journal, as a v4 session held).
    edit_manifest(v2_session[0], lambda doc: doc.update(journal=[]))
    reseal_doc(v2_session[0], "telemetry", forge)
    with pytest.raises(SessionError) as caught:
        _open(v2_session)
    message = str(caught.value)
    assert "\n" not in message
    assert "telemetry-" in message and "edges[0][0]" in message
    assert "000000" in message and "an id among the graph's edges" in message


def test_a_session_whose_graph_companion_is_in_parts_commits_journals_and_replays(
    v2_session: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # graph-v3.md section 13 at a size a test can afford: parts of 50 records instead of 50,000.
    monkeypatch.setattr(graph_parts, "PART_RECORDS", 50)
    session = _open(v2_session)
    session.commit()  # the upgrade's snapshot, now in parts
    _, manifest = manifest_doc(v2_session[0])
    companion = (v2_session[0] / manifest["graph"]["name"]).read_bytes()
    assert len(companion.splitlines()) > 10 and loads(companion.splitlines()[0])["parts"]["records"] == 50
    session.ask("What made the sharding rule wrong?")
    source = next(n.id for n in session.graph.by_type("source"))
    claim = next(n.id for n in session.graph.by_type("claim"))
    node = submit(session.graph, "an observation recorded over a parted snapshot", source).node
    session.graph.add_edge(node.id, "supports", claim)
    session.commit()
    _, manifest = manifest_doc(v2_session[0])
    assert len(manifest["journal"]) == 1  # a segment over the parted snapshot, not a new snapshot
    assert dump_graph(_open(v2_session).graph) == dump_graph(session.graph)

"""A session refuses a disproof receipt that cites what its graph lacks (session-v3.md §8.3).

The template is the demo session after its whole walk-through (round 1, the advisory, the recheck
that disproves the argon2 ground, the repair, round 3), so its ledger holds a real receipt. Each
case edits that receipt, re-chains the ledger and re-seals the manifest around it, so the load gets
past every digest and reaches the receipt check. On today's main ``invalidated_edges``,
``preserved`` and ``replacement_id`` were not checked at all, and a ``ground`` or an ``invalidated``
element that is not an object escaped as an ``AttributeError``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from demo_cache import DemoSessions
from execution_helpers import demo_registry
from session_helpers import clone, manifest_doc, reseal_ledger

from contextmesh.core.canonical import digest, loads
from contextmesh.core.errors import SessionError
from contextmesh.demo.execute import run_session_walkthrough
from contextmesh.demo.saved import open_demo_session
from contextmesh.session.load import SessionFileError, load_directory

Receipt = dict[str, Any]


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("receipts")
    template, feed = demo_sessions.copy(root)
    directory = clone(template, root / "walked")
    session = open_demo_session(directory, feed=feed, policy="never")
    run_session_walkthrough(session, feed=feed)
    return directory, feed


def _ledger(directory: Path) -> dict[str, Any]:
    _, doc = manifest_doc(directory)
    return loads((directory / doc["runledger"]["name"]).read_bytes())


def _disproof(entries: list[dict[str, Any]]) -> int:
    return next(i for i, e in enumerate(entries) if e["event"] == "disproved")


def _graph_ids(directory: Path, feed: Path) -> dict[str, Any]:
    loaded = load_directory(directory, registry=demo_registry(feed))
    graph = loaded.graph
    decision = next(n.id for n in graph.nodes.values() if n.type == "decision")
    active = next(a.id for a in graph.assumptions.values() if a.status == "active")
    return {"decision": decision, "active": active}


def _ghost_first_preserved(receipt: Receipt) -> None:
    receipt["preserved"][0] = "!ghost"  # still sorts first, so only existence is wrong
    receipt["preserved_digest"] = digest(receipt["preserved"])


def _swap_preserved(receipt: Receipt) -> None:
    ids = receipt["preserved"]
    ids[0], ids[1] = ids[1], ids[0]
    receipt["preserved_digest"] = digest(ids)


def _beyond_the_list_limit(receipt: Receipt) -> None:
    receipt.update(preserved=None, preserved_count=10_001, preserved_digest="ab" * 32)


CASES: dict[str, tuple[Callable[[Receipt, dict[str, Any]], None], str | None]] = {
    # name: (edit of the receipt, given ids of the graph; the path refused inside the receipt or None)
    "an edge the graph lacks": (
        lambda r, g: r["invalidated_edges"].__setitem__(0, "edge:ghost-000000"),
        "invalidated_edges[0]",
    ),
    "a node id among the edges": (lambda r, g: r["invalidated_edges"].append(g["decision"]), "invalidated_edges[8]"),
    "no invalidated_edges": (lambda r, g: r.pop("invalidated_edges"), "invalidated_edges"),
    "a preserved node the graph lacks": (lambda r, g: _ghost_first_preserved(r), "preserved[0]"),
    "preserved ids out of order": (lambda r, g: _swap_preserved(r), "preserved[1]"),
    "preserved count disagrees": (lambda r, g: r.update(preserved_count=r["preserved_count"] + 1), "preserved_count"),
    "preserved digest disagrees": (lambda r, g: r.update(preserved_digest="0" * 64), "preserved_digest"),
    "preserved list dropped below the limit": (lambda r, g: r.update(preserved=None), "preserved"),
    "a replacement the graph lacks": (
        lambda r, g: r.update(replacement_id="assumption:ghost-000000"),
        "replacement_id",
    ),
    "a decision as the replacement": (lambda r, g: r.update(replacement_id=g["decision"]), "replacement_id"),
    "ground as text": (lambda r, g: r.update(ground="argon2"), "ground"),
    "ground that was never rejected": (
        lambda r, g: r["ground"].update(assumption_id=g["active"]),
        "ground.assumption_id",
    ),
    "a decision as the evidence": (lambda r, g: r.update(evidence_id=g["decision"]), "evidence_id"),
    "a fallen node the graph lacks": (
        lambda r, g: r["invalidated"][2].update(id="decision:ghost-000000"),
        "invalidated[2].id",
    ),
    "a fallen node as text": (lambda r, g: r["invalidated"].__setitem__(0, "decision:x"), "invalidated[0]"),
    # accepted
    "the active replacement": (lambda r, g: r.update(replacement_id=g["active"]), None),
    "beyond 10,000 preserved ids only the digest's form is checked": (lambda r, g: _beyond_the_list_limit(r), None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_receipt_citing_what_the_graph_lacks_is_refused(name: str, walked: tuple[Path, Path], tmp_path: Path) -> None:
    source, feed = walked
    directory = clone(source, tmp_path / "session")
    ids = _graph_ids(directory, feed)
    change, inside = CASES[name]
    index = _disproof(_ledger(directory)["entries"])
    ledger_name = reseal_ledger(directory, lambda entries: change(entries[index]["receipt"], ids))
    registry = demo_registry(feed)
    if inside is None:
        loaded = load_directory(directory, registry=registry)
        assert loaded.ledger is not None and loaded.ledger.receipts()
        return
    with pytest.raises(SessionFileError) as refused:
        load_directory(directory, registry=registry)
    assert refused.value.path == f"{ledger_name}:entries[{index}].receipt.{inside}", str(refused.value)


def test_the_walked_session_loads_and_its_ledger_holds_a_receipt(walked: tuple[Path, Path]) -> None:
    directory, feed = walked
    loaded = load_directory(directory, registry=demo_registry(feed))
    assert loaded.ledger is not None
    (receipt,) = loaded.ledger.receipts()
    assert receipt["invalidated_edges"] and receipt["preserved"]


def test_entries_without_a_task_are_allowed_on_any_event(walked: tuple[Path, Path]) -> None:
    # session-v3.md §8.3: `task` null is allowed; the engine writes it on the recheck summary and on
    # fallen nodes no task owns.
    directory, feed = walked
    loaded = load_directory(directory, registry=demo_registry(feed))
    assert loaded.ledger is not None
    untasked = {e.event for e in loaded.ledger.entries if e.task is None}
    assert {"audited", "invalidated"} <= untasked


def test_a_refused_receipt_is_a_session_error(walked: tuple[Path, Path], tmp_path: Path) -> None:
    source, feed = walked
    directory = clone(source, tmp_path / "session")
    index = _disproof(_ledger(directory)["entries"])
    reseal_ledger(directory, lambda entries: entries[index]["receipt"].update(ground=None))
    with pytest.raises(SessionError):
        load_directory(directory, registry=demo_registry(feed))

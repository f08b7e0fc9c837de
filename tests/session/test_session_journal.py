"""Session v5's journal (ADR 0020): commits that cost the change, and loads that replay it exactly.

* A load replays the journal onto the snapshot and ends with the graph, telemetry and resolver a
  full snapshot of the same state holds, byte for byte, after every kind of write the engine makes
  (questions, evidence, a recheck, a repair and its rerun), in this process and across
  ``PYTHONHASHSEED``.
* The journal is bounded: at 64 segments a commit consolidates them into one; past the byte bound,
  or when the resolver changed other than by appending, it writes a new snapshot.
* A v4 session loads and its first commit writes v5, journalling over the v4 files.
* A journal is untrusted input: a truncated, corrupted, oversized or replayed segment, one moved
  onto another snapshot or chain, one whose snapshot is missing, one naming a record twice, is
  refused naming the file and the place in it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from demo_cache import DemoSessions
from session_helpers import QUESTIONS, clone, edit_manifest, listing, manifest_doc, run_python

from contextmesh.core.canonical import file_bytes, loads, sha256_hex
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, publish
from contextmesh.demo.execute import REPAIR_GROUND
from contextmesh.demo.saved import demo_registry, open_demo_session
from contextmesh.formats.resolver_file import dump_resolver
from contextmesh.session import layout
from contextmesh.session.commit import MIGRATED
from contextmesh.session.layout import MAX_SEGMENTS, companion_name, manifest_name
from contextmesh.session.load import SessionFileError, load_directory
from contextmesh.session.session import Session
from contextmesh.session.telemetry import dump_structure, dump_telemetry


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    return demo_sessions.copy(tmp_path_factory.mktemp("journal"))


def opened(template: tuple[Path, Path], tmp_path: Path, feed: Path | None = None) -> Session:
    source, template_feed = template
    directory = clone(source, tmp_path / "session")
    if feed is not None and template_feed.exists():
        feed.write_bytes(template_feed.read_bytes())
    return open_demo_session(directory, feed=feed or template_feed, policy="never")


def state(session: Session) -> tuple[bytes, bytes, bytes]:
    return dump_structure(session.graph), dump_telemetry(session.graph), dump_resolver(session.resolver)


def assert_replays_to(session: Session) -> None:
    """The newest generation, loaded, holds exactly the live session's state."""
    assert session.directory is not None
    reloaded = Session.load(session.directory, registry=session.registry, policy="never")
    assert state(reloaded) == state(session)
    assert reloaded.companions() == session.companions()


def add_evidence(session: Session, label: str) -> str:
    graph = session.graph
    claims = [node.id for node in graph.nodes.values() if node.type == "claim"][:3]
    evidence = graph.add_node("evidence", label, attrs={"kind": "observation"})
    graph.add_edge(evidence.id, "supports", claims[0])
    graph.add_edge(evidence.id, "contradicts", claims[1])
    graph.add_edge(claims[2], "justified_by", evidence.id)
    return evidence.id


# -- replay is exact ------------------------------------------------------------------------------


def test_every_kind_of_write_replays_to_the_bytes_of_a_full_snapshot(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"
    session = opened(template, tmp_path, feed)
    runner = session.runner
    assert runner is not None
    writes: list[Callable[[], object]] = [
        lambda: session.ask(QUESTIONS[0]),
        lambda: add_evidence(session, "a bench log line"),
        lambda: session.ask(QUESTIONS[1]),
        lambda: publish(feed, "argon2-cffi", ADVISORY_TEXT),
        session.runner.recheck,
        lambda: runner.repair(
            "hashing", assumes=REPAIR_GROUND, worker_key=DEFAULT_KEYS["bcrypt"], produces=["password hasher"]
        ),
        session.runner.run,
        lambda: session.ask(QUESTIONS[2]),
    ]
    for write in writes:
        write()
        session.commit()
        assert_replays_to(session)
    _, doc = manifest_doc(session.directory)  # type: ignore[arg-type]
    # Publishing the advisory changes the feed, not the session: that commit names no new segment.
    assert doc["version"] == 5 and len(doc["journal"]) == len(writes) - 1
    # What a segment holds is the change: far less than the snapshot it extends.
    assert max(segment["bytes"] for segment in doc["journal"]) < doc["graph"]["bytes"] // 10


def test_an_evidence_commit_writes_the_new_records_and_nothing_else(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    session = opened(template, tmp_path)
    evidence = add_evidence(session, "one observation")
    before = session.bytes_written
    session.commit()
    _, doc = manifest_doc(session.directory)  # type: ignore[arg-type]
    segment = loads((session.directory / doc["journal"][-1]["name"]).read_bytes())  # type: ignore[operator]
    assert [node["id"] for node in segment["nodes"]] == [evidence]
    assert len(segment["edges"]) == 3 and segment["assumptions"] == [] and segment["log"] == []
    manifest_bytes = (session.directory / manifest_name(session.generation)).stat().st_size  # type: ignore[operator]
    assert session.bytes_written - before == doc["journal"][-1]["bytes"] + manifest_bytes


REPLAY_SCRIPT = """
import json, hashlib
from pathlib import Path
from contextmesh.demo.saved import open_demo_session
from contextmesh.session.session import Session
from contextmesh.session.telemetry import dump_structure
from session_helpers import QUESTIONS
directory, feed = Path(sys.argv[1]), Path(sys.argv[2])
session = open_demo_session(directory, feed=feed, policy="never")
for question in QUESTIONS[:3]:
    session.ask(question)
    session.commit()
loaded = open_demo_session(directory, feed=feed, policy="never")
from contextmesh.session.load import load_directory
from contextmesh.demo.saved import demo_registry
manifest = load_directory(directory, registry=demo_registry(feed)).manifest
print(json.dumps({"segments": [c.name for c in manifest.journal],
                  "graph": hashlib.sha256(dump_structure(loaded.graph)).hexdigest()}))
"""


def test_journal_segments_and_the_replayed_graph_are_identical_across_hash_seeds(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    source, feed = template
    outcomes = []
    for seed in ("0", "1", "4242"):
        directory = clone(source, tmp_path / f"seed-{seed}")
        done = run_python(REPLAY_SCRIPT, str(directory), str(feed), env={"PYTHONHASHSEED": seed}, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        outcomes.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert len(outcomes[0]["segments"]) == 3
    assert outcomes[1] == outcomes[0] and outcomes[2] == outcomes[0]


# -- bounds: consolidation and compaction ---------------------------------------------------------


def test_a_journal_at_its_bound_is_consolidated_into_one_segment(template: tuple[Path, Path], tmp_path: Path) -> None:
    session = opened(template, tmp_path)
    directory = session.directory
    assert directory is not None
    node_ids = list(session.graph.nodes)
    for tick in range(MAX_SEGMENTS):
        session.graph.record_walk([node_ids[tick % 7]], [])
        session.commit()
    _, doc = manifest_doc(directory)
    assert len(doc["journal"]) == MAX_SEGMENTS
    snapshot = doc["graph"]["name"]
    add_evidence(session, "the sixty-fifth change")
    session.commit()
    _, doc = manifest_doc(directory)
    assert len(doc["journal"]) == 1 and doc["graph"]["name"] == snapshot  # consolidated, snapshot kept
    assert_replays_to(session)
    session.ask(QUESTIONS[0])
    session.commit()  # and the chain grows again from the consolidated segment
    assert len(manifest_doc(directory)[1]["journal"]) == 2
    assert_replays_to(session)
    assert sum(1 for name in listing(directory) if name.startswith("journal-")) <= 2 + MAX_SEGMENTS


def test_a_journal_past_its_byte_bound_becomes_a_new_snapshot(
    template: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = opened(template, tmp_path)
    directory = session.directory
    assert directory is not None
    snapshot = manifest_doc(directory)[1]["graph"]["name"]
    monkeypatch.setattr(layout, "JOURNAL_FLOOR_BYTES", 4096)  # the bound is max(an eighth of the snapshot, this)
    for index in range(40):
        add_evidence(session, f"observation {index}")
        session.commit()
        if not manifest_doc(directory)[1]["journal"]:
            break
    _, doc = manifest_doc(directory)
    assert doc["journal"] == [] and doc["graph"]["name"] != snapshot
    assert_replays_to(session)


def test_a_resolver_change_that_is_not_an_append_writes_a_new_snapshot(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    session = opened(template, tmp_path)
    directory = session.directory
    assert directory is not None
    session.ask(QUESTIONS[0])
    session.commit()
    assert len(manifest_doc(directory)[1]["journal"]) == 1
    entity = session.graph.add_node("entity", "Journal Probe", attrs={"canonical": "Journal Probe", "aliases": []})
    session.resolver.register(entity.id, entity.label)
    session.commit()
    _, doc = manifest_doc(directory)
    assert doc["journal"] == []
    assert_replays_to(session)


# -- old versions ---------------------------------------------------------------------------------


def test_a_v4_session_loads_and_its_first_commit_journals_over_its_files(
    template: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")

    def as_v4(doc: dict[str, Any]) -> None:
        assert doc["journal"] == []
        doc["version"] = 4
        del doc["journal"]

    edit_manifest(directory, as_v4)
    _, v4 = manifest_doc(directory)
    session = open_demo_session(directory, feed=feed, policy="never")
    assert load_directory(directory, registry=demo_registry(feed)).manifest.version == 4
    with caplog.at_level(logging.WARNING, logger="contextmesh.session"):
        session.ask(QUESTIONS[0])
        session.commit()
        session.ask(QUESTIONS[1])
        session.commit()
    assert [r.getMessage() for r in caplog.records if r.name == "contextmesh.session"] == [
        f"session {directory}: {MIGRATED}"
    ]
    _, doc = manifest_doc(directory)
    assert doc["version"] == 5 and len(doc["journal"]) == 2
    for kind in ("graph", "telemetry", "resolver"):
        assert doc[kind] == v4[kind]  # the v4 files are the snapshot: no full rewrite
    assert_replays_to(session)


# -- untrusted journals ---------------------------------------------------------------------------


def journalled(template: tuple[Path, Path], tmp_path: Path, commits: int = 2) -> tuple[Path, Path]:
    """A copy of the demo whose newest generation names ``commits`` segments (questions, then evidence)."""
    session = opened(template, tmp_path)
    for index in range(commits):
        if index % 2:
            add_evidence(session, f"observation {index}")
        else:
            session.ask(QUESTIONS[index])
        session.commit()
    assert session.directory is not None
    return session.directory, template[1]


def segment_doc(directory: Path, index: int) -> dict[str, Any]:
    _, doc = manifest_doc(directory)
    document: dict[str, Any] = loads((directory / doc["journal"][index]["name"]).read_bytes())
    return document


def reseal_segment(directory: Path, index: int, edit: Callable[[dict[str, Any]], None]) -> str:
    """Edit segment ``index`` as a document, store it under its new content address and re-seal the manifest."""
    document = segment_doc(directory, index)
    edit(document)
    data = file_bytes(document)
    sha = sha256_hex(data)
    name = companion_name("journal", sha)
    (directory / name).write_bytes(data)
    edit_manifest(
        directory, lambda doc: doc["journal"].__setitem__(index, {"name": name, "sha256": sha, "bytes": len(data)})
    )
    return name


def refused(directory: Path, feed: Path) -> SessionFileError:
    with pytest.raises(SessionFileError) as caught:
        load_directory(directory, registry=demo_registry(feed))
    return caught.value


def test_a_truncated_segment_is_refused_by_its_digest(template: tuple[Path, Path], tmp_path: Path) -> None:
    directory, feed = journalled(template, tmp_path)
    name = manifest_doc(directory)[1]["journal"][1]["name"]
    data = (directory / name).read_bytes()
    (directory / name).write_bytes(data[: len(data) // 2])
    error = refused(directory, feed)
    assert error.path == f"{manifest_name(3)}:journal[1].sha256" and name in str(error)


def test_a_corrupted_and_resealed_segment_is_refused_at_the_replayed_record(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    directory, feed = journalled(template, tmp_path)
    reseal_segment(directory, 1, lambda doc: doc["nodes"][0].__setitem__("label", 7))
    graph = manifest_doc(directory)[1]["graph"]["name"]
    error = refused(directory, feed)
    assert error.path.startswith(f"{graph}+journal:nodes[") and error.path.endswith("].label"), str(error)


def test_a_segment_longer_than_its_manifest_says_is_refused_without_reading_it_whole(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    directory, feed = journalled(template, tmp_path)
    name = manifest_doc(directory)[1]["journal"][0]["name"]
    with (directory / name).open("ab") as out:
        out.write(b" " * (8 << 20))
    error = refused(directory, feed)
    assert error.path == f"{manifest_name(3)}:journal[0].sha256"


def test_a_journal_past_its_bounds_is_refused_before_any_segment_is_read(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    directory, feed = journalled(template, tmp_path)
    edit_manifest(directory, lambda doc: doc["journal"][0].__setitem__("bytes", 2 << 20))
    error = refused(directory, feed)
    assert error.path == f"{manifest_name(3)}:journal" and "at most max(an eighth" in str(error)
    segments = manifest_doc(directory)[1]["journal"]
    edit_manifest(directory, lambda doc: doc.__setitem__("journal", segments[:1] * (MAX_SEGMENTS + 1)))
    assert refused(directory, feed).path == f"{manifest_name(3)}:journal"


def test_a_segment_replayed_twice_is_refused_by_its_sequence(template: tuple[Path, Path], tmp_path: Path) -> None:
    directory, feed = journalled(template, tmp_path)
    edit_manifest(directory, lambda doc: doc["journal"].__setitem__(1, doc["journal"][0]))
    error = refused(directory, feed)
    assert error.path == f"{manifest_doc(directory)[1]['journal'][0]['name']}:sequence"


def test_segments_out_of_order_or_off_their_chain_are_refused(template: tuple[Path, Path], tmp_path: Path) -> None:
    directory, feed = journalled(template, tmp_path)
    name = reseal_segment(directory, 1, lambda doc: doc.__setitem__("previous", "0" * 64))
    assert refused(directory, feed).path == f"{name}:previous"


def test_a_segment_moved_onto_another_snapshot_is_refused_by_its_base(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    directory, feed = journalled(template, tmp_path)
    name = reseal_segment(directory, 0, lambda doc: doc["base"].__setitem__("resolver", "ab" * 32))
    assert refused(directory, feed).path == f"{name}:base.resolver"


def test_a_journal_whose_snapshot_is_missing_is_refused_naming_it(template: tuple[Path, Path], tmp_path: Path) -> None:
    directory, feed = journalled(template, tmp_path)
    snapshot = manifest_doc(directory)[1]["graph"]["name"]
    (directory / snapshot).unlink()
    error = refused(directory, feed)
    assert error.path == snapshot and "missing" in str(error)


def test_a_segment_naming_a_node_twice_is_refused(template: tuple[Path, Path], tmp_path: Path) -> None:
    directory, feed = journalled(template, tmp_path)
    name = reseal_segment(directory, 1, lambda doc: doc["nodes"].append(dict(doc["nodes"][0])))
    error = refused(directory, feed)
    assert error.path == f"{name}:nodes[1].id" and "each record once" in str(error)


def test_a_segment_that_retypes_a_node_or_counts_an_unknown_one_is_refused(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    directory, feed = journalled(template, tmp_path)
    first = next(iter(loads((directory / manifest_doc(directory)[1]["graph"]["name"]).read_bytes())["nodes"]))

    def retype(doc: dict[str, Any]) -> None:
        doc["nodes"].append({**first, "type": "claim" if first["type"] != "claim" else "entity"})

    name = reseal_segment(directory, 1, retype)
    assert refused(directory, feed).path == f"{name}:nodes[1].type"
    directory, feed = journalled(template, tmp_path / "again")
    name = reseal_segment(directory, 1, lambda doc: doc["walks"].append(["claim:nowhere", 3]))
    error = refused(directory, feed)
    assert error.path.startswith(f"{name}:walks[") and error.path.endswith("][0]")


def test_a_fifo_under_a_segments_name_is_refused_without_blocking(template: tuple[Path, Path], tmp_path: Path) -> None:
    directory, feed = journalled(template, tmp_path)
    name = manifest_doc(directory)[1]["journal"][1]["name"]
    (directory / name).unlink()
    os.mkfifo(directory / name)
    error = refused(directory, feed)
    assert error.path == name and "a fifo" in str(error)


def test_a_lossless_copy_carrying_the_journal_commits_a_segment_with_the_pending_asks(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    from dataclasses import replace

    from contextmesh.formats.graph_file import dump_graph, load_graph
    from contextmesh.formats.resolver_file import load_resolver

    live = opened(template, tmp_path)
    live.policy = "on-exit"
    for question in QUESTIONS[:3]:
        live.ask(question)  # pending: counters and resolver log records not yet committed
    assert live.directory is not None and live.pending == 3
    _, before = manifest_doc(live.directory)
    graph = load_graph(dump_graph(live.graph))
    copy = replace(live, graph=graph, resolver=load_resolver(dump_resolver(live.resolver), graph))
    live.carry_journal(copy)
    add_evidence(copy, "a copy's evidence")
    copy.commit()
    _, after = manifest_doc(live.directory)
    assert after["graph"] == before["graph"] and after["resolver"] == before["resolver"]
    assert len(after["journal"]) == len(before["journal"]) + 1
    assert_replays_to(copy)  # the asks' telemetry and the evidence, from the one segment

"""Sessions: what a restart restores, what a commit writes and sweeps, symlinks, and the CLI.

* The restart table: a session saved and loaded answers every question of ``tests/data/questions.json``
  exactly as the one carried in memory (learned aliases, blocks and walker settings restored);
  lineage, blast radius and health come back identical — health apart from ``dead_ends``, which is
  computed from the in-process walk list (a cold start); and a plan checkpointed mid-repair resumes
  exactly as the one carried forward in memory.
* A commit rewrites only what changed (companions are content-addressed) and its sweep keeps the
  current and the previous generation whole.
* A save never writes through a symlink planted under any name it writes, and a loader refuses a
  companion that is a symlink.
* ``contextmesh session save/show/verify`` and ``--session``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from demo_cache import DemoSessions
from session_helpers import (
    QUESTIONS,
    clone,
    listing,
    load_generation,
    manifest_doc,
)

from contextmesh.belief.assumptions import Assumptions
from contextmesh.cli import main
from contextmesh.core.canonical import loads, sha256_hex
from contextmesh.core.errors import SessionError
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, publish
from contextmesh.demo.execute import REPAIR_GROUND
from contextmesh.demo.saved import demo_registry, open_demo_session
from contextmesh.knowledge.resolve import block_keys
from contextmesh.knowledge.text import normalize
from contextmesh.knowledge.traverse import DEFAULT_POLICY, Walker, WalkerSettings
from contextmesh.session.commit import TRACE_ENV
from contextmesh.session.layout import (
    COMPANIONS,
    LOCK_NAME,
    MANIFEST,
    POINTER_NAME,
    companion_name,
    manifest_name,
)
from contextmesh.session.load import SessionFileError, load_directory
from contextmesh.session.session import Session


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    return demo_sessions.copy(tmp_path_factory.mktemp("session"))


def opened(template: tuple[Path, Path], tmp_path: Path, *, feed: Path | None = None) -> Session:
    source, template_feed = template
    directory = clone(source, tmp_path / "session")
    return open_demo_session(directory, feed=feed or template_feed, policy="never")


def directory_of(session: Session) -> Path:
    assert session.directory is not None
    return session.directory


# -- the restart table ------------------------------------------------------------------------------

NARROW = WalkerSettings(
    hop_budget=4, flat_k=30, max_expand=200, policy=tuple(p for p in DEFAULT_POLICY if p != "cites")
)


def carried_and_restored(template: tuple[Path, Path], tmp_path: Path) -> tuple[Session, Session]:
    """A session that walked (under non-default walker settings) and committed, and its restart."""
    carried = opened(template, tmp_path)
    carried.settings = NARROW
    carried.walker = Walker(carried.graph, carried.resolver, settings=NARROW, flat=carried.flat)
    for question in QUESTIONS[:6]:
        carried.ask(question)  # moves telemetry, grows the resolver's log, records a dead end
    carried.commit()
    assert carried.generation == 2
    restored = open_demo_session(directory_of(carried), feed=template[1], policy="never")
    return carried, restored


def test_a_restart_answers_every_question_exactly_as_the_session_carried_in_memory(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    carried, restored = carried_and_restored(template, tmp_path)
    assert restored.settings == NARROW  # restored into the default 6 hops, answers would differ silently
    assert restored.resolver.aliases == carried.resolver.aliases  # learned aliases included
    assert restored.resolver.blocks == carried.resolver.blocks
    assert restored.resolver.canonical == carried.resolver.canonical
    registered = {
        normalize(surface)
        for entity_id, name in carried.resolver.canonical.items()
        for surface in (name, *carried.graph.node(entity_id).attrs["aliases"])  # type: ignore[misc]
    }
    learned = set(carried.resolver.aliases) - registered  # scored matches resolve() wrote back
    assert learned, "resolving the corpus taught the resolver aliases no entity was registered with"
    assert learned <= set(restored.resolver.aliases)
    assert restored.resolver.log == carried.resolver.log
    for question in QUESTIONS:
        assert restored.ask(question).to_dict() == carried.ask(question).to_dict(), question


def test_blocks_are_restored_as_saved_because_neither_rebuild_reproduces_them(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    """Blocks record how each alias arrived (registered: keyed; learned at query time: not), which the
    alias table does not: rebuilt from canonical names alone they lose keys, rebuilt from every alias
    they invent keys. Only the persisted table is the resolver that ran."""
    carried, restored = carried_and_restored(template, tmp_path)

    def rebuilt(surfaces: dict[str, list[str]]) -> dict[str, list[str]]:
        blocks: dict[str, list[str]] = {}
        for entity_id, names in surfaces.items():
            for surface in names:
                for key in block_keys(normalize(surface)):
                    if entity_id not in blocks.setdefault(key, []):
                        blocks[key].append(entity_id)
        return blocks

    canonical_only = rebuilt({e: [name] for e, name in restored.resolver.canonical.items()})
    every_alias: dict[str, list[str]] = {}
    for surface, entity_id in restored.resolver.aliases.items():
        every_alias.setdefault(entity_id, []).append(surface)
    with_aliases = rebuilt(every_alias)
    saved = {key: set(members) for key, members in restored.resolver.blocks.items()}
    assert restored.resolver.blocks == carried.resolver.blocks
    assert set(canonical_only) < set(saved)  # keys lost
    assert set(with_aliases) > set(saved)  # keys invented
    assert {key: set(members) for key, members in canonical_only.items()} != saved
    assert {key: set(members) for key, members in with_aliases.items()} != saved


def test_a_restart_keeps_lineage_blast_radius_and_health_apart_from_dead_ends(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    carried, restored = carried_and_restored(template, tmp_path)
    for assumption_id in carried.graph.assumptions:
        before, after = Assumptions(carried.graph), Assumptions(restored.graph)
        assert after.lineage(assumption_id) == before.lineage(assumption_id)
        assert after.blast_radius(assumption_id).to_dict() == before.blast_radius(assumption_id).to_dict()

    def health(session: Session) -> dict[str, object]:
        report = session.health().to_dict()
        signals = report.pop("signals")
        assert isinstance(signals, list)
        report["signals"] = {s["kind"]: s for s in signals}
        return report

    warm, cold = health(carried), health(restored)
    assert warm["signals"]["dead_ends"]["count"] > 0  # type: ignore[index]
    assert cold["signals"]["dead_ends"]["count"] == 0  # type: ignore[index]
    for report in (warm, cold):
        report.pop("status")  # derived from the signals, dead_ends included
        report["signals"].pop("dead_ends")  # type: ignore[attr-defined]
    assert cold == warm


def test_a_plan_checkpointed_mid_repair_resumes_exactly_as_one_carried_in_memory(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    feed = tmp_path / "feed.json"  # this test publishes an advisory: its own feed
    carried = opened(template, tmp_path, feed=feed)
    assert carried.runner is not None
    publish(feed, "argon2-cffi", ADVISORY_TEXT)
    carried.runner.recheck()
    carried.runner.repair(
        "hashing", assumes=REPAIR_GROUND, worker_key=DEFAULT_KEYS["bcrypt"], produces=["password hasher"]
    )
    carried.commit()  # the checkpoint: repaired, bcrypt not yet run
    restored = open_demo_session(directory_of(carried), feed=feed, policy="never")
    assert restored.runner is not None
    assert restored.runner.states() == carried.runner.states()
    assert restored.runner.blocked() == carried.runner.blocked()
    assert restored.runner.states()["hashing"] == "stale"

    resumed, continued = restored.runner.run(), carried.runner.run()
    assert resumed.to_dict() == continued.to_dict()
    assert resumed.executed  # something did run: the stale closure
    for name, task in carried.runner.tasks.items():
        again = restored.runner.tasks[name]
        assert (again.state, again.attempt, again.output, again.decision_id, again.worker_key) == (
            task.state,
            task.attempt,
            task.output,
            task.decision_id,
            task.worker_key,
        )
    assert restored.companions() == carried.companions()  # graph, resolver, plan and ledger, byte for byte


# -- what a commit writes ---------------------------------------------------------------------------


def test_unchanged_companions_are_not_rewritten(
    template: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = opened(template, tmp_path)
    directory = directory_of(session)
    assert session.runner is not None
    session.ask(QUESTIONS[0])
    session.commit()
    _, first = manifest_doc(directory)
    kept = {kind: (directory / first[kind]["name"]).stat() for kind in ("graph", "resolver")}

    trace = tmp_path / "trace"
    monkeypatch.setenv(TRACE_ENV, str(trace))
    session.runner.round += 1
    session.runner.ledger.record("audited", round=session.runner.round, detail="only the plan and ledger moved")
    written_before = session.bytes_written
    session.commit()
    _, second = manifest_doc(directory)
    for kind, before in kept.items():
        assert second[kind]["name"] == first[kind]["name"]
        after = (directory / second[kind]["name"]).stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    steps = trace.read_text().split()
    assert "companion-written:graph" not in steps
    assert "companion-written:resolver" not in steps
    assert "companion-written:execution" in steps
    assert "companion-written:runledger" in steps
    manifest_bytes = (directory / manifest_name(session.generation)).stat().st_size
    assert session.bytes_written - written_before == (
        second["execution"]["bytes"] + second["runledger"]["bytes"] + manifest_bytes
    )


def test_a_telemetry_only_commit_writes_one_journal_segment_and_the_manifest(
    template: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = opened(template, tmp_path)
    directory = directory_of(session)
    _, first = manifest_doc(directory)
    node = next(iter(session.graph.nodes.values()))
    walks = node.walks
    trace = tmp_path / "trace"
    monkeypatch.setenv(TRACE_ENV, str(trace))
    session.graph.record_walk([node.id], [])
    written_before = session.bytes_written
    session.commit()
    _, second = manifest_doc(directory)
    for kind in ("graph", "telemetry", "resolver", "execution", "runledger"):
        assert second[kind]["name"] == first[kind]["name"]  # the snapshot and the plan are carried
    assert second["journal"][:-1] == first["journal"] and len(second["journal"]) == len(first["journal"]) + 1
    segment = second["journal"][-1]
    steps = trace.read_text().split()
    assert [s for s in steps if s.startswith("companion-written:")] == ["companion-written:journal"]
    manifest_bytes = (directory / manifest_name(session.generation)).stat().st_size
    assert session.bytes_written - written_before == segment["bytes"] + manifest_bytes
    assert segment["bytes"] < 1000  # one counter: no record of the graph, no table of the resolver
    assert loads((directory / segment["name"]).read_bytes())["walks"] == [[node.id, walks + 1]]
    reloaded = Session.load(directory, registry=demo_registry(template[1]), policy="never")
    assert reloaded.graph.node(node.id).walks == walks + 1
    assert reloaded.companions() == session.companions()


def test_the_sweep_keeps_the_current_and_previous_generation_and_clears_debris(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    session = opened(template, tmp_path)
    directory = directory_of(session)
    (directory / ".tmp-0123456789abcdef01234567").write_bytes(b"an abandoned write")
    (directory / companion_name("graph", "0" * 64)).write_bytes(b"an orphaned companion")
    for question in QUESTIONS[:4]:
        session.ask(question)
        session.commit()
    assert session.generation == 5
    registry = demo_registry(template[1])
    current = load_directory(directory, registry=registry)
    previous = load_generation(directory, 4, tmp_path / "scratch", registry=registry)
    named = {c.name for m in (current.manifest, previous.manifest) for c in m.companions().values()}
    assert listing(directory) == sorted({manifest_name(4), manifest_name(5), POINTER_NAME, LOCK_NAME} | named)


def test_the_sweep_never_deletes_what_the_current_manifest_names(template: tuple[Path, Path], tmp_path: Path) -> None:
    """A journalled commit carries the snapshot it extends: the sweep keeps it and every segment named."""
    session = opened(template, tmp_path)
    directory = directory_of(session)
    node = next(iter(session.graph.nodes.values()))
    registry = demo_registry(template[1])
    for _ in range(5):
        session.graph.record_walk([node.id], [])
        session.commit()
        loaded = load_directory(directory, registry=registry)
        for companion in loaded.manifest.companions().values():
            assert (directory / companion.name).is_file()
    journal = loaded.manifest.journal
    assert sum(1 for n in listing(directory) if n.startswith("journal-")) == len(journal) >= 5
    for kind in ("graph", "telemetry", "resolver"):  # one snapshot, carried by every commit
        assert sum(1 for n in listing(directory) if n.startswith(f"{kind}-")) == 1


def test_the_sweep_touches_only_names_of_the_session_format(template: tuple[Path, Path], tmp_path: Path) -> None:
    session = opened(template, tmp_path)
    directory = directory_of(session)
    (directory / "graph-notes.txt").write_text("mine")
    (directory / "graph-backup").mkdir()
    session.ask(QUESTIONS[0])
    assert session.commit() == 2
    assert (directory / "graph-notes.txt").read_text() == "mine"
    assert (directory / "graph-backup").is_dir()


# -- symlinks ---------------------------------------------------------------------------------------

PLANTED = ("graph", "telemetry", "resolver", "execution", "runledger", "journal", "manifest", "pointer", "lock")


def next_names(session: Session) -> dict[str, str]:
    """Every name the next commit of ``session`` will write (companions are named by their content)."""
    names = {
        kind.split("[")[0]: companion_name(kind.split("[")[0], sha256_hex(data))
        for kind, data in session.commit_payload().items()
        if isinstance(data, bytes)
    }
    names.update(manifest=manifest_name(session.generation + 1), pointer=POINTER_NAME, lock=LOCK_NAME)
    return names


def change_everything(session: Session) -> None:
    """A question, a recheck and a newly registered entity: the next commit writes a new snapshot."""
    assert session.runner is not None
    session.ask(QUESTIONS[1])
    session.runner.recheck()
    entity = session.graph.add_node(
        "entity", "Planted Symlink Service", attrs={"canonical": "Planted Symlink Service", "aliases": []}
    )
    session.resolver.register(entity.id, entity.label)  # not an append: the resolver is rewritten whole


@pytest.mark.parametrize("victim", ["existing", "dangling"])
@pytest.mark.parametrize("planted", PLANTED)
def test_a_save_never_writes_through_a_planted_symlink(
    template: tuple[Path, Path], tmp_path: Path, planted: str, victim: str
) -> None:
    session = opened(template, tmp_path)
    directory = directory_of(session)
    assert session.runner is not None
    if planted == "journal":
        session.ask(QUESTIONS[1])
        session.runner.recheck()  # a journalled commit: a segment, a plan and a ledger
    else:
        change_everything(session)  # every kind has a new name
    names = next_names(session)
    assert all(not (directory / names[kind]).exists() for kind in names if kind not in ("pointer", "lock"))
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "precious.json"
    if victim == "existing":
        target.write_bytes(b'{"precious": true}\n')
    link = directory / names[planted]
    link.unlink(missing_ok=True)
    link.symlink_to(target)

    if planted == "lock":
        with pytest.raises(SessionError, match="symlink"):
            session.commit()
        assert session.generation == 1
        assert link.is_symlink()  # refused, not replaced: the lock must keep one inode for life
    else:
        assert session.commit() == 2
        assert not link.is_symlink()
        assert link.is_file()
    if victim == "existing":
        assert target.read_bytes() == b'{"precious": true}\n'
    else:
        assert not target.exists()  # nothing was created through the dangling link
    assert listing(outside) == (["precious.json"] if victim == "existing" else [])
    loaded = load_directory(directory, registry=demo_registry(template[1]))
    assert loaded.manifest.generation == session.generation


@pytest.mark.parametrize("kind", ["graph", "telemetry", "resolver", "journal"])
def test_a_symlink_under_a_carried_companion_is_refused_by_the_commit_and_nothing_is_written(
    template: tuple[Path, Path], tmp_path: Path, kind: str
) -> None:
    session = opened(template, tmp_path)
    directory = directory_of(session)
    session.ask(QUESTIONS[0])
    session.commit()  # now generation 2 carries the snapshot and one segment
    _, doc = manifest_doc(directory)
    name = doc[kind]["name"] if kind != "journal" else doc["journal"][0]["name"]
    copy = tmp_path / "copy.json"
    copy.write_bytes((directory / name).read_bytes())
    (directory / name).unlink()
    (directory / name).symlink_to(copy)
    before = listing(directory)
    session.ask(QUESTIONS[1])
    with pytest.raises(SessionError, match=f"{name}, the .* companion this commit keeps .* is a symlink; nothing"):
        session.commit()
    assert listing(directory) == before and session.generation == 2
    assert copy.read_bytes() == (directory / name).read_bytes()  # read through the link here, never written


def test_links_under_every_name_at_once_even_valid_copies_are_replaced_not_followed(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    session = opened(template, tmp_path)
    directory = directory_of(session)
    change_everything(session)
    companions = {kind.split("[")[0]: data for kind, data in session.commit_payload().items()}
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = {}
    for kind, name in next_names(session).items():
        if kind == "lock":
            continue
        victim = outside / name
        # Companions: a byte-exact copy of what the commit will write; a present-looking link is no excuse.
        data = companions.get(kind, b"not yours\n")
        victim.write_bytes(data if isinstance(data, bytes) else b"not yours\n")
        victims[victim] = victim.read_bytes()
        (directory / name).unlink(missing_ok=True)
        (directory / name).symlink_to(victim)
    assert session.commit() == 2
    assert not [name for name in listing(directory) if (directory / name).is_symlink()]
    for victim, data in victims.items():
        assert victim.read_bytes() == data
    load_directory(directory, registry=demo_registry(template[1]))


def test_a_fifo_under_the_lock_name_is_refused_not_used(template: tuple[Path, Path], tmp_path: Path) -> None:
    session = opened(template, tmp_path)
    directory = directory_of(session)
    (directory / LOCK_NAME).unlink()
    os.mkfifo(directory / LOCK_NAME)
    session.ask(QUESTIONS[0])
    with pytest.raises(SessionError, match="not a regular file"):
        session.commit()
    assert load_directory(directory, registry=demo_registry(template[1])).manifest.generation == 1


def test_a_companion_that_is_a_symlink_to_a_valid_copy_is_refused_on_load(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    _, doc = manifest_doc(directory)
    outside = tmp_path / "outside"
    outside.mkdir()
    for kind in COMPANIONS:
        broken = clone(directory, tmp_path / f"broken-{kind}")
        name = doc[kind]["name"]
        copy = outside / f"{kind}.json"
        copy.write_bytes((broken / name).read_bytes())
        (broken / name).unlink()
        (broken / name).symlink_to(copy)
        with pytest.raises(SessionFileError) as refused:
            load_directory(broken, registry=demo_registry(feed))
        assert refused.value.path == name


# -- the command line -------------------------------------------------------------------------------


def test_cli_session_save_show_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], template: tuple[Path, Path]
) -> None:
    directory, feed = tmp_path / "cli-session", tmp_path / "feed.json"
    assert main(["session", "save", str(directory), "--rounds", "1", "--feed", str(feed), "--json"]) == 0
    saved = json.loads(capsys.readouterr().out)
    assert saved["generation"] == 1
    assert saved["plan"]["round"] == 1

    assert main(["session", "show", str(directory), "--feed", str(feed), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["session_id"], shown["generation"]) == (saved["session_id"], 1)
    assert shown["ledger"]["verified"] is True
    assert main(["session", "show", str(directory), "--feed", str(feed)]) == 0
    assert "generation 1" in capsys.readouterr().out

    assert main(["session", "verify", str(directory), "--feed", str(feed)]) == 0
    assert "loads whole" in capsys.readouterr().out

    assert main(["ask", QUESTIONS[0], "--session", str(directory), "--feed", str(feed), "--json"]) == 0
    answered = json.loads(capsys.readouterr().out)
    assert answered["question"] == QUESTIONS[0]
    assert load_directory(directory, registry=demo_registry(feed)).manifest.generation == 2  # every-ask

    _, doc = manifest_doc(directory)
    graph = directory / doc["graph"]["name"]
    data = bytearray(graph.read_bytes())
    data[-2] = ord(" ") if data[-2] != ord(" ") else ord("\t")
    graph.write_bytes(bytes(data))
    assert main(["session", "verify", str(directory), "--feed", str(feed)]) == 1
    assert "graph.sha256" in capsys.readouterr().err


def test_cli_session_verify_exit_status_from_a_shell(template: tuple[Path, Path], tmp_path: Path) -> None:
    source, feed = template
    good = clone(source, tmp_path / "good")
    bad = clone(source, tmp_path / "bad")
    _, doc = manifest_doc(bad)
    (bad / doc["resolver"]["name"]).write_bytes(b"{}\n")

    def verify(directory: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "contextmesh", "session", "verify", str(directory), "--feed", str(feed), "--json"],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    ok = verify(good)
    assert ok.returncode == 0, ok.stderr
    assert loads(ok.stdout)["ledger_verified"] is True
    refused = verify(bad)
    assert refused.returncode != 0
    assert "resolver.sha256" in refused.stderr


def test_the_pointer_is_a_copy_of_the_newest_manifest(template: tuple[Path, Path], tmp_path: Path) -> None:
    session = opened(template, tmp_path)
    directory = directory_of(session)
    session.ask(QUESTIONS[0])
    session.commit()
    newest = sorted(n for n in listing(directory) if MANIFEST.match(n))[-1]
    assert (directory / POINTER_NAME).read_bytes() == (directory / newest).read_bytes()

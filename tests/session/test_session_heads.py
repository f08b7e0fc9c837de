"""contextmesh.session v4: each generation's ledger tree head and signed checkpoint, written and read.

* The commit hook: every generation records the RFC 9162 head of its ledger; a commit hashes only
  the entries recorded since the last one (the frontier kept beside the ledger), never the ledger
  again; with the deployment's key (given, or ``$CONTEXTMESH_LEDGER_KEY``) the head is signed for
  this session; the key never lands in the directory; a ledger that does not extend the previous
  generation's is refused before anything is written.
* The reader: a load builds the tree from the bytes its digest check hashed (no second canonical
  pass); a reader that pins keys refuses an unsigned generation, one signed by another key, and one
  whose tree does not extend the previous generation's — a consistent rewrite of history, re-signed,
  is refused with no head in hand; the pins survive a reload.
* v3: still read; the first commit writes v5 (v4's heads and checkpoints, plus the journal) and says so once.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from session_helpers import (
    build_tiny_session,
    edit_manifest,
    listing,
    manifest_doc,
    reseal_ledger,
    sign_manifest,
    tiny_registry,
    touch_all,
    tree_of,
)

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import SessionError
from contextmesh.formats.checkpoint import open_checkpoint, session_origin
from contextmesh.formats.proofs import ledger_tree
from contextmesh.formats.run_ledger import GENESIS, RunLedger, entry_digest
from contextmesh.formats.signed_note import NoteSigner
from contextmesh.session import ledger_tree as tree_module
from contextmesh.session.commit import MIGRATED
from contextmesh.session.heads import KEY_VARIABLE
from contextmesh.session.layout import manifest_name
from contextmesh.session.load import SessionFileError, load_directory
from contextmesh.session.session import Session

KEY = NoteSigner.generate("contextmesh.test/deploy")
FORGER = NoteSigner.generate("contextmesh.test/deploy")  # the same name, another key
PINNED = (KEY.verifier(),)


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    directory = tmp_path / "session"
    build_tiny_session(directory)
    return directory


def advance(
    directory: Path, ticks: int, *, signer: NoteSigner | None = KEY, start: int = 0, snapshot: bool = False
) -> Session:
    """Load, change all five companions, commit (signed by ``signer``), ``ticks`` times; with ``snapshot``
    the last commit writes a snapshot (an empty journal, as a v3 or v4 generation is)."""
    session = Session.load(directory, registry=tiny_registry(), policy="never")
    for tick in range(start, start + ticks):
        touch_all(session, tick)
        session.commit(signer=signer, snapshot=snapshot and tick == start + ticks - 1)
    return session


def head_of(directory: Path) -> dict[str, Any]:
    return dict(manifest_doc(directory)[1]["ledger_tree"])


# -- the writer -------------------------------------------------------------------------------------


def test_every_generation_records_its_ledgers_tree_head(tiny: Path) -> None:
    session = Session.load(tiny, registry=tiny_registry(), policy="never")
    for tick in range(5):
        touch_all(session, tick)
        session.commit()
        assert session.ledger is not None
        expected = ledger_tree(session.ledger).head()
        doc = manifest_doc(tiny)[1]
        assert doc["version"] == 5  # v4's tree head and checkpoint, kept by v5
        assert doc["ledger_tree"] == {"size": expected.size, "root": expected.root_hex}
        assert doc["checkpoint"] is None  # no key, no signature
    assert load_directory(tiny, registry=tiny_registry()).manifest.ledger_tree == expected


def test_a_commit_hashes_only_the_entries_recorded_since_and_a_load_none_twice(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    advance(tiny, 30, signer=None)  # a ledger of 30 entries
    hashed: list[int] = []
    original = tree_module.entry_leaf_hash

    def counting(entry: Any) -> bytes:
        hashed.append(entry.seq)
        return original(entry)

    monkeypatch.setattr(tree_module, "entry_leaf_hash", counting)
    session = Session.load(tiny, registry=tiny_registry(), policy="never")  # the tree from the digest bytes
    assert hashed == []
    for tick in range(3):
        touch_all(session, 100 + tick)
    session.commit()
    assert hashed == [31, 32, 33]  # the three new entries, each once
    touch_all(session, 200)
    session.commit()
    assert hashed == [31, 32, 33, 34]
    assert session.ledger is not None
    assert head_of(tiny)["root"] == ledger_tree(session.ledger).root().hex()


def test_the_leaf_bytes_a_load_uses_are_the_entries_own_bytes() -> None:
    # A detail that holds the very text the leaf is spliced at, quotes and backslashes around it.
    ledger = RunLedger()
    for detail in ['a,"event":"executed"', 'x\\",\\"event\\":', "\\", '"', 'é ,"event": ☃']:
        ledger.record("audited", round=1, detail=detail, decision_id='",' + detail)
    built = tree_module.LeafPass()
    RunLedger.load(ledger.dump(), entry_bytes=built)
    assert built.frontier.head() == ledger_tree(ledger).head()


def test_a_signed_commit_signs_this_sessions_head_and_the_key_stays_out_of_the_directory(tiny: Path) -> None:
    session = advance(tiny, 2)
    doc = manifest_doc(tiny)[1]
    checkpoint = open_checkpoint(doc["checkpoint"], KEY.verifier(), origin=session_origin(session.session_id))
    assert checkpoint.head.size == doc["ledger_tree"]["size"]
    assert checkpoint.head.root.hex() == doc["ledger_tree"]["root"]
    secret = KEY.skey().split("+", 4)[4].encode()
    for name in listing(tiny):
        assert secret not in (tiny / name).read_bytes(), name


def test_the_environments_key_signs_every_commit_path(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, KEY.skey())
    session = Session.load(tiny, registry=tiny_registry(), policy="never")
    touch_all(session, 0)
    session.commit()
    session.apply(lambda s: touch_all(s, 1))
    reader = Session.load(tiny, registry=tiny_registry(), policy="never", trusted_keys=PINNED)
    assert reader.generation == 3


def test_a_bad_key_in_the_environment_refuses_the_commit_without_quoting_it(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = KEY.skey()[:-6] + "AAAAA="  # the right shape, its key material cut short
    monkeypatch.setenv(KEY_VARIABLE, bad)
    before = {name: (tiny / name).read_bytes() for name in listing(tiny)}
    session = Session.load(tiny, registry=tiny_registry(), policy="never")
    touch_all(session, 0)
    with pytest.raises(SessionError) as refused:
        session.commit()
    message = str(refused.value)
    assert f"the ledger key ${KEY_VARIABLE}" in message and bad.split("+", 4)[4] not in message
    assert {name: (tiny / name).read_bytes() for name in listing(tiny)} == before


def test_a_ledger_that_does_not_extend_the_previous_generations_is_refused_before_any_write(tiny: Path) -> None:
    session = advance(tiny, 3)
    assert session.runner is not None and session.ledger is not None
    # The whole history rewritten and re-chained in memory, then one entry more: a consistent fork.
    doc = loads(session.ledger.dump())
    doc["entries"][1]["detail"] = "a plausible rewritten history"
    previous = GENESIS
    for entry in doc["entries"]:
        entry["previous"] = previous
        entry["digest"] = previous = entry_digest(entry)
    doc["head"] = previous
    forged = RunLedger.load(file_bytes(doc))
    forged.record("audited", round=session.runner.round, detail="after the fork")
    session.runner.ledger = forged
    before = {name: (tiny / name).read_bytes() for name in listing(tiny)}
    with pytest.raises(SessionError) as refused:
        session.commit(signer=KEY)
    assert "does not extend generation 4's" in str(refused.value)
    assert "nothing was written" in str(refused.value)
    assert {name: (tiny / name).read_bytes() for name in listing(tiny)} == before


def test_a_replaced_ledger_that_does_extend_is_hashed_whole_and_committed(tiny: Path) -> None:
    session = advance(tiny, 2)
    assert session.runner is not None and session.ledger is not None
    copy = RunLedger.load(session.ledger.dump())  # another object, the same history
    copy.record("audited", round=session.runner.round, detail="one more")
    session.runner.ledger = copy
    session.commit(signer=KEY)
    assert head_of(tiny) == {"size": len(copy), "root": ledger_tree(copy).root().hex()}
    Session.load(tiny, registry=tiny_registry(), trusted_keys=PINNED)


# -- the reader that pins keys ------------------------------------------------------------------------


def test_a_reader_that_pins_the_key_loads_a_signed_session(tiny: Path) -> None:
    advance(tiny, 3)
    loaded = load_directory(tiny, registry=tiny_registry(), trusted_keys=PINNED)
    assert loaded.manifest.generation == 4 and loaded.manifest.checkpoint is not None


def test_an_unsigned_generation_is_refused_by_a_reader_that_pins_keys(tiny: Path) -> None:
    advance(tiny, 1)
    advance(tiny, 1, signer=None, start=1)
    load_directory(tiny, registry=tiny_registry())  # without pins it loads
    with pytest.raises(SessionFileError) as refused:
        load_directory(tiny, registry=tiny_registry(), trusted_keys=PINNED)
    assert refused.value.path == f"{manifest_name(3)}:checkpoint"
    assert "trusts only generations signed by one of them: contextmesh.test/deploy" in str(refused.value)


def test_a_consistent_rewrite_re_signed_with_another_key_is_refused_with_no_head_in_hand(tiny: Path) -> None:
    """The issue's acceptance: every entry rewritten and re-chained, the heads and tree re-sealed, the
    checkpoint re-signed by a forger holding a key of the deployment's name. Without pins it loads."""
    advance(tiny, 4)

    def rewrite(entries: list[dict[str, Any]]) -> None:
        for entry in entries:
            entry["detail"] = f"rewritten: {entry['detail']}"

    reseal_ledger(tiny, rewrite, signer=FORGER)
    assert load_directory(tiny, registry=tiny_registry()).ledger is not None  # a perfect forgery, unpinned
    with pytest.raises(SessionFileError) as refused:
        Session.load(tiny, registry=tiny_registry(), trusted_keys=PINNED)
    assert refused.value.path == f"{manifest_name(5)}:checkpoint"
    assert "a note is trusted only when a pinned key signed it" in str(refused.value)


def test_a_rewrite_signed_by_the_real_key_is_refused_when_it_does_not_extend_the_previous_generation(
    tiny: Path,
) -> None:
    """A key holder (or a stolen key) who signs a head that rewrites generation N-1's history is caught
    by the previous generation's tree head, which the writer keeps."""
    advance(tiny, 3)
    reseal_ledger(tiny, lambda entries: entries[0].__setitem__("detail", "rewritten"), signer=KEY)
    with pytest.raises(SessionFileError) as refused:
        load_directory(tiny, registry=tiny_registry(), trusted_keys=PINNED)
    assert refused.value.path == f"{manifest_name(4)}:ledger_tree.root"
    assert "extends generation 3's" in str(refused.value)


def test_an_older_signed_generation_replayed_as_the_newest_is_refused_by_its_shrunken_tree(tiny: Path) -> None:
    advance(tiny, 3)
    older = loads((tiny / manifest_name(3)).read_bytes())  # generation 3, kept whole with its companions
    older["generation"] = 5  # the checkpoint signs no generation number: it still verifies
    (tiny / manifest_name(5)).write_bytes(file_bytes(older))
    assert load_directory(tiny, registry=tiny_registry()).manifest.generation == 5  # unpinned, it loads
    with pytest.raises(SessionFileError) as refused:
        load_directory(tiny, registry=tiny_registry(), trusted_keys=PINNED)
    assert refused.value.path == f"{manifest_name(5)}:ledger_tree.size"
    assert "a ledger only grows" in str(refused.value)


def test_the_previous_manifest_must_be_there_for_a_reader_that_pins_keys(tiny: Path) -> None:
    advance(tiny, 2)
    (tiny / manifest_name(2)).unlink()
    load_directory(tiny, registry=tiny_registry())
    with pytest.raises(SessionFileError) as refused:
        load_directory(tiny, registry=tiny_registry(), trusted_keys=PINNED)
    assert refused.value.path == manifest_name(2)
    assert "must exist" in str(refused.value)


def test_a_previous_manifest_of_another_session_is_refused(tiny: Path) -> None:
    advance(tiny, 2)
    path = tiny / manifest_name(2)
    doc = loads(path.read_bytes())
    doc["session_id"] = "2ff00f21-ef01-45ee-873a-75371bcbba39"
    path.write_bytes(file_bytes(doc))
    with pytest.raises(SessionFileError) as refused:
        load_directory(tiny, registry=tiny_registry(), trusted_keys=PINNED)
    assert refused.value.path == f"{manifest_name(2)}:session_id"


def test_the_pins_are_kept_across_a_reload(tiny: Path) -> None:
    advance(tiny, 1)
    reader = Session.load(tiny, registry=tiny_registry(), policy="never", trusted_keys=PINNED)
    advance(tiny, 1, signer=FORGER, start=1)  # another writer, another key
    with pytest.raises(SessionFileError) as refused:
        reader.refresh()
    assert refused.value.path == f"{manifest_name(3)}:checkpoint"
    assert reader.generation == 2


def test_a_signature_with_a_flipped_bit_is_refused_at_its_line(tiny: Path) -> None:
    advance(tiny, 1)

    def flip(doc: dict[str, Any]) -> None:
        lines = doc["checkpoint"].split("\n")
        name, signature = lines[4][2:].split(" ")
        lines[4] = f"— {name} {signature[:20]}{'A' if signature[20] != 'A' else 'B'}{signature[21:]}"
        doc["checkpoint"] = "\n".join(lines)

    edit_manifest(tiny, flip)
    with pytest.raises(SessionFileError) as refused:
        load_directory(tiny, registry=tiny_registry(), trusted_keys=PINNED)
    assert refused.value.path == f"{manifest_name(2)}:checkpoint.line[4]"


# -- v3 ------------------------------------------------------------------------------------------------


def as_v3(directory: Path) -> None:
    """Rewrite the newest manifest as the v3 writer wrote it: no tree head, no checkpoint."""

    def downgrade(doc: dict[str, Any]) -> None:
        assert doc["journal"] == []  # v3 had no journal: only a generation that is its snapshot downgrades
        doc["version"] = 3
        del doc["ledger_tree"], doc["checkpoint"], doc["journal"]

    edit_manifest(directory, downgrade)


def test_a_v3_session_loads_and_its_first_commit_writes_v5_saying_so_once(
    tiny: Path, caplog: pytest.LogCaptureFixture
) -> None:
    advance(tiny, 2, signer=None, snapshot=True)
    as_v3(tiny)
    session = Session.load(tiny, registry=tiny_registry(), policy="never")
    assert load_directory(tiny, registry=tiny_registry()).manifest.version == 3
    with pytest.raises(SessionFileError) as refused:
        load_directory(tiny, registry=tiny_registry(), trusted_keys=PINNED)
    assert refused.value.path == f"{manifest_name(3)}:version"
    with caplog.at_level(logging.WARNING, logger="contextmesh.session"):
        touch_all(session, 10)
        session.commit(signer=KEY)
        touch_all(session, 11)
        session.commit(signer=KEY)
    lines = [record.getMessage() for record in caplog.records if record.name == "contextmesh.session"]
    assert lines == [f"session {tiny}: {MIGRATED}"]
    doc = manifest_doc(tiny)[1]
    assert doc["version"] == 5 and doc["checkpoint"] is not None
    assert load_directory(tiny, registry=tiny_registry(), trusted_keys=PINNED).manifest.generation == 5


def test_a_v3_predecessor_is_checked_by_its_head_digest(tiny: Path) -> None:
    advance(tiny, 2, signer=None, snapshot=True)
    as_v3(tiny)
    advance(tiny, 1, start=5)  # the migration commit, signed
    load_directory(tiny, registry=tiny_registry(), trusted_keys=PINNED)
    path = tiny / manifest_name(3)
    doc = loads(path.read_bytes())
    doc["ledger_head"] = "ab" * 32  # not a digest of any entry of generation 4's ledger
    path.write_bytes(file_bytes(doc))
    with pytest.raises(SessionFileError) as refused:
        load_directory(tiny, registry=tiny_registry(), trusted_keys=PINNED)
    assert refused.value.path == f"{manifest_name(4)}:ledger_head"


def test_the_helpers_tree_is_the_loaders(tiny: Path) -> None:
    advance(tiny, 2)
    doc = manifest_doc(tiny)[1]
    entries = loads((tiny / doc["runledger"]["name"]).read_bytes())["entries"]
    assert tree_of(entries).root_hex == doc["ledger_tree"]["root"]
    assert sign_manifest(tiny, KEY) == doc["checkpoint"]  # Ed25519 is deterministic: the writer's very note

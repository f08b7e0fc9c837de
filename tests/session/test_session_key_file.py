"""C9 with a key file: ``$CONTEXTMESH_LEDGER_KEY_FILE`` names the file that holds the deployment's signer key.

Deployments whose secrets arrive as files (a mounted secret, a credentials directory) name the file
instead of putting the key in the environment. Checked here: every commit path signs with the key
the file holds; the file is read without blocking and never quoted; setting both variables, a key
file inside the session directory, a missing file and a file holding no signer key each refuse the
commit in one sentence that names the variable, before anything is written.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from session_helpers import build_tiny_session, listing, manifest_doc, tiny_registry, touch_all

from contextmesh.core.errors import SessionError
from contextmesh.formats.checkpoint import open_checkpoint, session_origin
from contextmesh.formats.signed_note import NoteSigner
from contextmesh.session.heads import KEY_FILE_VARIABLE, KEY_VARIABLE
from contextmesh.session.session import Session

KEY = NoteSigner.generate("contextmesh.test/key-file")


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    monkeypatch.delenv(KEY_FILE_VARIABLE, raising=False)
    directory = tmp_path / "session"
    build_tiny_session(directory)
    return directory


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "secrets" / "ledger.key"
    path.parent.mkdir()
    path.write_text(KEY.skey() + "\n")
    path.chmod(0o600)
    return path


def changed(directory: Path) -> Session:
    session = Session.load(directory, registry=tiny_registry(), policy="never")
    touch_all(session, 0)
    return session


def refused_commit(directory: Path) -> str:
    """The commit's refusal, checked to have left every file of the directory as it was."""
    before = {name: (directory / name).read_bytes() for name in listing(directory)}
    session = changed(directory)
    with pytest.raises(SessionError) as refused:
        session.commit()
    assert {name: (directory / name).read_bytes() for name in listing(directory)} == before
    message = str(refused.value)
    assert "\n" not in message and KEY.skey().split("+", 4)[4] not in message
    return message


def test_the_file_the_variable_names_signs_every_commit_path(
    tiny: Path, key_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_FILE_VARIABLE, str(key_file))
    session = changed(tiny)
    session.commit()
    session.apply(lambda s: touch_all(s, 1))
    doc = manifest_doc(tiny)[1]
    checkpoint = open_checkpoint(doc["checkpoint"], KEY.verifier(), origin=session_origin(session.session_id))
    assert checkpoint.head.size == doc["ledger_tree"]["size"] == 2
    reader = Session.load(tiny, registry=tiny_registry(), policy="never", trusted_keys=[KEY.verifier()])
    assert reader.generation == 3
    secret = KEY.skey().split("+", 4)[4].encode()
    for name in listing(tiny):
        assert secret not in (tiny / name).read_bytes(), name


def test_an_empty_file_variable_is_no_key(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_FILE_VARIABLE, "")
    session = changed(tiny)
    session.commit()
    assert manifest_doc(tiny)[1]["checkpoint"] is None


def test_both_variables_set_is_refused(tiny: Path, key_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_FILE_VARIABLE, str(key_file))
    monkeypatch.setenv(KEY_VARIABLE, KEY.skey())
    message = refused_commit(tiny)
    assert f"both ${KEY_VARIABLE} and ${KEY_FILE_VARIABLE} are set" in message


def test_a_key_file_inside_the_session_directory_is_refused(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inside = tiny / "ledger.key"
    inside.write_text(KEY.skey() + "\n")
    monkeypatch.setenv(KEY_FILE_VARIABLE, str(inside))
    try:
        message = refused_commit(tiny)
    finally:
        inside.unlink()  # the directory's own check would refuse a stray file on the next load
    assert f"${KEY_FILE_VARIABLE} ({inside})" in message and "inside the session directory" in message


def test_a_missing_key_file_is_refused_naming_the_variable(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere.key"
    monkeypatch.setenv(KEY_FILE_VARIABLE, str(missing))
    message = refused_commit(tiny)
    assert message.startswith(f"cannot commit to {tiny}: the ledger key ${KEY_FILE_VARIABLE} ({missing}): ")
    assert "cannot be opened" in message


def test_a_file_holding_a_verifier_key_is_refused_without_quoting_the_file(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    public = tmp_path / "ledger.vkey"
    public.write_text(KEY.verifier().vkey() + "\n")
    monkeypatch.setenv(KEY_FILE_VARIABLE, str(public))
    message = refused_commit(tiny)
    assert f"the ledger key ${KEY_FILE_VARIABLE} ({public}): " in message
    assert KEY.verifier().vkey().split("+", 2)[2] not in message


def test_a_fifo_as_the_key_file_is_refused_without_blocking(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "ledger.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv(KEY_FILE_VARIABLE, str(fifo))
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(refused_commit(tiny)), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the commit blocked on a fifo"
    assert len(outcome) == 1 and "not a regular file" in outcome[0]

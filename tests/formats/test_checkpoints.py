"""Signed notes and checkpoints: the reference vectors, strict parsing with line paths, and key handling."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from contextmesh.core.errors import InputError, ProofError
from contextmesh.formats.checkpoint import Checkpoint, open_checkpoint, read_checkpoint, session_origin, sign_checkpoint
from contextmesh.formats.merkle import TreeHead
from contextmesh.formats.signed_note import (
    KEY_VARIABLE,
    MAX_SIGNATURES,
    NoteSigner,
    NoteVerifier,
    key_id,
    load_signer,
    open_note,
    parse_note,
    sign_note,
)

# The example of c2sp.org/signed-note ("Verifier keys", Example).
C2SP_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
C2SP_NOTE = (
    "This is an example message.\n\n— example.com/foo "
    "Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
)
# The key pair and note of the reference implementation's tests (golang.org/x/mod/sumdb/note, note_test.go).
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
GO_SIGNATURE = (
    "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)
SESSION = "2ff00f21-ef01-45ee-873a-75371bcbba39"
ORIGIN = session_origin(SESSION)


@pytest.fixture(scope="module")
def signer() -> NoteSigner:
    return NoteSigner.generate("contextmesh.example/deploy")


@pytest.fixture(scope="module")
def note(signer: NoteSigner) -> str:
    return sign_checkpoint(Checkpoint(ORIGIN, TreeHead(29, bytes(range(32)))), signer)


def test_the_c2sp_example_note_opens_with_its_verifier_key() -> None:
    opened = open_note(C2SP_NOTE, [NoteVerifier.from_vkey(C2SP_VKEY)])
    assert opened.text == "This is an example message.\n"
    assert [s.name for s in opened.signatures] == ["example.com/foo"]


def test_the_reference_key_pair_signs_the_reference_note_byte_for_byte() -> None:
    signer = NoteSigner.from_skey(GO_SKEY)
    assert signer.verifier().vkey() == GO_VKEY  # the key id rule: SHA-256(name, 0x0A, 0x01, key)[:4]
    assert signer.skey() == GO_SKEY
    assert sign_note(GO_TEXT, [signer]) == GO_TEXT + "\n" + GO_SIGNATURE  # Ed25519 is deterministic
    assert key_id("PeterNeumann", signer.public_key) == 0xC74F20A3


def test_a_checkpoint_has_the_c2sp_shape(note: str, signer: NoteSigner) -> None:
    lines = note.split("\n")
    assert lines[0] == ORIGIN
    assert lines[1] == "29"
    assert lines[2] == "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
    assert lines[3] == ""
    assert lines[4].startswith(f"— {signer.name} ")
    assert note.endswith("\n") and len(lines) == 6


def test_a_checkpoint_opens_with_the_pinned_key_and_the_origin(note: str, signer: NoteSigner) -> None:
    checkpoint = open_checkpoint(note, signer.verifier(), origin=ORIGIN)
    assert checkpoint == Checkpoint(ORIGIN, TreeHead(29, bytes(range(32))))
    assert read_checkpoint(note) == checkpoint


def _swap_line(note: str, index: int, text: str) -> str:
    lines = note.split("\n")
    lines[index] = text
    return "\n".join(lines)


TAMPERED = [
    ("size-changed", lambda n: _swap_line(n, 1, "30"), "checkpoint.line[4]"),
    ("root-changed", lambda n: _swap_line(n, 2, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh4="), "checkpoint.line[4]"),
    (
        "origin-changed",
        lambda n: _swap_line(n, 0, session_origin("00000000-0000-0000-0000-000000000000")),
        "checkpoint.line[0]",
    ),
    ("size-leading-zero", lambda n: _swap_line(n, 1, "029"), "checkpoint.line[1]"),
    ("size-negative", lambda n: _swap_line(n, 1, "-1"), "checkpoint.line[1]"),
    ("size-beyond-uint64", lambda n: _swap_line(n, 1, str(2**64)), "checkpoint.line[1]"),
    ("root-short", lambda n: _swap_line(n, 2, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg=="), "checkpoint.line[2]"),
    ("root-not-base64", lambda n: _swap_line(n, 2, "not base64!"), "checkpoint.line[2]"),
    ("root-unpadded", lambda n: _swap_line(n, 2, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"), "checkpoint.line[2]"),
    ("root-missing", lambda n: n.replace(n.split("\n")[2] + "\n", "", 1), "checkpoint.line[2]"),
    (
        "signature-bit-flipped",
        lambda n: n.replace(n.split(" ")[-1][:8], n.split(" ")[-1][:7] + "A", 1),
        "checkpoint.line[4]",
    ),
    ("signature-dash-ascii", lambda n: n.replace("— ", "- ", 1), "checkpoint.line[4]"),
    ("signature-no-newline", lambda n: n[:-1], "checkpoint.line[4]"),
    ("signature-garbage-base64", lambda n: _swap_line(n, 4, "— contextmesh.example/deploy ***"), "checkpoint.line[4]"),
    ("signature-too-short", lambda n: _swap_line(n, 4, "— contextmesh.example/deploy AAAAAA=="), "checkpoint.line[4]"),
    ("no-blank-line", lambda n: n.replace("\n\n", "\n", 1), "checkpoint"),
    ("control-character", lambda n: _swap_line(n, 0, ORIGIN + "\t"), "checkpoint.line[0]"),
    ("empty-extension", lambda n: n.replace("\n\n", "\nx\n\n\n", 1), "checkpoint.line[4]"),
    ("not-utf8", lambda n: n.encode() + b"\xff", "checkpoint"),
]


@pytest.mark.parametrize(("mutate", "path"), [(m, p) for _, m, p in TAMPERED], ids=[n for n, _, _ in TAMPERED])
def test_a_tampered_checkpoint_is_refused_with_the_line(
    mutate: object, path: str, note: str, signer: NoteSigner
) -> None:
    bad = mutate(note)  # type: ignore[operator]
    assert bad != note
    with pytest.raises(ProofError) as caught:
        open_checkpoint(bad, signer.verifier(), origin=ORIGIN)
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path}: ")
    assert "\n" not in str(caught.value).replace("'\\n'", "")
    assert isinstance(caught.value, InputError)


def test_a_checkpoint_signed_by_another_key_of_the_same_name_is_refused(note: str, signer: NoteSigner) -> None:
    forger = NoteSigner.generate(signer.name)
    forged = sign_checkpoint(read_checkpoint(note), forger)
    with pytest.raises(ProofError) as caught:
        open_checkpoint(forged, signer.verifier())
    assert caught.value.path == "checkpoint"
    assert "a pinned key signed it" in caught.value.rule
    # A forger who also copies the pinned key id into the signature meets a signature that fails.
    disguised = forged.replace(forged.split(" ")[-1], _with_key_id(forged.split(" ")[-1].strip(), signer.key_id) + "\n")
    with pytest.raises(ProofError) as caught:
        open_checkpoint(disguised, signer.verifier())
    assert caught.value.path == "checkpoint.line[4]"
    assert "does not verify" in caught.value.found


def _with_key_id(encoded: str, wanted: int) -> str:
    import base64

    raw = base64.b64decode(encoded)
    return base64.b64encode(wanted.to_bytes(4, "big") + raw[4:]).decode()


def test_unknown_signatures_are_ignored_and_a_pinned_one_suffices(note: str, signer: NoteSigner) -> None:
    witness = NoteSigner.generate("witness.example/w1")
    both = sign_checkpoint(read_checkpoint(note), [witness, signer])
    assert open_checkpoint(both, signer.verifier()) == read_checkpoint(note)
    assert [s.name for s in parse_note(both).signatures] == [witness.name, signer.name]


def test_a_note_with_more_signatures_than_the_bound_is_refused(note: str, signer: NoteSigner) -> None:
    line = note.split("\n")[4] + "\n"
    crowded = note + line * MAX_SIGNATURES
    with pytest.raises(ProofError) as caught:
        open_checkpoint(crowded, signer.verifier())
    assert caught.value.path == "checkpoint"


@pytest.mark.parametrize(
    "text",
    [
        "no-plus-at-all",
        "example.com/foo+530d903a",
        "example.com/foo+530D903A+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",
        "example.com/foo+530d903b+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",
        "example.com/foo+530d903a+AukyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",
        "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2",
        "exa mple.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",
    ],
    ids=["no-parts", "two-parts", "upper-hex", "wrong-id", "wrong-type", "short-key", "space-in-name"],
)
def test_a_malformed_verifier_key_is_refused(text: str) -> None:
    with pytest.raises(ProofError) as caught:
        NoteVerifier.from_vkey(text, "--key")
    assert caught.value.path == "--key"


def test_the_signer_key_comes_from_a_file_or_the_environment_and_is_never_quoted(tmp_path: Path) -> None:
    key_file = tmp_path / "ledger.key"
    key_file.write_text(GO_SKEY + "\n")
    assert load_signer(key_file=key_file).verifier().vkey() == GO_VKEY  # type: ignore[union-attr]
    assert load_signer(environ={KEY_VARIABLE: GO_SKEY}).verifier().vkey() == GO_VKEY  # type: ignore[union-attr]
    assert load_signer(environ={}) is None
    broken = GO_SKEY[:-4] + "AAAA"
    with pytest.raises(ProofError) as caught:
        load_signer(environ={KEY_VARIABLE: broken})
    assert caught.value.path == f"${KEY_VARIABLE}"
    assert broken.split("+")[-1] not in str(caught.value)
    assert GO_SKEY.rsplit("+", maxsplit=1)[-1] not in repr(NoteSigner.from_skey(GO_SKEY))


def test_a_fifo_as_the_key_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "key.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ProofError) as caught:
        load_signer(key_file=fifo)
    assert caught.value.path == str(fifo)
    assert "regular file" in caught.value.rule

"""C2SP signed notes (c2sp.org/signed-note) with Ed25519 keys: parse strictly, sign, open against pinned keys.

A signed note is a text ending in a newline, a blank line, then one or more signature lines
``— <key name> <base64(4-byte key id || signature)>``. The key id is the first four bytes of
SHA-256(key name || 0x0A || 0x01 || 32-byte Ed25519 public key), big-endian. Keys travel as the
signed-note ecosystem writes them: a *verifier key* ``<name>+<8 hex key id>+<base64(0x01 || public
key)>`` (what a reader pins), and a *signer key* ``PRIVATE+KEY+<name>+<8 hex key id>+<base64(0x01 ||
32-byte seed)>`` (what a deployment keeps secret, in a file or an environment variable, never in a
session). A note is trusted only when a signature by a pinned key verifies; a signature by a pinned
key that fails rejects the whole note; signatures by other keys are ignored, as the spec requires.

Every refusal is a :class:`ProofError` whose path names the note (``checkpoint``) or one of its lines
(``checkpoint.line[4]``, lines counted from 0). No error ever quotes a signer key's text.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from contextmesh.core.canonical import sha256
from contextmesh.core.errors import ProofError

__all__ = [
    "KEY_VARIABLE",
    "MAX_NOTE_BYTES",
    "MAX_SIGNATURES",
    "Note",
    "NoteSignature",
    "NoteSigner",
    "NoteVerifier",
    "b64_hash",
    "key_id",
    "load_signer",
    "open_note",
    "parse_note",
    "sign_note",
    "strict_b64decode",
    "valid_key_name",
    "verify_note",
]

ED25519 = 0x01  # the signature type byte of c2sp.org/signed-note
KEY_VARIABLE = "CONTEXTMESH_LEDGER_KEY"
MAX_NOTE_BYTES = 1 << 20  # a checkpoint is ~200 bytes; the bound keeps a hostile note's parse small
MAX_SIGNATURES = 100  # the reference (Go's sumdb/note) refuses more; the spec asks for at least 16
MAX_KEY_FILE_BYTES = 4096
_SIGNATURE_PREFIX = "— "  # U+2014 then a space
_HEX_ID = re.compile(r"[0-9a-f]{8}")
_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def strict_b64decode(text: str) -> bytes | None:
    """Standard padded base64 (RFC 4648 §4) in its one canonical form, or None.

    Refused: other alphabets, missing or extra padding, whitespace, and non-zero unused bits (which
    would let two texts decode to the same bytes).
    """
    if not _B64.fullmatch(text) or len(text) % 4:
        return None
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if base64.b64encode(data).decode("ascii") == text else None


def b64_hash(data: bytes) -> str:
    """Standard padded base64 of raw bytes: how checkpoints and proof bundles write hashes."""
    return base64.b64encode(data).decode("ascii")


def valid_key_name(name: str) -> bool:
    """A key name is non-empty and holds no Unicode space and no ``+``."""
    return bool(name) and "+" not in name and not any(char.isspace() for char in name)


def key_id(name: str, public_key: bytes) -> int:
    """SHA-256(name || 0x0A || 0x01 || public key)[:4], as a big-endian integer."""
    return int.from_bytes(sha256(name.encode("utf-8") + b"\n" + bytes([ED25519]) + public_key)[:4], "big")


@dataclass(frozen=True)
class NoteVerifier:
    """A pinned Ed25519 public key with its name and key id."""

    name: str
    key_id: int
    public_key: bytes

    @classmethod
    def from_vkey(cls, text: str, path: str = "key") -> NoteVerifier:
        """Parse ``<name>+<8 hex key id>+<base64(0x01 || 32-byte public key)>``."""
        rule = "a verifier key is <name>+<8 lower-case hex digits>+<base64 of 0x01 and a 32-byte Ed25519 public key>"
        # The base64 part may hold "+" itself: cut at the first two, as the reference does.
        parts = text.strip("\n").split("+", 2) if type(text) is str else []
        if len(parts) != 3 or not valid_key_name(parts[0]) or not _HEX_ID.fullmatch(parts[1]):
            raise ProofError(path, f"the text {text[:80]!r}" if type(text) is str else "not text", rule)
        material = strict_b64decode(parts[2])
        if material is None or len(material) != 33 or material[0] != ED25519:
            raise ProofError(path, f"the key material {parts[2][:60]!r}", rule)
        verifier = cls(parts[0], int(parts[1], 16), material[1:])
        if key_id(verifier.name, verifier.public_key) != verifier.key_id:
            raise ProofError(
                path,
                f"the key id {parts[1]}",
                f"the key id is SHA-256(name, 0x0A, 0x01, key)[:4] ({verifier.expected_id})",
            )
        return verifier

    @property
    def expected_id(self) -> str:
        return f"{key_id(self.name, self.public_key):08x}"

    def vkey(self) -> str:
        """The verifier key's text form."""
        return f"{self.name}+{self.key_id:08x}+{b64_hash(bytes([ED25519]) + self.public_key)}"

    def verify(self, message: bytes, signature: bytes) -> bool:
        """True when ``signature`` is this key's Ed25519 signature of ``message``."""
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


class NoteSigner:
    """An Ed25519 private key with its name. Its text form is a secret: nothing here prints it."""

    __slots__ = ("_key", "name", "public_key")

    def __init__(self, name: str, private_key: Ed25519PrivateKey) -> None:
        if not valid_key_name(name):
            raise ProofError("key", f"the key name {name!r}", "a key name is non-empty, without spaces or '+'")
        self.name = name
        self._key = private_key
        self.public_key = private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    def __repr__(self) -> str:
        return f"NoteSigner({self.name!r}, key id {self.key_id:08x})"

    @classmethod
    def generate(cls, name: str) -> NoteSigner:
        """A fresh key named ``name``."""
        return cls(name, Ed25519PrivateKey.generate())

    @classmethod
    def from_skey(cls, text: str, path: str = "key") -> NoteSigner:
        """Parse ``PRIVATE+KEY+<name>+<8 hex key id>+<base64(0x01 || 32-byte seed)>``; errors never quote it."""
        rule = "a signer key is PRIVATE+KEY+<name>+<8 hex digits>+<base64 of 0x01 and a 32-byte Ed25519 seed>"
        parts = text.strip("\n").split("+", 4) if type(text) is str else []
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"] or not _HEX_ID.fullmatch(parts[3]):
            raise ProofError(path, "text that is not a signer key", rule)
        if not valid_key_name(parts[2]):
            raise ProofError(path, f"the key name {parts[2]!r}", rule)
        material = strict_b64decode(parts[4])
        if material is None or len(material) != 33 or material[0] != ED25519:
            raise ProofError(path, "key material that is not 0x01 and a 32-byte seed", rule)
        signer = cls(parts[2], Ed25519PrivateKey.from_private_bytes(material[1:]))
        if signer.key_id != int(parts[3], 16):
            raise ProofError(path, f"the key id {parts[3]}", f"the key id of this key is {signer.key_id:08x}")
        return signer

    @property
    def key_id(self) -> int:
        return key_id(self.name, self.public_key)

    def skey(self) -> str:
        """The signer key's text form: keep it secret."""
        seed = self._key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        return f"PRIVATE+KEY+{self.name}+{self.key_id:08x}+{b64_hash(bytes([ED25519]) + seed)}"

    def verifier(self) -> NoteVerifier:
        """The public half, to pin."""
        return NoteVerifier(self.name, self.key_id, self.public_key)

    def sign(self, message: bytes) -> bytes:
        """The Ed25519 signature of ``message`` (64 bytes)."""
        return self._key.sign(message)


@dataclass(frozen=True)
class NoteSignature:
    """One signature line: the key's name and id, the signature bytes, and the line's index in the note."""

    name: str
    key_id: int
    signature: bytes
    line: int


@dataclass(frozen=True)
class Note:
    """A note's text (with its final newline) and its signature lines."""

    text: str
    signatures: tuple[NoteSignature, ...]


def _note_text(data: str | bytes, path: str) -> str:
    raw = data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_NOTE_BYTES:
        raise ProofError(path, f"{len(raw)} bytes", f"a signed note is at most {MAX_NOTE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProofError(path, f"bytes that are not UTF-8 (at byte {exc.start})", "a signed note is UTF-8") from None
    for index, line in enumerate(text.split("\n")):
        for char in line:
            if ord(char) < 0x20 or 0xD800 <= ord(char) <= 0xDFFF:
                raise ProofError(
                    f"{path}.line[{index}]",
                    f"the character U+{ord(char):04X}",
                    "a signed note holds no control character but the newline",
                )
    return text


def parse_note(data: str | bytes, path: str = "note") -> Note:
    """Split a signed note into its text and signature lines, checking every rule of its syntax."""
    text = _note_text(data, path)
    split = text.rfind("\n\n")
    if split < 0:
        raise ProofError(path, "no blank line", "a signed note is a text, a blank line, then signature lines")
    body, block = text[: split + 1], text[split + 2 :]
    first_line = body.count("\n") + 1  # the blank line's index is body.count("\n")
    if not block or not block.endswith("\n"):
        last = first_line + max(block.count("\n"), 0)
        raise ProofError(f"{path}.line[{last}]", "an unterminated signature block", "each signature line ends in '\\n'")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise ProofError(path, f"{len(lines)} signature lines", f"a signed note carries at most {MAX_SIGNATURES}")
    signatures = tuple(_signature_line(line, first_line + offset, path) for offset, line in enumerate(lines))
    return Note(body, signatures)


def _signature_line(line: str, index: int, path: str) -> NoteSignature:
    where = f"{path}.line[{index}]"
    rule = "a signature line is '— <key name> <base64 of a 4-byte key id and the signature>'"
    if not line.startswith(_SIGNATURE_PREFIX):
        raise ProofError(where, f"the line {line[:60]!r}", rule)
    name, space, encoded = line[len(_SIGNATURE_PREFIX) :].partition(" ")
    if not space or not valid_key_name(name):
        raise ProofError(where, f"the key name {name[:60]!r}", rule)
    raw = strict_b64decode(encoded)
    if raw is None or len(raw) < 5:
        raise ProofError(where, f"the signature {encoded[:60]!r}", rule)
    return NoteSignature(name, int.from_bytes(raw[:4], "big"), raw[4:], index)


def sign_note(text: str, signers: Sequence[NoteSigner]) -> str:
    """The signed note of ``text`` (which must end in a newline and hold no blank-line split)."""
    if not text.endswith("\n") or "\n\n" in text or not signers:
        raise ProofError("note", repr(text[:60]), "a note's text ends in one newline, has no empty line, and is signed")
    _note_text(text, "note")
    message = text.encode("utf-8")
    lines = [
        f"{_SIGNATURE_PREFIX}{signer.name} {b64_hash(signer.key_id.to_bytes(4, 'big') + signer.sign(message))}\n"
        for signer in signers
    ]
    return text + "\n" + "".join(lines)


def open_note(data: str | bytes, verifiers: Sequence[NoteVerifier], path: str = "note") -> Note:
    """Parse a note and verify it against the pinned keys: at least one must have signed it, and none badly."""
    note = parse_note(data, path)
    return verify_note(note, verifiers, path)


def verify_note(note: Note, verifiers: Sequence[NoteVerifier], path: str = "note") -> Note:
    """Check an already parsed note's signatures against the pinned keys."""
    if not verifiers:
        raise ProofError(path, "no pinned key", "a note is verified against at least one pinned verifier key")
    pinned = {(v.name, v.key_id): v for v in verifiers}
    message = note.text.encode("utf-8")
    verified: list[NoteSignature] = []
    for signature in note.signatures:
        verifier = pinned.pop((signature.name, signature.key_id), None)  # a repeated signer counts once
        if verifier is None:
            continue  # unknown keys are ignored (c2sp.org/signed-note)
        if not verifier.verify(message, signature.signature):
            raise ProofError(
                f"{path}.line[{signature.line}]",
                f"a signature by {signature.name} (key id {signature.key_id:08x}) that does not verify",
                "a signature by a pinned key must verify over the note's text: the note changed after it was signed",
            )
        verified.append(signature)
    if not verified:
        signed_by = ", ".join(f"{s.name} ({s.key_id:08x})" for s in note.signatures)
        wanted = ", ".join(f"{v.name} ({v.key_id:08x})" for v in verifiers)
        raise ProofError(
            path, f"signatures by {signed_by} only", f"a note is trusted only when a pinned key signed it: {wanted}"
        )
    return Note(note.text, tuple(verified))


def load_signer(
    *, key_file: Path | None = None, environ: Mapping[str, str] | None = None, variable: str = KEY_VARIABLE
) -> NoteSigner | None:
    """The deployment's signer key from ``key_file``, else from the environment variable, else None."""
    if key_file is not None:
        return NoteSigner.from_skey(_read_key_file(key_file), str(key_file))
    text = (os.environ if environ is None else environ).get(variable)
    if text is None or text == "":
        return None
    return NoteSigner.from_skey(text, f"${variable}")


def _read_key_file(path: Path) -> str:
    """The key file's text; a fifo or a device is refused rather than waited on, and it is read bounded."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ProofError(str(path), f"cannot be opened ({exc.strerror})", "the key file is a readable file") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ProofError(str(path), "not a regular file", "the key file is a regular file")
        data = os.read(fd, MAX_KEY_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_KEY_FILE_BYTES:
        raise ProofError(str(path), "a file too long", f"a key file is at most {MAX_KEY_FILE_BYTES} bytes")
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise ProofError(str(path), "text that is not ASCII", "a signer key is ASCII text") from None

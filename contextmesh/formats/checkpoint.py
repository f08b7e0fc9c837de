"""Signed checkpoints (c2sp.org/tlog-checkpoint): a run ledger's tree head, signed as a C2SP note.

A checkpoint's text is three lines — the **origin** (``contextmesh.session/<session id>`` for a
session's ledger), the **tree size** in decimal without leading zeros, the **root hash** in
standard base64 — and optional non-empty extension lines (this writer adds none). It is signed as a
signed note (:mod:`contextmesh.formats.signed_note`). A reader pins the deployment's verifier key
instead of a head: a ledger rewritten and re-sealed by anyone without the private key carries no
checkpoint that opens.

Checks run in this order, each refusal naming its line (lines counted from 0, as
``docs/formats/proofs-v1.md`` states): the note's syntax, the checkpoint text (``checkpoint.line[0]``
origin, ``line[1]`` size, ``line[2]`` root, ``line[3…]`` extensions), the expected origin, then the
signatures.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from contextmesh.core.errors import ProofError
from contextmesh.formats.merkle import HASH_SIZE, TreeHead
from contextmesh.formats.signed_note import (
    NoteSigner,
    NoteVerifier,
    b64_hash,
    parse_note,
    sign_note,
    strict_b64decode,
    verify_note,
)

__all__ = [
    "MAX_TREE_SIZE",
    "ORIGIN_PREFIX",
    "Checkpoint",
    "open_checkpoint",
    "read_checkpoint",
    "session_origin",
    "sign_checkpoint",
]

ORIGIN_PREFIX = "contextmesh.session/"
MAX_TREE_SIZE = 2**64 - 1  # a uint64, as every other checkpoint reader holds it
_SIZE = re.compile(r"0|[1-9][0-9]{0,19}")


def session_origin(session_id: str) -> str:
    """The origin line of a session's checkpoints."""
    return f"{ORIGIN_PREFIX}{session_id}"


@dataclass(frozen=True)
class Checkpoint:
    """A tree head with the log it belongs to."""

    origin: str
    head: TreeHead
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        """The note text a signer signs."""
        lines = [self.origin, str(self.head.size), b64_hash(self.head.root), *self.extensions]
        return "".join(f"{line}\n" for line in lines)


def sign_checkpoint(checkpoint: Checkpoint, signers: NoteSigner | Sequence[NoteSigner]) -> str:
    """The signed note of a checkpoint."""
    _check_text(checkpoint.text(), "checkpoint")  # the writer holds itself to the reader's rules
    return sign_note(checkpoint.text(), [signers] if isinstance(signers, NoteSigner) else list(signers))


def read_checkpoint(note: str | bytes, path: str = "checkpoint") -> Checkpoint:
    """Parse a signed checkpoint **without trusting it**: for a prover matching it against its own ledger."""
    return _check_text(parse_note(note, path).text, path)


def open_checkpoint(
    note: str | bytes,
    verifiers: NoteVerifier | Sequence[NoteVerifier],
    *,
    path: str = "checkpoint",
    origin: str | None = None,
) -> Checkpoint:
    """Parse a signed checkpoint and trust it only if a pinned key signed it (and, if given, for ``origin``)."""
    parsed = parse_note(note, path)
    checkpoint = _check_text(parsed.text, path)
    if origin is not None and checkpoint.origin != origin:
        raise ProofError(
            f"{path}.line[0]", f"the origin {checkpoint.origin[:80]!r}", f"the expected origin is {origin!r}"
        )
    verify_note(parsed, [verifiers] if isinstance(verifiers, NoteVerifier) else list(verifiers), path)
    return checkpoint


def _check_text(text: str, path: str) -> Checkpoint:
    lines = text.split("\n")[:-1]  # the note text ends in its newline
    if len(lines) < 3:
        raise ProofError(
            f"{path}.line[{len(lines)}]", "the end of the text", "a checkpoint holds an origin, a size and a root hash"
        )
    origin, size_text, root_text, *extensions = lines
    if not origin:
        raise ProofError(f"{path}.line[0]", "an empty origin", "the origin line is not empty")
    if not _SIZE.fullmatch(size_text) or int(size_text) > MAX_TREE_SIZE:
        raise ProofError(
            f"{path}.line[1]",
            f"the size {size_text[:40]!r}",
            f"the tree size is a decimal integer from 0 to {MAX_TREE_SIZE} without leading zeros",
        )
    root = strict_b64decode(root_text)
    if root is None or len(root) != HASH_SIZE:
        raise ProofError(
            f"{path}.line[2]", f"the root hash {root_text[:60]!r}", f"the root hash is {HASH_SIZE} bytes in base64"
        )
    for offset, extension in enumerate(extensions):
        if not extension:
            raise ProofError(f"{path}.line[{3 + offset}]", "an empty line", "extension lines are not empty")
    return Checkpoint(origin, TreeHead(int(size_text), root), tuple(extensions))

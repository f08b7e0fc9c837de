"""Tree heads and checkpoints in manifests: the reader's rules S43–S51, the writer's C9–C10 and its signature.

``docs/formats/session-v4.md`` states the rules; this module applies them.

* :func:`check_heads` — a loaded generation's ``ledger_tree`` is the tree of its ledger (S43, S44),
  its ``checkpoint`` signs that head for this session (S45–S47); a reader that pins verifier keys
  also needs the checkpoint, signed by a pinned key (S48, S49), and the tree to extend the previous
  generation's (S50, S51) — so a history rewritten consistently and re-signed with any other key
  is refused with no head in hand.
* :func:`environment_signer` (C9), :func:`check_extends` (C10) and :func:`sign_head` — the commit
  hook: the deployment's key comes from the caller, ``$CONTEXTMESH_LEDGER_KEY`` or the file
  ``$CONTEXTMESH_LEDGER_KEY_FILE`` names, never from the session; no head is recorded, let alone
  signed, unless it extends the previous generation's.

``cryptography`` is imported only when a checkpoint is read or written or a key is loaded, so a
session without signatures never loads it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from contextmesh.core.canonical import loads
from contextmesh.core.errors import InputError, ProofError, SessionError
from contextmesh.formats.merkle import TreeHead
from contextmesh.session.files import MANIFEST_MAX_BYTES, SessionFileError, read_regular
from contextmesh.session.layout import Manifest, manifest_name, parse_manifest
from contextmesh.session.ledger_tree import LeafPass, LedgerSeal

if TYPE_CHECKING:
    from contextmesh.formats.signed_note import NoteSigner, NoteVerifier

__all__ = [
    "KEY_FILE_VARIABLE",
    "KEY_VARIABLE",
    "Previous",
    "check_extends",
    "check_heads",
    "environment_signer",
    "leaf_pass_for",
    "parse_previous",
    "previous_for_commit",
    "read_previous",
    "sign_head",
]

KEY_VARIABLE = "CONTEXTMESH_LEDGER_KEY"  # the same name as signed_note.KEY_VARIABLE, without importing it
KEY_FILE_VARIABLE = "CONTEXTMESH_LEDGER_KEY_FILE"  # or: the path of a file holding the key


@dataclass(frozen=True)
class Previous:
    """The previous generation's manifest as a pinning reader parsed it (or why it could not)."""

    name: str
    manifest: Manifest | None
    error: SessionFileError | None


def _hex(root: bytes) -> str:
    return root.hex()


# -- reading -----------------------------------------------------------------------------------


def read_previous(directory: Path, generation: int) -> tuple[str, bytes] | None:
    """The raw bytes of generation ``generation - 1``'s manifest (None for generation 1); F1–F4, bounded.

    A missing manifest raises :class:`FileNotFoundError`, which the loader retries on when the
    directory moved on meanwhile (a sweep takes generation N-1 once N+1 is published).
    """
    if generation <= 1:
        return None
    name = manifest_name(generation - 1)
    try:
        return name, read_regular(directory, name, limit=MANIFEST_MAX_BYTES)
    except FileNotFoundError as exc:
        exc.filename = name
        raise


def parse_previous(raw: tuple[str, bytes] | None, generation: int, session_id: str) -> Previous | None:
    """S50, parsed ahead of the ledger (its size says which prefix root to remember); errors kept for later."""
    if raw is None:
        return None
    name, data = raw
    try:
        if len(data) > MANIFEST_MAX_BYTES:
            raise SessionFileError(
                name, f"more than {MANIFEST_MAX_BYTES} bytes", f"a manifest is at most {MANIFEST_MAX_BYTES} bytes"
            )
        try:
            manifest = parse_manifest(loads(data), generation - 1)
        except InputError as exc:
            raise SessionFileError(f"{name}:{exc.path}", exc.found, exc.rule) from None
        if manifest.session_id != session_id:
            raise SessionFileError(
                f"{name}:session_id",
                repr(manifest.session_id),
                f"the previous generation belongs to the same session ({session_id})",
            )
    except SessionFileError as exc:
        return Previous(name, None, exc)
    return Previous(name, manifest, None)


def leaf_pass_for(previous: Previous | None, *, full_tree: bool = False) -> LeafPass:
    """The leaf pass of a load: it remembers the root (or finds the v3 head) the previous generation recorded."""
    prior = None if previous is None else previous.manifest
    if prior is None or prior.runledger is None:
        return LeafPass(full_tree=full_tree)
    if prior.ledger_tree is not None:
        return LeafPass(prior.ledger_tree.size, full_tree=full_tree)
    return LeafPass(find_digest=prior.ledger_head, full_tree=full_tree)


# -- the reader's rules ----------------------------------------------------------------------------


def _refuse(path: str, found: str, rule: str) -> SessionFileError:
    return SessionFileError(path, found, rule)


def check_heads(
    manifest: Manifest,
    tree: LeafPass | None,
    previous: Previous | None,
    trusted_keys: Sequence[NoteVerifier],
) -> None:
    """S43–S51 for one loaded generation, in order; ``tree`` is None when it holds no ledger."""
    name = manifest_name(manifest.generation)
    head = manifest.ledger_tree
    if head is not None and tree is not None:
        built = tree.frontier.head()
        if head.size != built.size:  # S43
            raise _refuse(f"{name}:ledger_tree.size", str(head.size), f"the size is the ledger's {built.size} entries")
        if head.root != built.root:  # S44
            raise _refuse(
                f"{name}:ledger_tree.root",
                _hex(head.root),
                f"the root is the tree of the ledger's entries ({_hex(built.root)}); this head is not this ledger's",
            )
    if manifest.checkpoint is not None and head is not None:
        _check_checkpoint_text(manifest, head, name)  # S45–S47
    if trusted_keys:
        _check_signed(manifest, name, trusted_keys)  # S48, S49
        _check_previous(manifest, tree, previous, name)  # S50, S51


def _origin(session_id: str) -> str:
    from contextmesh.formats.checkpoint import session_origin  # noqa: PLC0415 - loads cryptography

    return session_origin(session_id)


def _check_checkpoint_text(manifest: Manifest, head: TreeHead, name: str) -> None:
    from contextmesh.formats.checkpoint import read_checkpoint  # noqa: PLC0415 - loads cryptography

    assert manifest.checkpoint is not None
    path = f"{name}:checkpoint"
    try:
        checkpoint = read_checkpoint(manifest.checkpoint, path)  # S45: proofs-v1 P9
    except ProofError as exc:
        raise _refuse(exc.path, exc.found, exc.rule) from None
    origin = _origin(manifest.session_id)
    if checkpoint.origin != origin:  # S46
        raise _refuse(f"{path}.line[0]", repr(checkpoint.origin[:100]), f"the checkpoint's origin is {origin!r}")
    if checkpoint.head.size != head.size:  # S47
        raise _refuse(
            f"{path}.line[1]", str(checkpoint.head.size), f"the checkpoint signs ledger_tree.size {head.size}"
        )
    if checkpoint.head.root != head.root:
        raise _refuse(
            f"{path}.line[2]", _hex(checkpoint.head.root), f"the checkpoint signs ledger_tree.root {_hex(head.root)}"
        )


def _check_signed(manifest: Manifest, name: str, trusted_keys: Sequence[NoteVerifier]) -> None:
    from contextmesh.formats.checkpoint import open_checkpoint  # noqa: PLC0415 - loads cryptography

    pinned = ", ".join(f"{key.name} ({key.key_id:08x})" for key in trusted_keys)
    rule = f"a reader that pins keys trusts only generations signed by one of them: {pinned}"
    if manifest.version == 3:  # S48
        raise _refuse(f"{name}:version", "contextmesh.session v3, which records no checkpoint", rule)
    if manifest.checkpoint is None:
        found = "no checkpoint (an unsigned generation)" if manifest.runledger else "no ledger and no checkpoint"
        raise _refuse(f"{name}:checkpoint", found, rule)
    try:  # S49: proofs-v1 P14
        open_checkpoint(manifest.checkpoint, list(trusted_keys), path=f"{name}:checkpoint")
    except ProofError as exc:
        raise _refuse(exc.path, exc.found, exc.rule) from None


def _check_previous(manifest: Manifest, tree: LeafPass | None, previous: Previous | None, name: str) -> None:
    if previous is None:
        return
    if previous.error is not None:  # S50
        raise previous.error
    prior = previous.manifest
    assert prior is not None and tree is not None and manifest.ledger_tree is not None  # S48 held
    if prior.runledger is None:
        return
    where = f"generation {prior.generation}"
    if prior.ledger_tree is None:  # S51, a v3 predecessor: its head digest is one of this ledger's
        if tree.found_at is None:
            raise _refuse(
                f"{name}:ledger_head",
                manifest.ledger_head or "null",
                f"the ledger extends {where}'s, whose head {prior.ledger_head} is no entry of this ledger",
            )
        return
    old, new = prior.ledger_tree, manifest.ledger_tree
    if old.size > new.size:  # S51
        raise _refuse(f"{name}:ledger_tree.size", str(new.size), f"a ledger only grows: {where} recorded {old.size}")
    if tree.remembered != old.root:
        found = "none" if tree.remembered is None else _hex(tree.remembered)
        raise _refuse(
            f"{name}:ledger_tree.root",
            f"a tree whose first {old.size} entries hash to {found}",
            f"the tree extends {where}'s (root {_hex(old.root)}): a committed history is never rewritten",
        )


# -- the writer's rules ----------------------------------------------------------------------------


def environment_signer(directory: Path) -> NoteSigner | None:
    """C9: the deployment's key from ``$CONTEXTMESH_LEDGER_KEY``, or from the file ``$CONTEXTMESH_LEDGER_KEY_FILE``
    names (None when neither is set, or both are empty).

    The file form is for deployments whose secrets arrive as files (a mounted secret, a credentials
    directory): the key then never passes through the environment. A key file inside the session
    directory is refused, since the key must never be stored with what it signs.
    """
    text, named = os.environ.get(KEY_VARIABLE), os.environ.get(KEY_FILE_VARIABLE)
    if not text and not named:
        return None  # no variable, no import of the signature package
    if text and named:
        raise SessionError(
            f"cannot commit to {directory}: both ${KEY_VARIABLE} and ${KEY_FILE_VARIABLE} are set; a deployment "
            "sets one of them (the key, or the file that holds it)"
        )
    from contextmesh.formats.signed_note import load_signer  # noqa: PLC0415 - loads cryptography

    where = f"${KEY_FILE_VARIABLE} ({named})" if named else f"${KEY_VARIABLE}"
    key_file = Path(named) if named else None
    if key_file is not None and key_file.resolve().is_relative_to(directory.resolve()):
        raise SessionError(
            f"cannot commit to {directory}: the ledger key {where}: a file inside the session directory; "
            "the key is kept outside the session it signs"
        )
    try:
        return load_signer(key_file=key_file)
    except ProofError as exc:  # the message never quotes the key
        raise SessionError(f"cannot commit to {directory}: the ledger key {where}: {exc.found}; {exc.rule}") from None


def previous_for_commit(directory: Path, loaded: int) -> Manifest | None:
    """Under the lock: generation ``loaded``'s manifest, read again (None for a new directory)."""
    if loaded == 0:
        return None
    name = manifest_name(loaded)
    try:
        data = read_regular(directory, name, limit=MANIFEST_MAX_BYTES)
        if len(data) > MANIFEST_MAX_BYTES:
            raise SessionFileError(
                name, f"more than {MANIFEST_MAX_BYTES} bytes", f"a manifest is at most {MANIFEST_MAX_BYTES} bytes"
            )
        return parse_manifest(loads(data), loaded)
    except (OSError, InputError) as exc:
        why = f"{exc.path}: {exc.found}; {exc.rule}" if isinstance(exc, InputError) else f"{name}: {exc}"
        raise SessionError(
            f"cannot commit to {directory}: generation {loaded}'s manifest, which this commit must extend, "
            f"does not load ({why}); nothing was written"
        ) from None


def check_extends(directory: Path, prior: Manifest | None, seal: LedgerSeal) -> None:
    """C10, under the lock: the new tree extends the previous generation's head."""
    if prior is None or prior.runledger is None:
        return
    loaded = prior.generation
    if prior.ledger_tree is not None:
        old = prior.ledger_tree
        extends = old.size <= seal.head.size and seal.root_at(old.size) == old.root
        was = f"(size {old.size}, root {_hex(old.root)})"
    else:
        extends = bool(seal.holds_digest(prior.ledger_head or ""))
        was = f"(head {prior.ledger_head})"
    if not extends:
        raise SessionError(
            f"cannot commit to {directory}: the run ledger (size {seal.head.size}, root {seal.head.root_hex}) does "
            f"not extend generation {loaded}'s {was}; a writer never records, let alone signs, a head that "
            "rewrites a committed history; nothing was written"
        )


def sign_head(session_id: str, head: TreeHead, signer: NoteSigner) -> str:
    """The checkpoint of ``head`` for this session, signed by the deployment's key."""
    from contextmesh.formats.checkpoint import Checkpoint, session_origin, sign_checkpoint  # noqa: PLC0415

    return sign_checkpoint(Checkpoint(session_origin(session_id), head), signer)

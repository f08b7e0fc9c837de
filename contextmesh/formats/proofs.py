"""Proof bundles (``contextmesh.proof`` v1): one ledger entry's inclusion, or two checkpoints' consistency.

The normative page is ``docs/formats/proofs-v1.md``; ``tools/verify_ledger_proofs.py`` checks bundles
without ContextMesh. A ledger's Merkle tree has one leaf per entry, in order, and a leaf's bytes are
the RFC 8785 bytes of the whole entry as the ledger file holds it (all eleven fields, ``digest``
included): so a bundle's entry is checked against its leaf byte for byte, and its own ``digest``
still binds it to the chain (runledger-v2 rule L22).

* :func:`ledger_tree`, :func:`ledger_frontier` — the tree of a :class:`RunLedger` (built from its
  public entries; the ledger itself is not changed).
* :func:`checkpoint_for` — a signed checkpoint of the ledger at a size.
* :func:`inclusion_bundle`, :func:`consistency_bundle` — bundles against checkpoints the caller
  holds; a checkpoint that is not a head of this ledger is refused, so no bundle is ever written
  that would not verify.
* :func:`saved_checkpoint` — the checkpoint a reader kept (a note, or the newest one a bundle carries),
  for a later consistency proof to start from.
* :func:`verify_bundle` — the reference reader: every rule of the page, in the page's order,
  each refusal a :class:`ProofError` naming its path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contextmesh.core.canonical import canonical_bytes, loads
from contextmesh.core.errors import InputError, ProofError
from contextmesh.formats.checkpoint import Checkpoint, open_checkpoint, read_checkpoint, sign_checkpoint
from contextmesh.formats.merkle import (
    HASH_SIZE,
    Frontier,
    MerkleTree,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)
from contextmesh.formats.records import exact_keys, expect_dict, expect_list
from contextmesh.formats.run_ledger import LedgerEntry, RunLedger, detached_entry
from contextmesh.formats.signed_note import NoteSigner, NoteVerifier, b64_hash, strict_b64decode

__all__ = [
    "MAX_BUNDLE_BYTES",
    "PROOF_SCHEMA",
    "PROOF_VERSION",
    "ProvenConsistency",
    "ProvenInclusion",
    "checkpoint_for",
    "consistency_bundle",
    "entry_leaf_hash",
    "inclusion_bundle",
    "ledger_frontier",
    "ledger_tree",
    "saved_checkpoint",
    "verify_bundle",
]

PROOF_SCHEMA = "contextmesh.proof"
PROOF_VERSION = 1
MAX_BUNDLE_BYTES = 64 * 1024 * 1024
MAX_PATH_HASHES = 64  # no tree of at most 2**64 leaves needs more
_FIELDS = {
    "inclusion": ("schema", "version", "kind", "checkpoint", "leaf_index", "entry", "audit_path"),
    "consistency": ("schema", "version", "kind", "old_checkpoint", "new_checkpoint", "consistency_path"),
}


def entry_leaf_hash(entry: LedgerEntry | dict[str, Any]) -> bytes:
    """SHA-256(0x00 || RFC 8785 bytes of the whole entry)."""
    return leaf_hash(canonical_bytes(entry.to_dict() if isinstance(entry, LedgerEntry) else entry))


def ledger_tree(ledger: RunLedger) -> MerkleTree:
    """The Merkle tree of every entry of ``ledger``, oldest first."""
    return MerkleTree.of_leaves(entry_leaf_hash(entry) for entry in ledger.entries)


def ledger_frontier(ledger: RunLedger, frontier: Frontier | None = None) -> Frontier:
    """The compact range of ``ledger``; given the frontier of an earlier prefix, only the new entries are hashed."""
    frontier = frontier or Frontier()
    if frontier.size > len(ledger):
        raise ProofError("frontier", f"a frontier of {frontier.size} leaves", f"the ledger has {len(ledger)} entries")
    frontier.extend(entry_leaf_hash(entry) for entry in ledger.entries[frontier.size :])
    return frontier


def checkpoint_for(
    ledger: RunLedger, signer: NoteSigner, origin: str, *, size: int | None = None, tree: MerkleTree | None = None
) -> str:
    """The signed checkpoint of the first ``size`` entries (all by default)."""
    tree = tree or ledger_tree(ledger)
    return sign_checkpoint(Checkpoint(origin, tree.head(size)), signer)


def _head_of_this_ledger(note: str, tree: MerkleTree, path: str) -> Checkpoint:
    checkpoint = read_checkpoint(note, path)
    size = checkpoint.head.size
    if size > len(tree) or tree.root(size) != checkpoint.head.root:
        raise ProofError(
            path,
            f"the head ({size}, {checkpoint.head.root_hex})",
            f"a bundle is made against a checkpoint of this ledger ({len(tree)} entries)",
        )
    return checkpoint


def inclusion_bundle(
    ledger: RunLedger, index: int, checkpoint: str, *, tree: MerkleTree | None = None
) -> dict[str, Any]:
    """The inclusion bundle of ``entries[index]`` against a checkpoint of this ledger."""
    tree = tree or ledger_tree(ledger)
    size = _head_of_this_ledger(checkpoint, tree, "checkpoint").head.size
    if type(index) is not int or not 0 <= index < size:
        raise ProofError("leaf_index", repr(index), f"an entry index from 0 to {size - 1} (the checkpoint's size)")
    return {
        "schema": PROOF_SCHEMA,
        "version": PROOF_VERSION,
        "kind": "inclusion",
        "checkpoint": checkpoint,
        "leaf_index": index,
        "entry": ledger.entries[index].to_dict(),
        "audit_path": [b64_hash(node) for node in tree.inclusion_proof(index, size)],
    }


def consistency_bundle(
    ledger: RunLedger, old_checkpoint: str, new_checkpoint: str, *, tree: MerkleTree | None = None
) -> dict[str, Any]:
    """The consistency bundle between two checkpoints of this ledger, the older first."""
    tree = tree or ledger_tree(ledger)
    old = _head_of_this_ledger(old_checkpoint, tree, "old_checkpoint").head.size
    new = _head_of_this_ledger(new_checkpoint, tree, "new_checkpoint").head.size
    if not 0 < old <= new:
        raise ProofError(
            "old_checkpoint", f"sizes {old} and {new}", "the old checkpoint is of 1 to the new size entries"
        )
    return {
        "schema": PROOF_SCHEMA,
        "version": PROOF_VERSION,
        "kind": "consistency",
        "old_checkpoint": old_checkpoint,
        "new_checkpoint": new_checkpoint,
        "consistency_path": [b64_hash(node) for node in tree.consistency_proof(old, new)],
    }


def saved_checkpoint(data: bytes) -> str:
    """The checkpoint a reader kept: a checkpoint note's bytes, or a bundle's newest checkpoint.

    An auditor keeps the bundles they were given (or a note copied from a manifest); the head it
    names is what a later consistency proof must start from. Only the syntax is checked here (P9,
    and the bundle's shape): the signature is checked where the proof is verified, against a pinned key.
    """
    if len(data) > MAX_BUNDLE_BYTES:
        raise ProofError("$", f"{len(data)} bytes", f"a saved checkpoint or bundle is at most {MAX_BUNDLE_BYTES} bytes")
    if data.lstrip()[:1] != b"{":
        read_checkpoint(data, "checkpoint")
        return data.decode("utf-8")  # read_checkpoint refused anything that is not UTF-8 text
    try:
        top = _document(data)
    except InputError as exc:
        raise ProofError(exc.path, exc.found, exc.rule) from None
    return _note(top, "checkpoint" if top["kind"] == "inclusion" else "new_checkpoint")


@dataclass(frozen=True)
class ProvenInclusion:
    """A verified inclusion bundle: this entry is leaf ``index`` of the tree the checkpoint signs."""

    checkpoint: Checkpoint
    index: int
    entry: LedgerEntry


@dataclass(frozen=True)
class ProvenConsistency:
    """A verified consistency bundle: the new checkpoint's tree extends the old one's."""

    old: Checkpoint
    new: Checkpoint


def verify_bundle(
    data: bytes | dict[str, Any], verifiers: NoteVerifier | Sequence[NoteVerifier], *, origin: str | None = None
) -> ProvenInclusion | ProvenConsistency:
    """Check a bundle (its file bytes, or an already parsed document) against pinned keys; refuse with a path."""
    pinned = [verifiers] if isinstance(verifiers, NoteVerifier) else list(verifiers)
    try:
        top = _document(data)
        if top["kind"] == "inclusion":
            return _verify_inclusion(top, pinned, origin)
        return _verify_consistency(top, pinned, origin)
    except ProofError:
        raise
    except InputError as exc:  # the shared loaders' refusals, reported as what they are here
        raise ProofError(exc.path, exc.found, exc.rule) from None


def _document(data: bytes | dict[str, Any]) -> dict[str, Any]:
    if isinstance(data, bytes | bytearray) and len(data) > MAX_BUNDLE_BYTES:
        raise ProofError("$", f"{len(data)} bytes", f"a proof bundle is at most {MAX_BUNDLE_BYTES} bytes")
    top = expect_dict(loads(bytes(data)) if isinstance(data, bytes | bytearray) else data, "$")
    if top.get("schema") != PROOF_SCHEMA:
        raise ProofError("schema", repr(top.get("schema"))[:60], f"a proof bundle's schema is {PROOF_SCHEMA!r}")
    version = top.get("version")
    if type(version) is not int:
        raise ProofError("version", repr(version)[:60], "the version is an integer")
    if version != PROOF_VERSION:
        raise ProofError("version", repr(version), f"this reader reads {PROOF_SCHEMA} v{PROOF_VERSION}")
    if top.get("kind") not in _FIELDS:
        raise ProofError("kind", repr(top.get("kind"))[:60], "a bundle's kind is 'inclusion' or 'consistency'")
    exact_keys(top, _FIELDS[top["kind"]], "$")
    return top


def _note(top: dict[str, Any], field: str) -> str:
    value = top[field]
    if type(value) is not str:
        raise ProofError(field, f"a {type(value).__name__}", "a checkpoint is the text of a signed note")
    read_checkpoint(value, field)  # syntax first: a malformed line is named before any signature is checked
    return value


def _hashes(top: dict[str, Any], field: str) -> list[bytes]:
    items = expect_list(top[field], field)
    if len(items) > MAX_PATH_HASHES:
        raise ProofError(field, f"{len(items)} hashes", f"a proof has at most {MAX_PATH_HASHES} hashes")
    nodes = []
    for position, item in enumerate(items):
        node = strict_b64decode(item) if type(item) is str else None
        if node is None or len(node) != HASH_SIZE:
            raise ProofError(
                f"{field}[{position}]", repr(item)[:60], f"each hash is {HASH_SIZE} bytes in standard base64"
            )
        nodes.append(node)
    return nodes


def _verify_inclusion(top: dict[str, Any], pinned: list[NoteVerifier], origin: str | None) -> ProvenInclusion:
    note = _note(top, "checkpoint")
    index = top["leaf_index"]
    if type(index) is not int or index < 0:
        raise ProofError("leaf_index", repr(index)[:60], "a leaf index is a non-negative integer")
    entry = detached_entry(top["entry"], "entry", index)
    audit_path = _hashes(top, "audit_path")
    checkpoint = open_checkpoint(note, pinned, path="checkpoint", origin=origin)
    head = checkpoint.head
    if index >= head.size:
        raise ProofError("leaf_index", repr(index), f"the leaf index lies below the checkpoint's size {head.size}")
    verify_inclusion(index, head.size, entry_leaf_hash(top["entry"]), audit_path, head.root, path="audit_path")
    return ProvenInclusion(checkpoint, index, entry)


def _verify_consistency(top: dict[str, Any], pinned: list[NoteVerifier], origin: str | None) -> ProvenConsistency:
    old_note, new_note = _note(top, "old_checkpoint"), _note(top, "new_checkpoint")
    path = _hashes(top, "consistency_path")
    old_origin = read_checkpoint(old_note, "old_checkpoint").origin
    old = open_checkpoint(old_note, pinned, path="old_checkpoint", origin=origin)
    new = open_checkpoint(new_note, pinned, path="new_checkpoint", origin=origin or old_origin)
    if old.head.size == 0:
        raise ProofError(
            "old_checkpoint.line[1]", "0", "every tree extends the empty one: a proof from size 0 proves nothing"
        )
    if old.head.size > new.head.size:
        raise ProofError(
            "new_checkpoint.line[1]", str(new.head.size), f"the new checkpoint is at least the old size {old.head.size}"
        )
    verify_consistency(old.head.size, new.head.size, path, old.head.root, new.head.root, path="consistency_path")
    return ProvenConsistency(old, new)

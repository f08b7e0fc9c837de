"""The proof-bundle tampering suite: every way to spoil a bundle of the demo's ledger, as named cases.

A :class:`World` is the demo's 29-entry ledger (the disproof and its receipt at ``entries[10]``), a
deployment key that signed checkpoints of it at sizes 20 and 29, and a forger's key. Each case
changes a genuine bundle — as a document, or as text where a document cannot say it — and names
the ``.path`` that ``docs/formats/proofs-v1.md`` says a reader reports first. The reference
(``contextmesh.formats.proofs.verify_bundle``) and ``tools/verify_ledger_proofs.py`` must both
refuse every case at that path.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import rfc8785

from contextmesh.core.canonical import file_bytes
from contextmesh.formats.checkpoint import Checkpoint, read_checkpoint, session_origin, sign_checkpoint
from contextmesh.formats.merkle import MerkleTree, TreeHead
from contextmesh.formats.proofs import checkpoint_for, consistency_bundle, inclusion_bundle, ledger_tree
from contextmesh.formats.run_ledger import RunLedger
from contextmesh.formats.signed_note import NoteSigner

Doc = dict[str, Any]
DISPROOF = 10
ORIGIN = session_origin("2ff00f21-ef01-45ee-873a-75371bcbba39")
GENESIS = "0" * 64


@dataclass
class World:
    ledger: RunLedger
    tree: MerkleTree
    signer: NoteSigner
    forger: NoteSigner
    old: str  # the genuine checkpoint at size 20
    new: str  # the genuine checkpoint at size 29

    def inclusion(self) -> Doc:
        return inclusion_bundle(self.ledger, DISPROOF, self.new, tree=self.tree)

    def consistency(self) -> Doc:
        return consistency_bundle(self.ledger, self.old, self.new, tree=self.tree)


def make_world(ledger: RunLedger) -> World:
    signer = NoteSigner.generate("contextmesh.example/deploy")
    forger = NoteSigner.generate("contextmesh.example/deploy")  # the same name, another key
    tree = ledger_tree(ledger)
    old = checkpoint_for(ledger, signer, ORIGIN, size=20, tree=tree)
    new = checkpoint_for(ledger, signer, ORIGIN, tree=tree)
    return World(ledger, tree, signer, forger, old, new)


def digest_of(entry: Doc) -> str:
    return hashlib.sha256(rfc8785.dumps({k: v for k, v in entry.items() if k != "digest"})).hexdigest()


def flip_b64(text: str, byte: int = 0) -> str:
    raw = bytearray(base64.b64decode(text))
    raw[byte] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def swap_line(note: str, index: int, text: str) -> str:
    lines = note.split("\n")
    lines[index] = text
    return "\n".join(lines)


def with_signature_key_id(note: str, key_id: int) -> str:
    """The note with its first signature's key id replaced (the signature bytes kept)."""
    lines = note.split("\n")
    name, encoded = lines[4][2:].split(" ")
    raw = base64.b64decode(encoded)
    lines[4] = f"— {name} {base64.b64encode(key_id.to_bytes(4, 'big') + raw[4:]).decode()}"
    return "\n".join(lines)


def _claim_index(bundle: Doc, index: int) -> None:
    """Move the entry to another index, its seq and digest made to agree (only the proof can tell)."""
    bundle["leaf_index"] = index
    bundle["entry"]["seq"] = index + 1
    bundle["entry"]["digest"] = digest_of(bundle["entry"])


def _flip_signature(note: str) -> str:
    """One bit of the Ed25519 signature flipped; the key id kept."""
    lines = note.split("\n")
    name, encoded = lines[4][2:].split(" ")
    lines[4] = f"— {name} {flip_b64(encoded, 40)}"
    return "\n".join(lines)


def rewritten_history(ledger: RunLedger) -> RunLedger:
    """The whole ledger rewritten consistently: the disproof's reason changed, every entry re-chained."""
    doc = json.loads(ledger.dump())
    doc["entries"][DISPROOF]["detail"] = "no advisory was found"
    doc["entries"][DISPROOF]["receipt"]["reason"] = "no advisory was found"
    previous = GENESIS
    for entry in doc["entries"]:
        entry["previous"] = previous
        entry["digest"] = previous = digest_of(entry)
    doc["head"] = previous
    return RunLedger.load(file_bytes(doc))  # an internally perfect chain: it loads without a trusted head


@dataclass(frozen=True)
class Case:
    """One changed bundle (as bytes) and the path a reader must refuse it at."""

    name: str
    kind: str  # which genuine bundle it starts from
    make: Callable[[World, Doc], bytes]
    path: str


def doc_case(name: str, kind: str, change: Callable[[World, Doc], None], path: str) -> Case:
    def make(world: World, bundle: Doc) -> bytes:
        changed = copy.deepcopy(bundle)
        change(world, changed)
        return file_bytes(changed)

    return Case(name, kind, make, path)


def text_case(name: str, kind: str, change: Callable[[bytes], bytes], path: str) -> Case:
    return Case(name, kind, lambda world, bundle: change(file_bytes(bundle)), path)


def _set(field: str, value: Any) -> Callable[[World, Doc], None]:
    def change(world: World, bundle: Doc) -> None:
        bundle[field] = value

    return change


def _entry(change: Callable[[Doc], None], *, rechain: bool = False) -> Callable[[World, Doc], None]:
    def apply(world: World, bundle: Doc) -> None:
        change(bundle["entry"])
        if rechain:
            bundle["entry"]["digest"] = digest_of(bundle["entry"])

    return apply


def _path(field: str, change: Callable[[list[str]], None]) -> Callable[[World, Doc], None]:
    def apply(world: World, bundle: Doc) -> None:
        change(bundle[field])

    return apply


def _note(field: str, change: Callable[[World, str], str]) -> Callable[[World, Doc], None]:
    def apply(world: World, bundle: Doc) -> None:
        bundle[field] = change(world, bundle[field])

    return apply


def _resign(field: str, signer: str, *, origin: str = ORIGIN, head: Callable[[World], TreeHead] | None = None) -> Any:
    def change(world: World, note: str) -> str:
        checkpoint = read_checkpoint(note)
        signed_head = head(world) if head else checkpoint.head
        return sign_checkpoint(Checkpoint(origin, signed_head), getattr(world, signer))

    return _note(field, change)


def _forged_head(world: World) -> TreeHead:
    return ledger_tree(rewritten_history(world.ledger)).head()


def _dup(kind: str) -> Callable[[bytes], bytes]:
    return lambda data: data.replace(b'{"', b'{"kind":"' + kind.encode() + b'","', 1)


INCLUSION = [
    doc_case("entry-detail-edited", "inclusion", _entry(lambda e: e.update(detail="edited")), "entry.digest"),
    doc_case("entry-reason-edited", "inclusion", _entry(lambda e: e["receipt"].update(reason="x")), "entry.digest"),
    doc_case(
        "entry-edited-digest-recomputed",
        "inclusion",
        _entry(lambda e: e.update(detail="edited"), rechain=True),
        "audit_path",
    ),
    doc_case("entry-seq-changed", "inclusion", _entry(lambda e: e.update(seq=12), rechain=True), "entry.seq"),
    doc_case(
        "entry-float-in-receipt",
        "inclusion",
        _entry(lambda e: e["receipt"].update(blast_radius=8.0)),
        "entry.receipt.blast_radius",
    ),
    doc_case("entry-unknown-field", "inclusion", _entry(lambda e: e.update(extra=1)), "entry.extra"),
    doc_case("entry-not-an-object", "inclusion", _set("entry", []), "entry"),
    doc_case("leaf-index-changed", "inclusion", _set("leaf_index", 11), "entry.seq"),
    doc_case("leaf-index-negative", "inclusion", _set("leaf_index", -1), "leaf_index"),
    doc_case("leaf-index-beyond-the-checkpoint", "inclusion", lambda w, b: _claim_index(b, 29), "leaf_index"),
    doc_case(
        "audit-path-hash-flipped",
        "inclusion",
        _path("audit_path", lambda p: p.__setitem__(1, flip_b64(p[1]))),
        "audit_path",
    ),
    doc_case("audit-path-hash-dropped", "inclusion", _path("audit_path", lambda p: p.pop()), "audit_path"),
    doc_case("audit-path-hash-added", "inclusion", _path("audit_path", lambda p: p.append(p[0])), "audit_path"),
    doc_case("audit-path-swapped", "inclusion", _path("audit_path", lambda p: p.reverse()), "audit_path"),
    doc_case(
        "audit-path-not-base64", "inclusion", _path("audit_path", lambda p: p.__setitem__(2, "???")), "audit_path[2]"
    ),
    doc_case(
        "audit-path-short-hash", "inclusion", _path("audit_path", lambda p: p.__setitem__(0, "AAAA")), "audit_path[0]"
    ),
    doc_case("audit-path-not-a-list", "inclusion", _set("audit_path", "x"), "audit_path"),
    doc_case(
        "checkpoint-size-edited",
        "inclusion",
        _note("checkpoint", lambda w, n: swap_line(n, 1, "28")),
        "checkpoint.line[4]",
    ),
    doc_case(
        "checkpoint-root-edited",
        "inclusion",
        _note("checkpoint", lambda w, n: swap_line(n, 2, flip_b64(n.split("\n")[2]))),
        "checkpoint.line[4]",
    ),
    doc_case(
        "checkpoint-root-malformed",
        "inclusion",
        _note("checkpoint", lambda w, n: swap_line(n, 2, "AAAA")),
        "checkpoint.line[2]",
    ),
    doc_case("checkpoint-not-text", "inclusion", _set("checkpoint", 7), "checkpoint"),
    doc_case(
        "checkpoint-of-another-session",
        "inclusion",
        _resign("checkpoint", "signer", origin=session_origin("00000000-0000-4000-8000-000000000000")),
        "checkpoint.line[0]",
    ),
    doc_case("checkpoint-signed-by-a-forger", "inclusion", _resign("checkpoint", "forger"), "checkpoint"),
    doc_case(
        "signature-bit-flipped", "inclusion", _note("checkpoint", lambda w, n: _flip_signature(n)), "checkpoint.line[4]"
    ),
    doc_case(
        "forged-signature-with-the-pinned-key-id",
        "inclusion",
        lambda w, b: b.update(
            checkpoint=with_signature_key_id(
                sign_checkpoint(read_checkpoint(b["checkpoint"]), w.forger), w.signer.key_id
            )
        ),
        "checkpoint.line[4]",
    ),
    doc_case("field-missing", "inclusion", lambda w, b: b.pop("audit_path"), "audit_path"),
    doc_case("field-unknown", "inclusion", _set("note", "hello"), "note"),
    doc_case("schema-wrong", "inclusion", _set("schema", "contextmesh.runledger"), "schema"),
    doc_case("version-two", "inclusion", _set("version", 2), "version"),
    doc_case("kind-unknown", "inclusion", _set("kind", "exclusion"), "kind"),
    text_case("duplicate-key", "inclusion", _dup("inclusion"), "$"),
    text_case("not-json", "inclusion", lambda data: data[:-5], "$"),
]

CONSISTENCY = [
    doc_case(
        "proof-hash-flipped",
        "consistency",
        _path("consistency_path", lambda p: p.__setitem__(0, flip_b64(p[0], 31))),
        "consistency_path",
    ),
    doc_case("proof-truncated", "consistency", _path("consistency_path", lambda p: p.pop()), "consistency_path"),
    doc_case("proof-emptied", "consistency", _set("consistency_path", []), "consistency_path"),
    doc_case(
        "checkpoints-swapped",
        "consistency",
        lambda w, b: b.update(old_checkpoint=b["new_checkpoint"], new_checkpoint=b["old_checkpoint"]),
        "new_checkpoint.line[1]",
    ),
    doc_case(
        "new-checkpoint-of-a-rewritten-history-signed-by-a-forger",
        "consistency",
        _resign("new_checkpoint", "forger", head=_forged_head),
        "new_checkpoint",
    ),
    doc_case(
        "the-key-holder-signs-a-rewritten-history",
        "consistency",
        _resign("new_checkpoint", "signer", head=_forged_head),
        "consistency_path",
    ),
    doc_case(
        "new-checkpoint-of-another-origin",
        "consistency",
        _resign("new_checkpoint", "signer", origin=session_origin("00000000-0000-4000-8000-000000000000")),
        "new_checkpoint.line[0]",
    ),
    doc_case(
        "old-checkpoint-of-the-empty-tree",
        "consistency",
        _resign("old_checkpoint", "signer", head=lambda w: w.tree.head(0)),
        "old_checkpoint.line[1]",
    ),
    doc_case(
        "old-checkpoint-size-edited",
        "consistency",
        _note("old_checkpoint", lambda w, n: swap_line(n, 1, "21")),
        "old_checkpoint.line[4]",
    ),
    doc_case("kind-swapped", "consistency", _set("kind", "inclusion"), "checkpoint"),
]

CASES = INCLUSION + CONSISTENCY

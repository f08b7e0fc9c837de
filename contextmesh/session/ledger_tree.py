"""The run ledger's Merkle tree in a session: leaves from the digest's bytes, a frontier kept beside the ledger.

A v4 manifest records the RFC 9162 tree head of its ledger (``docs/formats/session-v4.md``). Two
jobs, each without hashing the ledger twice:

* **Loading.** The ledger's loader recomputes every entry's digest from the entry's RFC 8785 bytes
  (runledger-v2 L22). :class:`LeafPass` takes those bytes as they go by (``RunLedger.load``'s
  ``entry_bytes``) and turns them into the entry's leaf (:func:`leaf_bytes`), so the tree costs
  one SHA-256 a leaf and no second canonical pass. It also remembers the root at one earlier size
  (the previous generation's), for a reader that checks the new tree extends the old one.
* **Committing.** The frontier of the loaded ledger is kept beside it (:func:`keep`, a weak map
  keyed by the ledger object, so it lives exactly as long as the ledger). :func:`seal_ledger`
  copies it and appends only the entries recorded since: O(log n) a new entry, never a rehash.
  When no frontier is kept for this ledger, or the ledger no longer starts with the entries it was
  kept for (another ledger object, a plan replaced), the seal is rebuilt from every entry, as a
  full :class:`MerkleTree` so any earlier head can still be checked against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from contextmesh.core.canonical import merkle_leaf_hash
from contextmesh.formats.merkle import EMPTY_ROOT, Frontier, MerkleTree, TreeHead
from contextmesh.formats.proofs import entry_leaf_hash
from contextmesh.formats.run_ledger import GENESIS, RunLedger

__all__ = ["LeafPass", "LedgerSeal", "keep", "leaf_bytes", "seal_ledger"]

# RFC 8785 writes an entry's members sorted by name: decision_id, detail, digest, event, … . So an
# entry's bytes are its digest bytes (every field but digest) with the digest member put back
# before "event". The first ',"event":' of the digest bytes is that member's place: before it lie
# only decision_id and detail, null or strings, and inside a JSON string every '"' is escaped, so a
# comma followed by a quote never occurs inside one.
_EVENT = b',"event":'


def leaf_bytes(digest_bytes: bytes, digest: str) -> bytes:
    """The leaf bytes of an entry (RFC 8785 of the whole entry) from the bytes its digest hashes."""
    cut = digest_bytes.index(_EVENT) + 1
    return b"".join((digest_bytes[:cut], b'"digest":"', digest.encode("ascii"), b'",', digest_bytes[cut:]))


class LeafPass:
    """The tree of a ledger, built from the bytes its load checks; ``remember`` a root at one size.

    ``full_tree`` also keeps every perfect subtree (a :class:`MerkleTree`), for a caller that makes
    proofs from the loaded ledger without hashing its entries again.
    """

    def __init__(self, remember: int | None = None, *, find_digest: str | None = None, full_tree: bool = False) -> None:
        self.frontier = Frontier()
        self.tree = MerkleTree() if full_tree else None
        self.remember = remember
        self.remembered: bytes | None = EMPTY_ROOT if remember == 0 else None
        self.find_digest = find_digest
        self.found_at: int | None = 0 if find_digest == GENESIS else None
        self.last_digest = GENESIS

    def __call__(self, digest_bytes: bytes, digest: str) -> None:
        leaf = merkle_leaf_hash(leaf_bytes(digest_bytes, digest))
        self.frontier.append(leaf)
        if self.tree is not None:
            self.tree.append(leaf)
        self.last_digest = digest
        if self.frontier.size == self.remember:
            self.remembered = self.frontier.root()
        if digest == self.find_digest and self.found_at is None:
            self.found_at = self.frontier.size


@dataclass(frozen=True)
class _Kept:
    """A frontier of a ledger's first ``frontier.size`` entries, and the digest of the last of them."""

    frontier: Frontier
    digest: str


_KEPT: WeakKeyDictionary[RunLedger, _Kept] = WeakKeyDictionary()


def _copy(frontier: Frontier) -> Frontier:
    return Frontier.from_peaks(frontier.size, frontier.peaks)


def keep(ledger: RunLedger, frontier: Frontier, digest: str) -> None:
    """Keep ``frontier`` (of ``ledger``'s first ``frontier.size`` entries, the last one's digest ``digest``)."""
    _KEPT[ledger] = _Kept(_copy(frontier), digest)


@dataclass(frozen=True)
class LedgerSeal:
    """What a commit records of its ledger: the tree head, and what it knows of earlier heads."""

    head: TreeHead
    digest: str  # the ledger's head digest (the manifest's ledger_head)
    frontier: Frontier
    base: TreeHead | None  # the kept head this seal extended (None: rebuilt from every entry)
    base_digest: str | None
    tree: MerkleTree | None  # when rebuilt: every prefix's root can be asked
    digests: tuple[str, ...] | None  # when rebuilt: every entry's digest, for a v3 predecessor

    def root_at(self, size: int) -> bytes | None:
        """The root of the first ``size`` entries, when this seal can tell (None: it cannot)."""
        if size == self.head.size:
            return self.head.root
        if self.base is not None and size == self.base.size:
            return self.base.root
        if self.tree is not None and 0 <= size <= len(self.tree):
            return self.tree.root(size)
        return None

    def holds_digest(self, digest: str) -> bool | None:
        """Whether some entry (or the empty ledger) has this digest, when this seal can tell."""
        if digest in (GENESIS, self.digest, self.base_digest):
            return True
        return None if self.digests is None else digest in self.digests


def seal_ledger(ledger: RunLedger, *, after: LedgerSeal | None = None, prefixes: bool = True) -> LedgerSeal:
    """The seal of ``ledger`` now: extended from ``after`` or the kept frontier, else rebuilt.

    ``prefixes`` asks a rebuilt seal to keep every prefix's root (a full tree): a commit that has a
    previous generation to check against needs it; the first commit of a directory does not.
    """
    start = _Kept(after.frontier, after.digest) if after is not None else _KEPT.get(ledger)
    if start is not None and start.frontier.size <= len(ledger):
        size = start.frontier.size
        since = ledger.tail(max(size - 1, 0))  # the last entry the frontier holds, then the new ones
        if (since[0].digest if size else GENESIS) == start.digest:
            frontier = _copy(start.frontier)
            frontier.extend(entry_leaf_hash(entry) for entry in since[1 if size else 0 :])
            return LedgerSeal(frontier.head(), ledger.head, frontier, start.frontier.head(), start.digest, None, None)
    entries = ledger.entries
    leaves = [entry_leaf_hash(entry) for entry in entries]
    if not prefixes:
        frontier = Frontier()
        frontier.extend(leaves)
        return LedgerSeal(frontier.head(), ledger.head, frontier, None, None, None, None)
    tree = MerkleTree.of_leaves(leaves)
    digests = tuple(entry.digest for entry in entries)
    return LedgerSeal(tree.head(), ledger.head, tree.frontier(), None, None, tree, digests)

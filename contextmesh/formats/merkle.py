"""RFC 9162 (RFC 6962) Merkle trees: tree heads, inclusion and consistency proofs, and their checks.

The tree is the one of RFC 9162 §2.1: a leaf hashes as SHA-256(0x00 || leaf bytes), an interior node
as SHA-256(0x01 || left || right), and a tree of ``n > 1`` leaves splits at ``k``, the largest power
of two below ``n``. The empty tree's root is SHA-256 of nothing. The hash primitives live in
:mod:`contextmesh.core.canonical`, the one module that hashes.

Two structures, for two jobs:

* :class:`Frontier` — the compact range ``[0, n)``: the roots of the perfect subtrees along the
  right border (one per set bit of ``n``). Appending a leaf costs O(log n) hashes at worst (O(1)
  amortised) and the head (size, root) is O(log n) away, in O(log n) memory. This is what a writer
  keeps to seal each generation without rehashing the whole ledger.
* :class:`MerkleTree` — every perfect subtree's hash (about ``2n`` hashes). Appending is as cheap
  as for the frontier, and then the head of **any** prefix, an audit path and a consistency proof
  each cost O(log² n) hashes at worst, whatever ``n``: no proof recomputes a subtree from its leaves.

The checks (:func:`root_from_inclusion_proof`, :func:`verify_inclusion`, :func:`verify_consistency`)
are the algorithms of RFC 9162 §2.1.3.2 and §2.1.4.2 step by step, with the edge cases of the
transparency-dev/merkle reference (a proof from the empty tree is refused as meaningless; between
equal sizes the proof is empty and the roots equal). They raise :class:`ProofError` naming ``path``
(``audit_path``, ``audit_path[3]``) and never return a verdict to be forgotten.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from contextmesh.core.canonical import merkle_leaf_hash, merkle_node_hash, sha256
from contextmesh.core.errors import ProofError

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "Frontier",
    "MerkleTree",
    "TreeHead",
    "consistency_proof_size",
    "inclusion_proof_size",
    "leaf_hash",
    "root_from_inclusion_proof",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32
EMPTY_ROOT = sha256(b"")  # RFC 9162 §2.1.1: MTH({}) = HASH()


def leaf_hash(data: bytes) -> bytes:
    """The leaf hash of one leaf's bytes: SHA-256(0x00 || data)."""
    return merkle_leaf_hash(data)


@dataclass(frozen=True)
class TreeHead:
    """A tree's size and root: what a checkpoint signs."""

    size: int
    root: bytes

    @property
    def root_hex(self) -> str:
        """The root as 64 lower-case hex digits (the form manifests use)."""
        return self.root.hex()


def _split(n: int) -> int:
    """RFC 9162's ``k``: the largest power of two smaller than ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


def _require_hash(value: bytes, path: str, what: str) -> None:
    if type(value) is not bytes or len(value) != HASH_SIZE:
        found = f"{len(value)} bytes" if isinstance(value, bytes) else f"a {type(value).__name__}"
        raise ProofError(path, found, f"{what} is a SHA-256 hash of {HASH_SIZE} bytes")


class Frontier:
    """The compact range ``[0, n)``: enough to append leaves and compute the head, in O(log n) memory."""

    __slots__ = ("_peaks", "_size")

    def __init__(self) -> None:
        self._size = 0
        # Roots of the perfect subtrees of [0, n), largest (leftmost) first: one per set bit of n.
        self._peaks: list[bytes] = []

    @classmethod
    def from_peaks(cls, size: int, peaks: Sequence[bytes]) -> Frontier:
        """Resume a frontier saved as its size and peaks (largest subtree first)."""
        if type(size) is not int or size < 0:
            raise ProofError("size", repr(size), "a tree size is a non-negative integer")
        if len(peaks) != size.bit_count():
            raise ProofError("peaks", f"{len(peaks)} hashes", f"a tree of {size} leaves has {size.bit_count()} peaks")
        for index, peak in enumerate(peaks):
            _require_hash(peak, f"peaks[{index}]", "a peak")
        frontier = cls()
        frontier._size = size
        frontier._peaks = list(peaks)
        return frontier

    @property
    def size(self) -> int:
        """How many leaves have been appended."""
        return self._size

    @property
    def peaks(self) -> tuple[bytes, ...]:
        """The perfect subtrees' roots, largest first."""
        return tuple(self._peaks)

    def append(self, hashed_leaf: bytes) -> None:
        """Append one leaf hash: merge equal-sized peaks, as binary addition carries."""
        _require_hash(hashed_leaf, "leaf", "a leaf hash")
        node, carry = hashed_leaf, self._size
        while carry & 1:
            node = merkle_node_hash(self._peaks.pop(), node)
            carry >>= 1
        self._peaks.append(node)
        self._size += 1

    def extend(self, hashed_leaves: Iterable[bytes]) -> None:
        """Append leaf hashes in order."""
        for hashed in hashed_leaves:
            self.append(hashed)

    def root(self) -> bytes:
        """MTH of the leaves so far: the peaks folded right to left."""
        if not self._peaks:
            return EMPTY_ROOT
        node = self._peaks[-1]
        for peak in reversed(self._peaks[:-1]):
            node = merkle_node_hash(peak, node)
        return node

    def head(self) -> TreeHead:
        """The current (size, root)."""
        return TreeHead(self._size, self.root())


class MerkleTree:
    """An append-only tree that keeps every perfect subtree's hash, so any proof is O(log² n) hashes."""

    __slots__ = ("_levels",)

    def __init__(self) -> None:
        # _levels[h] holds the hashes of the perfect subtrees of 2**h leaves, left to right,
        # HASH_SIZE bytes each; a bytearray keeps a million leaves in 32 MB rather than 100.
        self._levels: list[bytearray] = [bytearray()]

    @classmethod
    def of_leaves(cls, hashed_leaves: Iterable[bytes]) -> MerkleTree:
        """A tree over these leaf hashes, in order."""
        tree = cls()
        tree.extend(hashed_leaves)
        return tree

    def __len__(self) -> int:
        return len(self._levels[0]) // HASH_SIZE

    def append(self, hashed_leaf: bytes) -> int:
        """Append one leaf hash and return its index; completes each perfect subtree it closes."""
        _require_hash(hashed_leaf, "leaf", "a leaf hash")
        index = len(self)
        self._levels[0] += hashed_leaf
        node, level, position = hashed_leaf, 0, index
        while position & 1:  # this node is a right child: its parent is now complete
            left = self._node(level, position - 1)
            node = merkle_node_hash(left, node)
            level, position = level + 1, position >> 1
            if level == len(self._levels):
                self._levels.append(bytearray())
            self._levels[level] += node
        return index

    def extend(self, hashed_leaves: Iterable[bytes]) -> None:
        """Append leaf hashes in order."""
        for hashed in hashed_leaves:
            self.append(hashed)

    def leaf(self, index: int) -> bytes:
        """The leaf hash at ``index``."""
        self._check_index(index, len(self), "index")
        return self._node(0, index)

    def frontier(self, size: int | None = None) -> Frontier:
        """The compact range of the first ``size`` leaves (all by default)."""
        size = self._check_size(size)
        peaks, start = [], 0
        for level in range(size.bit_length() - 1, -1, -1):
            if size >> level & 1:
                peaks.append(self._node(level, start >> level))
                start += 1 << level
        return Frontier.from_peaks(size, peaks)

    def root(self, size: int | None = None) -> bytes:
        """MTH of the first ``size`` leaves (all by default)."""
        size = self._check_size(size)
        return EMPTY_ROOT if size == 0 else self._subtree(0, size)

    def head(self, size: int | None = None) -> TreeHead:
        """(size, root) of the first ``size`` leaves (all by default)."""
        size = self._check_size(size)
        return TreeHead(size, self.root(size))

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """RFC 9162 §2.1.3.1 PATH(index, D[0:size]): the audit path, lowest sibling first."""
        size = self._check_size(size)
        self._check_index(index, size, "index")
        siblings: list[bytes] = []
        start, end = 0, size
        while end - start > 1:  # descend from the root; each step records the other half
            k = _split(end - start)
            if index < start + k:
                siblings.append(self._subtree(start + k, end))
                end = start + k
            else:
                siblings.append(self._subtree(start, start + k))
                start += k
        return siblings[::-1]

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        """RFC 9162 §2.1.4.1 PROOF(old_size, D[0:new_size]); empty when the sizes are equal."""
        new_size = self._check_size(new_size)
        if type(old_size) is not int or not 0 < old_size <= new_size:
            raise ProofError(
                "old_size", repr(old_size), f"a consistency proof starts at a size from 1 to the newer size {new_size}"
            )
        siblings: list[bytes] = []
        start, end, remaining, whole = 0, new_size, old_size, True
        while remaining != end - start:  # SUBPROOF(remaining, D[start:end], whole), unrolled
            k = _split(end - start)
            if remaining <= k:
                siblings.append(self._subtree(start + k, end))
                end = start + k
            else:
                siblings.append(self._subtree(start, start + k))
                start, remaining, whole = start + k, remaining - k, False
        # The old tree's own root is left out only when the old tree is this very subtree (b = true).
        seed = [] if whole else [self._subtree(start, end)]
        return seed + siblings[::-1]

    def _node(self, level: int, position: int) -> bytes:
        offset = position * HASH_SIZE
        return bytes(self._levels[level][offset : offset + HASH_SIZE])

    def _subtree(self, start: int, end: int) -> bytes:
        """MTH(D[start:end]) for a node of the RFC's split, from stored perfect subtrees.

        ``start`` is a multiple of the smallest power of two at least ``end - start`` (every node
        the RFC's recursion visits is), so each perfect piece is one stored hash.
        """
        width = end - start
        if width & (width - 1) == 0:
            level = width.bit_length() - 1
            return self._node(level, start >> level)
        k = _split(width)
        return merkle_node_hash(self._subtree(start, start + k), self._subtree(start + k, end))

    def _check_size(self, size: int | None) -> int:
        if size is None:
            return len(self)
        if type(size) is not int or not 0 <= size <= len(self):
            raise ProofError("size", repr(size), f"a tree size from 0 to {len(self)} (the leaves this tree holds)")
        return size

    @staticmethod
    def _check_index(index: int, size: int, path: str) -> None:
        if type(index) is not int or not 0 <= index < size:
            raise ProofError(path, repr(index), f"a leaf index from 0 to {size - 1} (a tree of {size} leaves)")


def inclusion_proof_size(index: int, size: int) -> int:
    """How many hashes the audit path of leaf ``index`` in a tree of ``size`` leaves has (0 <= index < size)."""
    inner = (index ^ (size - 1)).bit_length()  # levels below the point where index and size-1 part
    return inner + (index >> inner).bit_count()


def consistency_proof_size(old_size: int, new_size: int) -> int:
    """How many hashes a consistency proof from ``old_size`` to ``new_size`` has (0 < old_size <= new_size)."""
    if old_size == new_size:
        return 0
    shift = (old_size & -old_size).bit_length() - 1  # trailing zero bits of old_size
    inner = ((old_size - 1) ^ (new_size - 1)).bit_length() - shift
    border = ((old_size - 1) >> (inner + shift)).bit_count()
    seeded = 0 if old_size == 1 << shift else 1  # the old root is given, unless the old tree is perfect
    return seeded + inner + border


def _require_hashes(proof: Sequence[bytes], path: str) -> None:
    if not isinstance(proof, list | tuple):
        raise ProofError(path, f"a {type(proof).__name__}", "a proof is a list of hashes")
    for position, node in enumerate(proof):
        _require_hash(node, f"{path}[{position}]", "each hash of a proof")


def _require_count(proof: Sequence[bytes], expected: int, path: str, what: str) -> None:
    if len(proof) != expected:
        raise ProofError(path, f"{len(proof)} hashes", f"{what} has exactly {expected}")


def root_from_inclusion_proof(
    index: int, size: int, hashed_leaf: bytes, proof: Sequence[bytes], *, path: str = "audit_path"
) -> bytes:
    """The root an audit path leads to from leaf ``index`` (RFC 9162 §2.1.3.2, steps 1-4)."""
    if type(index) is not int or type(size) is not int or not 0 <= index < size:
        raise ProofError(path, f"leaf index {index} in a tree of size {size}", "the leaf index lies below the size")
    _require_hash(hashed_leaf, path, "the leaf hash")
    _require_hashes(proof, path)
    what = f"the audit path of leaf {index} in a tree of {size} leaves"
    _require_count(proof, inclusion_proof_size(index, size), path, what)
    fn, sn, node = index, size - 1, hashed_leaf
    for position, sibling in enumerate(proof):
        if sn == 0:  # step 4a; unreachable after the count check, kept as the RFC states it
            raise ProofError(f"{path}[{position}]", "a hash past the root", f"{what} ends at the root")
        if fn & 1 or fn == sn:
            node = merkle_node_hash(sibling, node)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            node = merkle_node_hash(node, sibling)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:  # step 5
        raise ProofError(path, f"{len(proof)} hashes", f"{what} reaches the root")
    return node


def verify_inclusion(
    index: int, size: int, hashed_leaf: bytes, proof: Sequence[bytes], root: bytes, *, path: str = "audit_path"
) -> None:
    """Refuse unless ``proof`` leads from leaf ``index``'s hash to ``root`` in a tree of ``size`` leaves."""
    # The root is compared, not checked for length: a root of another length simply never matches,
    # as in the reference (its vectors pass roots of any length where the roots are equal).
    computed = root_from_inclusion_proof(index, size, hashed_leaf, proof, path=path)
    if computed != root:
        raise ProofError(
            path,
            f"a path to the root {computed.hex()}",
            f"the audit path of leaf {index} must lead to the tree's root {root.hex()}",
        )


def verify_consistency(
    old_size: int,
    new_size: int,
    proof: Sequence[bytes],
    old_root: bytes,
    new_root: bytes,
    *,
    path: str = "consistency_path",
) -> None:
    """Refuse unless ``proof`` shows the tree (new_size, new_root) extends (old_size, old_root): RFC 9162 §2.1.4.2."""
    _require_hashes(proof, path)
    sizes = f"from size {old_size} to {new_size}"
    if type(old_size) is not int or type(new_size) is not int or not 0 <= old_size <= new_size:
        raise ProofError(path, f"a proof {sizes}", "a consistency proof runs from a smaller tree to a larger one")
    if old_size == 0:
        raise ProofError(
            path, f"a proof {sizes}", "every tree extends the empty tree: a proof from size 0 proves nothing"
        )
    if old_size == new_size:
        _require_count(proof, 0, path, f"a consistency proof {sizes}")
        if old_root != new_root:
            raise ProofError(path, f"the roots {old_root.hex()} and {new_root.hex()}", "equal sizes have equal roots")
        return
    _require_count(proof, consistency_proof_size(old_size, new_size), path, f"a consistency proof {sizes}")
    # Step 2: a perfect old tree is its own first node, so the proof leaves its root out.
    nodes = [old_root, *proof] if old_size & (old_size - 1) == 0 else list(proof)
    offset = len(nodes) - len(proof)  # to name the proof's own positions in errors
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:  # step 4
        fn, sn = fn >> 1, sn >> 1
    old_node = new_node = nodes[0]  # step 5
    for position in range(1, len(nodes)):  # step 6
        sibling = nodes[position]
        if sn == 0:
            raise ProofError(f"{path}[{position - offset}]", "a hash past the root", "the proof ends at the root")
        if fn & 1 or fn == sn:
            old_node = merkle_node_hash(sibling, old_node)
            new_node = merkle_node_hash(sibling, new_node)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            new_node = merkle_node_hash(new_node, sibling)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:  # step 7
        raise ProofError(path, f"{len(proof)} hashes", f"a consistency proof {sizes} reaches the root")
    if old_node != old_root:
        raise ProofError(
            path, f"a proof of the old root {old_node.hex()}", f"the proof must rebuild the old root {old_root.hex()}"
        )
    if new_node != new_root:
        raise ProofError(
            path, f"a proof of the new root {new_node.hex()}", f"the proof must lead to the new root {new_root.hex()}"
        )

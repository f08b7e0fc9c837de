"""Property tests: every proof the tree gives verifies, and no flipped bit ever does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmesh.core.errors import ProofError
from contextmesh.formats.merkle import (
    Frontier,
    MerkleTree,
    consistency_proof_size,
    inclusion_proof_size,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)


def tree_of(size: int) -> MerkleTree:
    return MerkleTree.of_leaves(leaf_hash(index.to_bytes(3, "big")) for index in range(size))


def flip(data: bytes, bit: int) -> bytes:
    bit %= len(data) * 8
    changed = bytearray(data)
    changed[bit // 8] ^= 1 << (bit % 8)
    return bytes(changed)


sizes = st.integers(min_value=1, max_value=300)


@settings(max_examples=150, deadline=None)
@given(size=sizes, data=st.data())
def test_every_inclusion_proof_verifies(size: int, data: st.DataObject) -> None:
    tree = tree_of(size)
    index = data.draw(st.integers(min_value=0, max_value=size - 1))
    proof = tree.inclusion_proof(index)
    assert len(proof) == inclusion_proof_size(index, size)
    verify_inclusion(index, size, tree.leaf(index), proof, tree.root())


@settings(max_examples=150, deadline=None)
@given(size=st.integers(min_value=2, max_value=300), data=st.data())
def test_every_consistency_proof_verifies(size: int, data: st.DataObject) -> None:
    tree = tree_of(size)
    old = data.draw(st.integers(min_value=1, max_value=size))
    proof = tree.consistency_proof(old)
    assert len(proof) == consistency_proof_size(old, size)
    verify_consistency(old, size, proof, tree.root(old), tree.root())


@settings(max_examples=200, deadline=None)
@given(size=st.integers(min_value=2, max_value=200), data=st.data())
def test_a_flipped_bit_in_an_inclusion_proof_the_leaf_or_the_root_never_verifies(
    size: int, data: st.DataObject
) -> None:
    tree = tree_of(size)
    index = data.draw(st.integers(min_value=0, max_value=size - 1))
    proof, hashed, root = tree.inclusion_proof(index), tree.leaf(index), tree.root()
    target = data.draw(st.sampled_from(["leaf", "root", *(["proof"] if proof else [])]))
    bit = data.draw(st.integers(min_value=0, max_value=255))
    if target == "leaf":
        hashed = flip(hashed, bit)
    elif target == "root":
        root = flip(root, bit)
    else:
        position = data.draw(st.integers(min_value=0, max_value=len(proof) - 1))
        proof[position] = flip(proof[position], bit)
    with pytest.raises(ProofError):
        verify_inclusion(index, size, hashed, proof, root)


@settings(max_examples=200, deadline=None)
@given(size=st.integers(min_value=3, max_value=200), data=st.data())
def test_a_flipped_bit_in_a_consistency_proof_or_either_root_never_verifies(size: int, data: st.DataObject) -> None:
    tree = tree_of(size)
    old = data.draw(st.integers(min_value=1, max_value=size - 1))
    proof, old_root, new_root = tree.consistency_proof(old), tree.root(old), tree.root()
    target = data.draw(st.sampled_from(["proof", "old", "new"]))
    bit = data.draw(st.integers(min_value=0, max_value=255))
    if target == "old":
        old_root = flip(old_root, bit)
    elif target == "new":
        new_root = flip(new_root, bit)
    else:
        position = data.draw(st.integers(min_value=0, max_value=len(proof) - 1))
        proof[position] = flip(proof[position], bit)
    with pytest.raises(ProofError):
        verify_consistency(old, size, proof, old_root, new_root)


@settings(max_examples=100, deadline=None)
@given(size=st.integers(min_value=2, max_value=300), data=st.data())
def test_a_proof_for_another_index_or_size_never_verifies(size: int, data: st.DataObject) -> None:
    tree = tree_of(size + 1)
    index = data.draw(st.integers(min_value=0, max_value=size - 1))
    proof = tree.inclusion_proof(index, size)
    other = data.draw(st.integers(min_value=0, max_value=size - 1).filter(lambda i: i != index))
    with pytest.raises(ProofError):
        verify_inclusion(other, size, tree.leaf(index), proof, tree.root(size))
    with pytest.raises(ProofError):
        verify_inclusion(index, size + 1, tree.leaf(index), proof, tree.root(size + 1))


@settings(max_examples=100, deadline=None)
@given(size=st.integers(min_value=0, max_value=400))
def test_the_frontier_and_the_tree_agree_on_every_head(size: int) -> None:
    tree = tree_of(size)
    frontier = Frontier()
    for index in range(size):
        frontier.append(tree.leaf(index))
    assert frontier.head() == tree.head()
    assert tree.frontier().peaks == frontier.peaks

"""contextmesh/formats/merkle.py against the RFC 6962 reference vectors of transparency-dev/merkle.

The vectors are vendored under tests/data/merkle-vectors (data only; see its README): the reference
hasher outputs, the root of every prefix of its eight-leaf tree, every perfect subtree's hash, and
the reference's own inclusion and consistency probes, valid and invalid.
"""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path
from typing import Any

import pytest

from contextmesh.core.canonical import merkle_node_hash
from contextmesh.core.errors import InputError, ProofError
from contextmesh.formats.merkle import (
    EMPTY_ROOT,
    Frontier,
    MerkleTree,
    consistency_proof_size,
    inclusion_proof_size,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)

VECTORS = Path(__file__).resolve().parents[1] / "data" / "merkle-vectors"
REFERENCE = json.loads((VECTORS / "reference.json").read_text(encoding="utf-8"))
LEAVES = [bytes.fromhex(text) for text in REFERENCE["leaf_inputs_hex"]]


def probes(kind: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (str(path.relative_to(VECTORS / kind)), json.loads(path.read_text(encoding="utf-8")))
        for path in sorted((VECTORS / kind).rglob("*.json"))
    ]


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def hashes(items: list[str] | None) -> list[bytes]:
    return [unb64(item) for item in items or []]


@pytest.fixture(scope="module")
def reference_tree() -> MerkleTree:
    return MerkleTree.of_leaves(leaf_hash(leaf) for leaf in LEAVES)


@pytest.mark.parametrize("case", REFERENCE["hasher"], ids=lambda case: case["desc"])
def test_the_hasher_matches_the_reference(case: dict[str, str]) -> None:
    if case["kind"] == "empty":
        got = EMPTY_ROOT
    elif case["kind"] == "leaf":
        got = leaf_hash(case["input_ascii"].encode())
    else:
        got = merkle_node_hash(case["left_ascii"].encode(), case["right_ascii"].encode())
    assert got.hex() == case["want_hex"]


def test_the_root_of_every_prefix_matches_the_reference(reference_tree: MerkleTree) -> None:
    assert [reference_tree.root(size).hex() for size in range(len(LEAVES) + 1)] == REFERENCE["root_hashes_hex"]


def test_every_perfect_subtree_matches_the_reference() -> None:
    for level, row in enumerate(REFERENCE["node_hashes_hex"]):
        width = 1 << level
        # A perfect subtree is the root of its own slice: rebuild each one from its leaves.
        got = [
            MerkleTree.of_leaves(leaf_hash(leaf) for leaf in LEAVES[i * width : (i + 1) * width]).root().hex()
            for i in range(len(row))
        ]
        assert got == row


def test_the_frontier_gives_every_prefix_root_while_appending() -> None:
    frontier = Frontier()
    roots = [frontier.root().hex()]
    for leaf in LEAVES:
        frontier.append(leaf_hash(leaf))
        roots.append(frontier.root().hex())
    assert roots == REFERENCE["root_hashes_hex"]
    assert len(frontier.peaks) == bin(len(LEAVES)).count("1")


def test_a_frontier_resumed_from_its_peaks_continues_like_the_original(reference_tree: MerkleTree) -> None:
    saved = reference_tree.frontier(5)
    resumed = Frontier.from_peaks(saved.size, saved.peaks)
    resumed.extend(leaf_hash(leaf) for leaf in LEAVES[5:])
    assert resumed.head() == reference_tree.head()


def test_a_frontier_with_the_wrong_number_of_peaks_is_refused() -> None:
    with pytest.raises(ProofError) as caught:
        Frontier.from_peaks(5, [EMPTY_ROOT])
    assert caught.value.path == "peaks"


@pytest.mark.parametrize(("name", "probe"), probes("inclusion"), ids=[name for name, _ in probes("inclusion")])
def test_inclusion_probes(name: str, probe: dict[str, Any]) -> None:
    def check() -> None:
        verify_inclusion(
            probe["leafIdx"], probe["treeSize"], unb64(probe["leafHash"]), hashes(probe["proof"]), unb64(probe["root"])
        )

    if probe["wantErr"]:
        with pytest.raises(ProofError) as caught:
            check()
        assert caught.value.path.startswith("audit_path")
    else:
        check()


@pytest.mark.parametrize(("name", "probe"), probes("consistency"), ids=[name for name, _ in probes("consistency")])
def test_consistency_probes(name: str, probe: dict[str, Any]) -> None:
    def check() -> None:
        verify_consistency(
            probe["size1"], probe["size2"], hashes(probe["proof"]), unb64(probe["root1"]), unb64(probe["root2"])
        )

    if probe["wantErr"]:
        with pytest.raises(ProofError) as caught:
            check()
        assert caught.value.path.startswith("consistency_path")
    else:
        check()


def test_the_probe_set_holds_valid_and_invalid_cases_of_both_kinds() -> None:
    for kind in ("inclusion", "consistency"):
        verdicts = [probe["wantErr"] for _, probe in probes(kind)]
        assert verdicts.count(False) >= 5 and verdicts.count(True) >= 50, kind


@pytest.mark.parametrize("kind", ["inclusion", "consistency"])
def test_the_prover_reproduces_every_happy_path_proof(reference_tree: MerkleTree, kind: str) -> None:
    happy = [probe for name, probe in probes(kind) if name.endswith("happy-path.json")]
    assert len(happy) >= 5
    for probe in happy:
        if kind == "inclusion":
            assert reference_tree.inclusion_proof(probe["leafIdx"], probe["treeSize"]) == hashes(probe["proof"])
            assert reference_tree.root(probe["treeSize"]) == unb64(probe["root"])
        else:
            assert reference_tree.consistency_proof(probe["size1"], probe["size2"]) == hashes(probe["proof"])


def test_an_inclusion_proof_in_a_100000_leaf_tree_has_at_most_log2_n_plus_one_hashes() -> None:
    size = 100_000
    tree = MerkleTree.of_leaves(leaf_hash(index.to_bytes(4, "big")) for index in range(size))
    bound = math.ceil(math.log2(size)) + 1
    root = tree.root()
    for index in (0, 1, 4_095, 65_535, 65_536, 99_998, size - 1, 31_337):
        proof = tree.inclusion_proof(index)
        assert len(proof) <= bound
        assert len(proof) == inclusion_proof_size(index, size)
        verify_inclusion(index, size, tree.leaf(index), proof, root)  # needs only the proof and the root
    assert max(inclusion_proof_size(index, size) for index in range(0, size, 97)) <= bound


def test_proofs_for_a_prefix_of_the_tree_verify_against_that_prefix_root() -> None:
    tree = MerkleTree.of_leaves(leaf_hash(bytes([i])) for i in range(50))
    for size in (1, 2, 7, 32, 33, 50):
        for index in range(0, size, 3):
            verify_inclusion(index, size, tree.leaf(index), tree.inclusion_proof(index, size), tree.root(size))
        for old in range(1, size + 1, 4):
            proof = tree.consistency_proof(old, size)
            assert len(proof) == consistency_proof_size(old, size)
            verify_consistency(old, size, proof, tree.root(old), tree.root(size))


def test_a_proof_with_a_hash_of_the_wrong_length_is_refused_at_that_hash() -> None:
    tree = MerkleTree.of_leaves(leaf_hash(bytes([i])) for i in range(8))
    proof = tree.inclusion_proof(3)
    proof[1] = proof[1][:31]
    with pytest.raises(ProofError) as caught:
        verify_inclusion(3, 8, tree.leaf(3), proof, tree.root())
    assert caught.value.path == "audit_path[1]"
    assert "32 bytes" in caught.value.rule
    assert isinstance(caught.value, InputError)


@pytest.mark.parametrize(
    ("call", "path"),
    [
        (lambda tree: tree.inclusion_proof(8), "index"),
        (lambda tree: tree.inclusion_proof(0, 9), "size"),
        (lambda tree: tree.consistency_proof(0, 4), "old_size"),
        (lambda tree: tree.consistency_proof(5, 4), "old_size"),
        (lambda tree: tree.root(-1), "size"),
        (lambda tree: tree.append(b"short"), "leaf"),
    ],
    ids=["index-past-the-end", "size-past-the-end", "old-size-zero", "old-above-new", "negative-size", "short-leaf"],
)
def test_the_prover_refuses_bad_arguments_with_a_path(call: Any, path: str) -> None:
    tree = MerkleTree.of_leaves(leaf_hash(bytes([i])) for i in range(8))
    with pytest.raises(ProofError) as caught:
        call(tree)
    assert caught.value.path == path

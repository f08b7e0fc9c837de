"""contextmesh/formats/proofs.py: bundles from the demo's ledger, the tampering suite, and a rewritten history."""

from __future__ import annotations

import math

import pytest
from proof_cases import CASES, DISPROOF, ORIGIN, Case, World, make_world, rewritten_history

from contextmesh.core.canonical import file_bytes
from contextmesh.core.errors import InputError, ProofError
from contextmesh.demo.execute import run_walkthrough
from contextmesh.formats.checkpoint import open_checkpoint
from contextmesh.formats.proofs import (
    ProvenConsistency,
    ProvenInclusion,
    checkpoint_for,
    consistency_bundle,
    inclusion_bundle,
    ledger_frontier,
    ledger_tree,
    verify_bundle,
)
from contextmesh.formats.run_ledger import RunLedger


@pytest.fixture(scope="module")
def world() -> World:
    return make_world(run_walkthrough().runner.ledger)


def test_an_inclusion_bundle_of_the_disproof_verifies_with_the_pinned_key_alone(world: World) -> None:
    bundle = world.inclusion()
    assert bundle["entry"]["event"] == "disproved" and bundle["entry"]["receipt"]["task"] == "hashing"
    assert len(bundle["audit_path"]) <= math.ceil(math.log2(len(world.ledger))) + 1
    proven = verify_bundle(file_bytes(bundle), world.signer.verifier(), origin=ORIGIN)
    assert isinstance(proven, ProvenInclusion)
    assert proven.index == DISPROOF
    assert proven.entry == world.ledger.entries[DISPROOF]
    assert proven.checkpoint.head == world.tree.head()


def test_a_consistency_bundle_between_two_generations_verifies(world: World) -> None:
    proven = verify_bundle(file_bytes(world.consistency()), [world.signer.verifier()])
    assert isinstance(proven, ProvenConsistency)
    assert (proven.old.head.size, proven.new.head.size) == (20, 29)


def test_the_frontier_extends_a_saved_prefix_without_rehashing_it(world: World) -> None:
    prefix = RunLedger.load(world.ledger.dump())
    frontier = ledger_frontier(prefix)
    assert frontier.head() == world.tree.head()
    assert ledger_frontier(world.ledger, world.tree.frontier(20)).head() == world.tree.head()


def test_a_bundle_is_never_made_against_a_checkpoint_of_another_ledger(world: World) -> None:
    forged = rewritten_history(world.ledger)
    foreign = checkpoint_for(forged, world.signer, ORIGIN)
    with pytest.raises(ProofError) as caught:
        inclusion_bundle(world.ledger, DISPROOF, foreign, tree=world.tree)
    assert caught.value.path == "checkpoint"
    with pytest.raises(ProofError) as caught:
        inclusion_bundle(world.ledger, 25, world.old, tree=world.tree)
    assert caught.value.path == "leaf_index"
    with pytest.raises(ProofError) as caught:
        consistency_bundle(world.ledger, world.new, world.old, tree=world.tree)
    assert caught.value.path == "old_checkpoint"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_every_tampered_bundle_is_refused_at_its_path(case: Case, world: World) -> None:
    genuine = world.inclusion() if case.kind == "inclusion" else world.consistency()
    data = case.make(world, genuine)
    assert data != file_bytes(genuine)
    with pytest.raises(ProofError) as caught:
        verify_bundle(data, world.signer.verifier(), origin=ORIGIN)
    assert caught.value.path == case.path, str(caught.value)
    assert isinstance(caught.value, InputError)
    assert str(caught.value).startswith(f"{case.path}: ")
    assert "\n" not in str(caught.value)


def test_a_consistent_rewrite_of_history_is_refused_by_a_reader_who_pinned_the_key(world: World) -> None:
    forged = rewritten_history(world.ledger)
    # The rewrite is internally perfect: without a trusted head the chain alone cannot tell.
    assert forged.verify() and len(forged) == len(world.ledger) and forged.head != world.ledger.head
    assert forged.entries[DISPROOF].receipt["reason"] == "no advisory was found"  # type: ignore[index]
    # The forger re-seals it with its own key, under the deployment's key name and origin.
    forged_tree = ledger_tree(forged)
    forged_checkpoint = checkpoint_for(forged, world.forger, ORIGIN, tree=forged_tree)
    forged_bundle = inclusion_bundle(forged, DISPROOF, forged_checkpoint, tree=forged_tree)
    # A reader holding no head, only the pinned public key, refuses both.
    with pytest.raises(ProofError) as caught:
        open_checkpoint(forged_checkpoint, world.signer.verifier(), origin=ORIGIN)
    assert caught.value.path == "checkpoint"
    with pytest.raises(ProofError) as caught:
        verify_bundle(file_bytes(forged_bundle), world.signer.verifier(), origin=ORIGIN)
    assert caught.value.path == "checkpoint"
    # The same bundle verifies for whoever pins the forger's key: the key is what is trusted.
    assert isinstance(verify_bundle(file_bytes(forged_bundle), world.forger.verifier()), ProvenInclusion)

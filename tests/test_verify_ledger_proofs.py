"""``tools/verify_ledger_proofs.py``: the stand-alone proof-bundle verifier, written from docs/formats/proofs-v1.md.

It runs on the transparency-dev/merkle vectors (valid and invalid), on the page's worked example, on
the demo's bundles and on every case of the tampering suite (``tests/proof_cases.py``), where it
must refuse at the same path as the reference; as a program it prints one line and sets its exit
status; and by AST it imports only the standard library, ``cryptography`` and its sibling verifier.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from proof_cases import CASES, DISPROOF, ORIGIN, Case, World, make_world, rewritten_history

from contextmesh.core.canonical import file_bytes
from contextmesh.core.errors import ProofError
from contextmesh.demo.execute import run_walkthrough
from contextmesh.formats.checkpoint import Checkpoint, sign_checkpoint
from contextmesh.formats.merkle import MerkleTree, leaf_hash
from contextmesh.formats.proofs import (
    checkpoint_for,
    consistency_bundle,
    entry_leaf_hash,
    inclusion_bundle,
    ledger_tree,
    verify_bundle,
)
from contextmesh.formats.run_ledger import RunLedger
from contextmesh.formats.signed_note import NoteSigner

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "verify_ledger_proofs.py"
PAGE = ROOT / "docs" / "formats" / "proofs-v1.md"
VECTORS = ROOT / "tests" / "data" / "merkle-vectors"


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verify_ledger_proofs", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


@pytest.fixture(scope="module")
def world() -> World:
    return make_world(run_walkthrough().runner.ledger)


def test_the_tool_imports_only_the_standard_library_cryptography_and_its_sibling() -> None:
    tree = ast.parse(TOOL.read_text(encoding="utf-8"))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").split(".")[0])
    foreign = {root for root in roots if root not in sys.stdlib_module_names}
    assert foreign == {"cryptography", "verify_runledger"}
    uses = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module.startswith("crypto")
    }
    assert uses == {"cryptography.exceptions", "cryptography.hazmat.primitives.asymmetric.ed25519"}


def _probes(kind: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (str(path.relative_to(VECTORS)), json.loads(path.read_text(encoding="utf-8")))
        for path in sorted((VECTORS / kind).rglob("*.json"))
    ]


def _b(text: str) -> bytes:
    return base64.b64decode(text)


@pytest.mark.parametrize(("name", "probe"), _probes("inclusion"), ids=[n for n, _ in _probes("inclusion")])
def test_the_tool_passes_the_inclusion_vectors(name: str, probe: dict[str, Any]) -> None:
    proof = [_b(item) for item in probe["proof"] or []]
    args = (probe["leafIdx"], probe["treeSize"], _b(probe["leafHash"]), proof, _b(probe["root"]), "audit_path")
    if probe["wantErr"]:
        with pytest.raises(tool.Refused):
            tool.verify_inclusion(*args)
    else:
        tool.verify_inclusion(*args)


@pytest.mark.parametrize(("name", "probe"), _probes("consistency"), ids=[n for n, _ in _probes("consistency")])
def test_the_tool_passes_the_consistency_vectors(name: str, probe: dict[str, Any]) -> None:
    proof = [_b(item) for item in probe["proof"] or []]
    args = (probe["size1"], probe["size2"], proof, _b(probe["root1"]), _b(probe["root2"]), "consistency_path")
    if probe["wantErr"]:
        with pytest.raises(tool.Refused):
            tool.verify_consistency(*args)
    else:
        tool.verify_consistency(*args)


def test_the_tool_verifies_every_proof_of_every_small_tree_and_refuses_each_one_flipped() -> None:
    # The vectors stop at eight leaves; this sweep reaches the shapes they do not (an old tree whose
    # right edge meets the new tree's below the root, 5 -> 6, 9 -> 12, …).
    tree = MerkleTree.of_leaves(leaf_hash(bytes([i])) for i in range(40))
    for size in range(1, 41):
        root = tree.root(size)
        for index in range(size):
            proof = tree.inclusion_proof(index, size)
            tool.verify_inclusion(index, size, tree.leaf(index), proof, root, "audit_path")
            if proof:
                proof[-1] = bytes([proof[-1][0] ^ 1]) + proof[-1][1:]
                with pytest.raises(tool.Refused):
                    tool.verify_inclusion(index, size, tree.leaf(index), proof, root, "audit_path")
        for old in range(1, size + 1):
            proof = tree.consistency_proof(old, size)
            tool.verify_consistency(old, size, proof, tree.root(old), root, "consistency_path")
            if proof:
                proof[0] = bytes([proof[0][0] ^ 1]) + proof[0][1:]
                with pytest.raises(tool.Refused):
                    tool.verify_consistency(old, size, proof, tree.root(old), root, "consistency_path")


def test_the_tool_verifies_the_demo_bundles(world: World) -> None:
    vkey = world.signer.verifier().vkey()
    line = tool.verify_bytes(file_bytes(world.inclusion()), [vkey], ORIGIN)
    root = world.tree.root().hex()
    assert line == f"ok inclusion of entries[{DISPROOF}] (disproved) in {ORIGIN} at size 29 root {root}"
    line = tool.verify_bytes(file_bytes(world.consistency()), [vkey])
    assert line == f"ok consistency of {ORIGIN} from size 20 to 29 root {world.tree.root().hex()}"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_tool_and_the_reference_refuse_every_tampered_bundle_at_the_same_path(case: Case, world: World) -> None:
    data = case.make(world, world.inclusion() if case.kind == "inclusion" else world.consistency())
    with pytest.raises(tool.Refused) as by_tool:
        tool.verify_bytes(data, [world.signer.verifier().vkey()], ORIGIN)
    with pytest.raises(ProofError) as by_reference:
        verify_bundle(data, world.signer.verifier(), origin=ORIGIN)
    assert by_tool.value.path == by_reference.value.path == case.path


def test_the_tool_refuses_a_consistently_rewritten_history_resealed_with_another_key(world: World) -> None:
    forged = rewritten_history(world.ledger)
    forged_tree = ledger_tree(forged)
    bundle = inclusion_bundle(forged, DISPROOF, checkpoint_for(forged, world.forger, ORIGIN, tree=forged_tree))
    with pytest.raises(tool.Refused) as caught:
        tool.verify_bytes(file_bytes(bundle), [world.signer.verifier().vkey()], ORIGIN)
    assert caught.value.path == "checkpoint"
    # …and a genuine old checkpoint against the forger's new one: refused at the new one's signatures.
    forged_new = checkpoint_for(forged, world.forger, ORIGIN, tree=forged_tree)
    crossed = consistency_bundle(world.ledger, world.old, world.new, tree=world.tree)
    crossed["new_checkpoint"] = forged_new
    with pytest.raises(tool.Refused) as caught:
        tool.verify_bytes(file_bytes(crossed), [world.signer.verifier().vkey()], ORIGIN)
    assert caught.value.path == "new_checkpoint"


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(TOOL), *map(str, args)]
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)


def test_as_a_program_it_prints_one_line_and_sets_its_status(world: World, tmp_path: Path) -> None:
    good = tmp_path / "receipt.proof.json"
    good.write_bytes(file_bytes(world.inclusion()))
    key_file = tmp_path / "deploy.vkey"
    key_file.write_text(world.signer.verifier().vkey() + "\n")
    done = _run(good, "--key-file", key_file, "--origin", ORIGIN)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"ok inclusion of entries[{DISPROOF}] (disproved)")
    bad = tmp_path / "tampered.proof.json"
    bad.write_bytes(CASES[0].make(world, world.inclusion()))
    done = _run(bad, "--key", world.signer.verifier().vkey())
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"{bad}: refused at entry.digest: ")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    done = _run(good)
    assert done.returncode == 2 and "pin at least one verifier key" in done.stderr
    done = _run(good, "--key", "not-a-key")
    assert done.returncode == 2 and "--key" in done.stderr and "Traceback" not in done.stderr


def test_the_pages_worked_example_is_what_the_code_computes() -> None:
    page = PAGE.read_text(encoding="utf-8")
    ledger_page = (ROOT / "docs" / "formats" / "runledger-v2.md").read_text(encoding="utf-8")
    example = ledger_page.split("This two-entry file")[1].split("```")[1]
    ledger = RunLedger.load("".join(example.split("\n")).encode() + b"\n")
    signer = NoteSigner("contextmesh.example/docs", Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
    assert signer.skey() in page and signer.verifier().vkey() in page
    tree = ledger_tree(ledger)
    for entry in ledger.entries:
        assert entry_leaf_hash(entry).hex() in page
    assert tree.root().hex() in page
    checkpoint = checkpoint_for(ledger, signer, ORIGIN, tree=tree)
    assert checkpoint in page
    bundle = file_bytes(inclusion_bundle(ledger, 1, checkpoint, tree=tree)).decode()
    wrapped = page.split("The inclusion bundle of the disproof")[1].split("```")[1]
    assert "".join(wrapped.split("\n")) == bundle.rstrip("\n")
    consistency = consistency_bundle(ledger, checkpoint_for(ledger, signer, ORIGIN, size=1, tree=tree), checkpoint)
    assert json.dumps(consistency["consistency_path"]) in page
    assert tool.verify_bytes(bundle.encode(), [signer.verifier().vkey()], ORIGIN).startswith("ok inclusion")


def test_a_receipt_in_a_100000_entry_ledger_is_proved_by_at_most_log2_n_plus_one_hashes(world: World) -> None:
    # The receipt sits at index 70,000 of a 100,000-leaf tree; the other leaves are synthetic. Both
    # verifiers get the bundle alone (a few kilobytes) and never the ledger.
    size, index = 100_000, 70_000
    entry = world.ledger.entries[DISPROOF].to_dict()
    entry["seq"] = index + 1
    entry["digest"] = hashlib.sha256(rfc8785.dumps({k: v for k, v in entry.items() if k != "digest"})).hexdigest()
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(size)]
    leaves[index] = entry_leaf_hash(entry)
    tree = MerkleTree.of_leaves(leaves)
    checkpoint = sign_checkpoint(Checkpoint(ORIGIN, tree.head()), world.signer)
    bundle = {
        "schema": "contextmesh.proof",
        "version": 1,
        "kind": "inclusion",
        "checkpoint": checkpoint,
        "leaf_index": index,
        "entry": entry,
        "audit_path": [base64.b64encode(node).decode() for node in tree.inclusion_proof(index)],
    }
    assert len(bundle["audit_path"]) <= math.ceil(math.log2(size)) + 1 == 18
    data = file_bytes(bundle)
    assert len(data) < 8_000
    assert tool.verify_bytes(data, [world.signer.verifier().vkey()], ORIGIN).startswith(
        "ok inclusion of entries[70000]"
    )
    assert verify_bundle(data, world.signer.verifier(), origin=ORIGIN).index == index

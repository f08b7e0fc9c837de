"""Merkle proofs over a run ledger: proof sizes, and the time to build, prove and verify, at 10³ to 10⁶ entries.

    .venv/bin/python bench/ledger_proofs.py [--sizes 1000 100000 1000000] [--samples 200]

The leaves are synthetic entries in the ledger's shape: each leaf's bytes are the RFC 8785 form of
an ``executed`` entry (written directly, so the figures are the tree's, not the canonicaliser's),
hashed as SHA-256(0x00 || bytes). For each size it prints the time to build the tree, the time to
append one more entry to a frontier and take the head (what sealing a generation costs per new
entry), and for ``--samples`` random leaves (and old sizes) the audit path's length against
⌈log₂ n⌉ + 1, the bundle bytes its hashes take, and the p50/p95 time to make and to verify each
proof with the library and with ``tools/verify_ledger_proofs.py``. Separately it measures what a real
ledger costs per entry: ``entry_leaf_hash`` over entries ``RunLedger.record`` wrote. Then the load
average: wall figures mean little when it exceeds the CPU count.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import random
import sys
import time
from pathlib import Path
from types import ModuleType

from _common import peak_rss_mb, percentile

from contextmesh.formats.merkle import Frontier, MerkleTree, leaf_hash, verify_consistency, verify_inclusion
from contextmesh.formats.proofs import entry_leaf_hash
from contextmesh.formats.run_ledger import RunLedger

TOOL = Path(__file__).resolve().parents[1] / "tools" / "verify_ledger_proofs.py"
HEX64 = "0" * 64


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verify_ledger_proofs", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def synthetic_leaf(seq: int) -> bytes:
    """The RFC 8785 bytes of an executed entry (keys sorted, no escapes needed)."""
    return (
        f'{{"decision_id":"decision:task-{seq}","detail":"output {seq:016x}","digest":"{HEX64}",'
        f'"event":"executed","key":"worker.v1","previous":"{HEX64}","receipt":null,"round":1,"run":null,'
        f'"seq":{seq},"task":"task-{seq % 50}"}}'
    ).encode()


def _ms(samples: list[float]) -> str:
    return f"{percentile(samples, 50) * 1e3:8.3f} / {percentile(samples, 95) * 1e3:8.3f}"


def bench_size(size: int, samples: int, tool: ModuleType, rng: random.Random) -> None:
    started = time.perf_counter()
    tree = MerkleTree.of_leaves(leaf_hash(synthetic_leaf(seq)) for seq in range(1, size + 1))
    built = time.perf_counter() - started
    started = time.perf_counter()
    root = tree.root()
    root_s = time.perf_counter() - started
    frontier = tree.frontier()
    started = time.perf_counter()
    frontier.append(leaf_hash(synthetic_leaf(size + 1)))
    frontier.head()
    append_s = time.perf_counter() - started
    bound = math.ceil(math.log2(size)) + 1
    prove, verify, verify_tool, lengths = [], [], [], []
    for index in (rng.randrange(size) for _ in range(samples)):
        t0 = time.perf_counter()
        proof = tree.inclusion_proof(index)
        t1 = time.perf_counter()
        verify_inclusion(index, size, tree.leaf(index), proof, root)
        t2 = time.perf_counter()
        tool.verify_inclusion(index, size, tree.leaf(index), proof, root, "audit_path")
        t3 = time.perf_counter()
        prove.append(t1 - t0)
        verify.append(t2 - t1)
        verify_tool.append(t3 - t2)
        lengths.append(len(proof))
    c_prove, c_verify, c_tool, c_lengths = [], [], [], []
    for old in (rng.randrange(1, size) for _ in range(samples)):
        old_root = tree.root(old)
        t0 = time.perf_counter()
        proof = tree.consistency_proof(old)
        t1 = time.perf_counter()
        verify_consistency(old, size, proof, old_root, root)
        t2 = time.perf_counter()
        tool.verify_consistency(old, size, proof, old_root, root, "consistency_path")
        t3 = time.perf_counter()
        c_prove.append(t1 - t0)
        c_verify.append(t2 - t1)
        c_tool.append(t3 - t2)
        c_lengths.append(len(proof))
    print(f"\n== {size:,} entries")
    rss = peak_rss_mb()
    print(
        f"build the tree               {built:10.2f} s   ({built / size * 1e6:.2f} µs an entry), peak RSS {rss:.0f} MB"
    )
    print(f"root of the whole tree       {root_s * 1e3:10.3f} ms")
    print(f"append one entry + new head  {append_s * 1e6:10.1f} µs   (a frontier of {len(frontier.peaks)} peaks)")
    mean = sum(lengths) / len(lengths)
    print(f"inclusion proof length       max {max(lengths)}, mean {mean:.1f}, bound ⌈log₂ n⌉+1 = {bound}")
    print(f"  in a bundle                at most {max(lengths) * 47} bytes of base64 hashes (44 characters and quotes)")
    print(f"  prove / verify / tool      p50 / p95 ms: {_ms(prove)} | {_ms(verify)} | {_ms(verify_tool)}")
    print(f"consistency proof length     max {max(c_lengths)}, mean {sum(c_lengths) / len(c_lengths):.1f}")
    print(f"  prove / verify / tool      p50 / p95 ms: {_ms(c_prove)} | {_ms(c_verify)} | {_ms(c_tool)}")


def bench_real_entries(count: int) -> None:
    ledger = RunLedger()
    for seq in range(count):
        ledger.record(
            "executed",
            round=1,
            task=f"task-{seq % 50}",
            decision_id=f"decision:task-{seq}",
            key="worker.v1",
            detail=f"output {seq:016x}",
        )
    entries = ledger.entries
    started = time.perf_counter()
    for entry in entries:
        entry_leaf_hash(entry)
    per_entry = (time.perf_counter() - started) / count
    frontier = Frontier()
    started = time.perf_counter()
    frontier.extend(entry_leaf_hash(entry) for entry in entries)
    print(f"\n== real entries ({count:,} written by RunLedger.record)")
    print(
        f"entry_leaf_hash              {per_entry * 1e6:10.1f} µs an entry (RFC 8785 of the whole entry, then SHA-256)"
    )
    print(f"frontier over the ledger     {(time.perf_counter() - started):10.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--real", type=int, default=10_000, help="entries of the real-ledger measurement")
    args = parser.parse_args()
    tool = _tool()
    rng = random.Random(23)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    for size in args.sizes:
        bench_size(size, args.samples, tool, rng)
    bench_real_entries(args.real)
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()

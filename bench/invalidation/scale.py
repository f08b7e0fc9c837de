"""Scale figures: blast radius at 10^4..10^6 nodes, the receipt at 10^6 and its independent check,
and the 5 %-stale resume of a 1,000-task plan against the full plan flow.

* **Blast radius** reuses ``bench/blast_radius.py``'s ``run_one`` unchanged: each size runs in its
  own process, so each peak RSS is that size's own.
* **The receipt** is measured in the same child process as that size's blast radius (one
  generation of the graph, not two): ``blast_radius.run_one`` runs with ``generate_graph`` and
  ``plant_closure`` wrapped so the graph it built is kept; then the planted assumption is rejected
  through submitted evidence the way the Plan rejects one (``Assumptions.reject``), the
  receipt and one ``invalidated`` entry per fallen node are written to a run ledger, and the file
  is checked by ``tools/verify_runledger.py`` (stdlib only, its own process, ``--expect-head``).
  Beyond 10,000 preserved ids the receipt carries a count and a SHA-256 instead of the list; the
  digest is recomputed here from the graph with ``hashlib`` and ``json`` alone.
* **The 5 %-stale resume** reuses ``bench/orchestration.py``'s ``on_session`` (its 1,000-task plan,
  20 ms workers, width 8): a full plan flow on a new session, then recheck flow → repair → resume
  flow over the stale ~5 %.

Run as ``python bench/invalidation/scale.py --receipt-child N`` it is that child process.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
VERIFIER = ROOT / "tools" / "verify_runledger.py"


def receipt_child(nodes: int, *, closure: int, reps: int, seed: int) -> dict[str, Any]:
    """Blast radius (``blast_radius.run_one``) and receipt figures at ``nodes``, from one child process."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--receipt-child",
        str(nodes),
        "--closure",
        str(closure),
        "--reps",
        str(reps),
        "--seed",
        str(seed),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the receipt child at {nodes} nodes failed: {done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["child_s"] = time.perf_counter() - start
    return figures


def _stdlib_digest(ids: list[str]) -> str:
    # RFC 8785 for a list of strings is compact JSON with only the mandatory escapes, which is what
    # json.dumps writes with ensure_ascii=False and no spaces.
    return hashlib.sha256(json.dumps(sorted(ids), ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def _in_child(nodes: int, closure_size: int, reps: int, seed: int) -> dict[str, Any]:
    sys.path.insert(0, str(BENCH))
    import blast_radius
    from _common import peak_rss_mb

    from contextmesh import testing
    from contextmesh.belief.assumptions import Assumptions
    from contextmesh.belief.evidence import submit
    from contextmesh.belief.invalidation import render_chain
    from contextmesh.core.canonical import canonical_bytes
    from contextmesh.formats.run_ledger import RunLedger

    kept: dict[str, Any] = {}
    real_generate, real_plant = testing.generate_graph, testing.plant_closure

    def generate(*args: Any, **kwargs: Any) -> Any:
        kept["graph"] = real_generate(*args, **kwargs)
        return kept["graph"]

    def plant(*args: Any, **kwargs: Any) -> Any:
        kept["assumption"] = real_plant(*args, **kwargs)
        return kept["assumption"]

    testing.generate_graph, testing.plant_closure = generate, plant  # type: ignore[assignment]
    figures = blast_radius.run_one(nodes, closure_size, reps, seed)
    graph, assumption_id = kept["graph"], kept["assumption"]
    source_id = next(n.id for n in graph.by_type("source"))
    evidence = submit(graph, "an observation contradicting the planted assumption", source_id).node.id
    start = time.perf_counter()
    report = Assumptions(graph).reject(assumption_id, evidence_id=evidence, created_by="bench")
    reject_s = time.perf_counter() - start
    receipt = {
        "ground": {"assumption_id": report.assumption_id, "statement": report.statement},
        "evidence_id": evidence,
        "auditor": "bench.audit.v1",
        "task": None,
        "reason": "planted closure at scale",
        **{k: v for k, v in report.to_dict().items() if k not in {"assumption_id", "statement", "evidence_id"}},
    }
    start = time.perf_counter()
    ledger = RunLedger()
    ledger.record("disproved", round=1, detail="planted closure at scale", receipt=receipt)
    for node_id, chain in report.invalidated.items():
        ledger.record("invalidated", round=1, decision_id=node_id, detail=render_chain(chain))
    data = ledger.dump()
    ledger_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory(prefix="cm-bench-receipt-") as tmp:
        path = Path(tmp) / "runledger.json"
        path.write_bytes(data)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(VERIFIER), str(path), "--expect-head", ledger.head],
            capture_output=True,
            text=True,
            check=False,
        )
        verify_s = time.perf_counter() - start
    start = time.perf_counter()
    preserved = [n.id for n in graph if n.live and n.id != assumption_id and n.id not in report.invalidated]
    digest_ok = _stdlib_digest(preserved) == receipt["preserved_digest"]
    digest_s = time.perf_counter() - start
    figures.update(
        {
            "receipt_bytes": len(canonical_bytes(receipt)),
            "receipt_preserved_inline": receipt["preserved"] is not None,
            "receipt_preserved_count": receipt["preserved_count"],
            "receipt_fallen": receipt["blast_radius"],
            "ledger_bytes": len(data),
            "ledger_entries": len(ledger),
            "reject_s": reject_s,
            "ledger_s": ledger_s,
            "verify_ok": done.returncode == 0,
            "verify_out": (done.stdout or done.stderr).strip(),
            "verify_s": verify_s,
            "digest_ok": digest_ok,
            "digest_s": digest_s,
            "peak_rss_mb": peak_rss_mb(),
        }
    )
    return figures


def stale_resume(api: str, workdir: Path, *, repeat: int, seed: int = 0) -> list[dict[str, Any]]:
    """``bench/orchestration.py``'s 5 %-stale resume against its full plan flow, ``repeat`` times."""
    sys.path.insert(0, str(BENCH))
    import orchestration
    from engine import closure_sizes, generate

    args = argparse.Namespace(tasks=1000, layers=20, assumptions=50, width=8, delay_ms=20, stale=0.05, seed=seed)
    specs = generate(args.tasks, args.layers, args.assumptions, args.seed)
    closures = closure_sizes(specs, args.assumptions)
    column = min(closures, key=lambda c: (abs(len(closures[c]) - args.stale * args.tasks), c))
    runs = []
    for rep in range(repeat):
        outcome = orchestration.on_session(args, specs, workdir / f"orch-{rep}", column, closures, api)
        outcome["stale"] = len(closures[column])
        outcome.pop("lags", None)
        outcome.pop("full_cpu", None)
        runs.append(outcome)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the receipt child process (see the module docstring)")
    parser.add_argument("--receipt-child", type=int, required=True)
    parser.add_argument("--closure", type=int, default=100)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(_in_child(args.receipt_child, args.closure, args.reps, args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

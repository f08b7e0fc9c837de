"""The one table ``bench/run_all.py`` prints: every figure, both contenders side by side.

Counts are exact (deterministic, checked identical in every repetition). Times are given for each
of the three runs, with the ContextMesh / plain ratio of each run, their median and their spread
(±half of max / min - 1), because the ratio, measured side by side in one run, is the figure that
should reproduce; absolute seconds depend on the machine and on its neighbours.
"""

from __future__ import annotations

import os
from statistics import median
from typing import Any

from invalidation.run import BenchResult, CaseResult


def _runs(values: list[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


def _spread(values: list[float]) -> str:
    return f"±{(max(values) / min(values) - 1) * 50:.0f}%" if values and min(values) > 0 else "-"


def _ratios(top: list[float], bottom: list[float]) -> list[float]:
    return [a / b for a, b in zip(top, bottom, strict=True)]


def _ratio_note(ratios: list[float]) -> str:
    return f"CM / plain {_runs(ratios)}, median {median(ratios):.2f} ({_spread(ratios)})"


def _counts(counts: dict[str, int]) -> str:
    return f"{counts['executed']} / {counts['stale']} / {counts['needless']}"


def _must(result: CaseResult) -> str:
    truth = result.truth
    parts = [f"{truth.count(c)} {c}" for c in ("direct", "indirect", "undeclared") if truth.count(c)]
    return f"must re-run {len(truth.must)}" + (f" ({', '.join(parts)})" if parts else "")


def invalidation_rows(bench: BenchResult) -> list[list[str]]:
    """Rows for the named cases, reason chains, the ledger and the first full run."""
    rows: list[list[str]] = []
    who = "client + server" if bench.settings.get("server_cpu") else "client"
    runs = bench.settings["repeat"]
    for result in bench.cases:
        mesh, plain = result.counts["ContextMesh"], result.counts["plain Prefect"]
        rows.append([f"{result.case.title}: exec / stale / needless", _counts(mesh), _counts(plain), _must(result)])
        walls_m, walls_p = result.walls["ContextMesh"], result.walls["plain Prefect"]
        ratios = _ratios(walls_m, walls_p)
        rows.append(
            [
                f"  rerun wall s ({runs} runs)",
                _runs(walls_m),
                _runs(walls_p),
                _ratio_note(ratios),
            ]
        )
        cpu_m, cpu_p = result.cpu["ContextMesh"], result.cpu["plain Prefect"]
        cpu_ratios = _ratios(cpu_m, cpu_p)
        rows.append(
            [
                f"  rerun CPU s, {who} ({runs} runs)",
                _runs(cpu_m),
                _runs(cpu_p),
                _ratio_note(cpu_ratios),
            ]
        )
        steps = {k: median(step[k] for step in result.mesh_steps) for k in ("evidence", "recheck", "repair", "resume")}
        rows.append(
            [
                "  CM steps, median s",
                " / ".join(f"{v:.2f}" for v in steps.values()),
                "-",
                f"evidence / recheck ({result.task_runs['ContextMesh']} task runs with the resume) / repair / resume; "
                f"{result.revalidated} revalidated by early cutoff",
            ]
        )
        if result.case.pending:
            rows.append(["  not measured yet", "-", "-", result.case.pending])
    total_fallen = sum(r.fallen for r in bench.cases)
    total_explained = sum(r.explained for r in bench.cases)
    rows.append(
        [
            "fallen tasks with a reason chain",
            f"{total_explained} / {total_fallen}",
            "none kept",
            "chain from the rejected assumption to the task, per receipt",
        ]
    )
    fact_fallen = sum(r.fact_fallen for r in bench.cases)
    if fact_fallen:
        rows.append(
            [
                "  fallen by a tracked read, chain through the fact",
                f"{sum(r.fact_explained for r in bench.cases)} / {fact_fallen}",
                "none kept",
                "fact_changed, then one invalidated entry per fallen task, at the resume's start",
            ]
        )
    receipts = sum(r.receipts for r in bench.cases)
    verified = all(r.ledger_ok for r in bench.cases)
    rows.append(
        [
            "run ledger with receipts verifies",
            f"{'yes' if verified else 'NO'} ({receipts} receipts, {len(bench.cases)} ledgers)",
            "no ledger",
            "tools/verify_runledger.py (stdlib) at the manifest's head",
        ]
    )
    if "load" in bench.settings:
        start, end = bench.settings["load"]
        rows.append(["load average (1 min), start / end", f"{start:.1f} / {end:.1f}", "-", f"{os.cpu_count()} CPUs"])
    full_m, full_p = bench.full["ContextMesh"], bench.full["plain Prefect"]
    rows.append(
        [
            f"first full run s ({runs} runs)",
            _runs(full_m),
            _runs(full_p),
            f"CM / plain {_runs(_ratios(full_m, full_p))}; plain writes {bench.settings['tasks']} cached results",
        ]
    )
    return rows


def resume_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    """Rows for the 5 %-stale resume of the 1,000-task plan."""
    if not runs:
        return []
    ratios = [r["resume_s"] / r["full_s"] for r in runs]
    totals = [(r["recheck_s"] + r["repair_s"] + r["resume_s"]) / r["full_s"] for r in runs]
    one = runs[0]
    return [
        [
            f"1,000-task plan, {one['stale'] / 10:.1f}% stale: resume / full",
            _runs(ratios),
            "-",
            f"full {_runs([r['full_s'] for r in runs])} s; resume ran {one['executed']} tasks ({_spread(ratios)})",
        ],
        [
            "  (recheck + repair + resume) / full",
            _runs(totals),
            "-",
            f"recheck {median(r['recheck_s'] for r in runs):.2f} s, repair {median(r['repair_s'] for r in runs):.2f} s"
            " (medians)",
        ],
    ]


def blast_rows(sizes: list[dict[str, Any]], skipped: list[str]) -> list[list[str]]:
    """Rows for blast radius at each size, and the receipt at the largest."""
    from _common import Timings

    rows: list[list[str]] = []
    for figures in sizes:
        closure = Timings(tuple(figures["closure_ms"]))
        rows.append(
            [
                f"blast radius at {figures['nodes']:,} nodes: closure p50 / p95 ms",
                f"{closure.p50:.3f} / {closure.p95:.3f}",
                "-",
                f"{figures['fallen']} fall; peak RSS {figures['peak_rss_mb']:,.0f} MiB; generated in "
                f"{figures['generate_s']:.0f} s",
            ]
        )
        if "receipt_bytes" in figures:
            rows.append(
                [
                    f"  receipt at {figures['nodes']:,} nodes: bytes / verify s",
                    f"{figures['receipt_bytes']:,} / {figures['verify_s']:.2f}",
                    "-",
                    f"{figures['receipt_preserved_count']:,} preserved as count + SHA-256 "
                    f"(digest recomputed: {'ok' if figures['digest_ok'] else 'MISMATCH'}); ledger of "
                    f"{figures['ledger_entries']} entries, {figures['ledger_bytes']:,} bytes, verifier: "
                    f"{'ok' if figures['verify_ok'] else 'FAILED'}",
                ]
            )
    for line in skipped:
        rows.append(["blast radius", "not measured", "-", line])
    return rows

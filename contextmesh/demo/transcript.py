"""The execute walk-through as the seed's transcript: PLAN, rounds, THE GROUND MOVED, ARTEFACTS, LEDGER.

A round's own lines come from the command line's renderer, handed in (``round_text``), so the
demo's rounds read exactly as ``contextmesh run`` prints a round of any project.
"""

from __future__ import annotations

from collections.abc import Callable

from contextmesh import RoundReport
from contextmesh.demo.execute import Walkthrough, produced

__all__ = ["render_walkthrough"]

RoundText = Callable[..., str]  # render_round(report, url=...)


def _ground_moved(walk: Walkthrough, urls: dict[int, str]) -> list[str]:
    runner = walk.runner
    lines = ["THE GROUND MOVED · discovered by an auditor, not announced"]
    if walk.recheck.round in urls:
        lines.append(f"  flow run: {urls[walk.recheck.round]}")
    for report in walk.recheck.invalidations:
        receipt = next(r for r in runner.ledger.receipts() if r["ground"]["assumption_id"] == report.assumption_id)
        lines.append(f"  {receipt['task']}: {receipt['reason']}")
        lines.append(f"  rejected: {report.statement}")
        lines.append(f"  blast radius {report.blast_radius}, preserved {report.preserved_count}")
    if not walk.recheck.invalidations:
        lines.append("  (nothing moved: every auditor found its ground standing)")
    return lines


def _ledger(walk: Walkthrough) -> list[str]:
    ledger = walk.runner.ledger
    lines = [f"LEDGER {len(ledger)} entries · head {ledger.head[:16]}… · chain intact: {ledger.verify()}"]
    lines.append("RECEIPT read back off the ledger alone")
    for receipt in ledger.receipts():
        lines.append(f"  ground: {receipt['ground']['statement']}")
        lines.append(f"  evidence: {receipt['evidence_id']}")
        lines.append(f"  auditor: {receipt['auditor']}")
        lines.append(f"  fallen ({receipt['blast_radius']}):")
        lines += [f"    ✗ {item['chain']}" for item in receipt["invalidated"]]
        lines.append(f"  preserved: {receipt['preserved_count']} (digest {receipt['preserved_digest'][:16]}…)")
    return lines


def render_walkthrough(walk: Walkthrough, round_text: RoundText, *, urls: dict[int, str] | None = None) -> str:
    """The seed's transcript: PLAN, rounds, THE GROUND MOVED, ARTEFACTS, lineage, LEDGER, RECEIPT."""
    runner = walk.runner
    urls = urls or {}
    lines = [f"PLAN {runner.name} · {len(runner.tasks)} tasks"]
    for task in walk.declared:
        needs = f" (needs {', '.join(task['needs'])})" if task["needs"] else ""
        lines.append(f"  {task['name']:<11} {task['worker_key'] or '-':<24} assumes: {task['assumes']}{needs}")

    def one(report: RoundReport) -> str:
        return str(round_text(report, url=urls.get(report.round)))

    lines += ["", one(walk.first), "", *_ground_moved(walk, urls)]
    hashing = runner.tasks["hashing"]
    lines += ["", f"REPAIR hashing → {hashing.worker_key} on new ground: {hashing.assumes}", ""]
    lines += [one(walk.third), ""]
    artefacts = produced(runner.graph)
    lines.append("ARTEFACTS")
    lines.append("  live: " + ", ".join(n.label for n in artefacts if n.live))
    lines.append("  gone: " + (", ".join(n.label for n in artefacts if not n.live) or "none"))
    lines.append("ASSUMPTION LINEAGE")
    lines += [f"  v{r['version']} [{r['status']}] {r['statement']}" for r in walk.lineage]
    return "\n".join([*lines, *_ledger(walk)])

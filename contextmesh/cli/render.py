"""Text renderings of engine results for the command line (``--json`` prints the data instead).

Pure functions from result objects to strings; nothing here computes a figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.invalidation import InvalidationReport
from contextmesh.belief.temporal import AsOf
from contextmesh.execution.plan import RecheckReport, RoundReport
from contextmesh.knowledge.health import HealthReport
from contextmesh.knowledge.pipeline import BuildReport
from contextmesh.knowledge.traverse import Walk

__all__ = [
    "render_as_of",
    "render_build",
    "render_commit",
    "render_health",
    "render_invalidation",
    "render_lineage",
    "render_recheck",
    "render_round",
    "render_round_rows",
    "render_session",
    "render_walk",
]


def _hops(n: int) -> str:
    return f"{n} hop" if n == 1 else f"{n} hops"


def render_walk(walk: Walk) -> str:
    """``Q:`` / ``A:``, the cost line, the path, the justification and any live contradiction — or the dead end."""
    lines = [f"Q: {walk.question}"]
    if walk.dead_end is not None:
        lines += [f"A: dead end — {walk.dead_end.reason}", walk.dead_end.detail]
        return "\n".join(lines)
    lines.append(f"A: {walk.answer}")
    lines.append(
        f"({_hops(walk.hops)}, score {walk.score:.2f}, {walk.tokens:,} tokens against {walk.flat_tokens:,} flat)"
    )
    lines += [step.render() for step in walk.path]
    if walk.justification:
        lines.append("justified by:")
        lines += ["  " + step.render() for step in walk.justification]
    if walk.notes:
        lines.append("note:")
        lines += [f"  {note}" for note in walk.notes]
    return "\n".join(lines)


def render_build(report: BuildReport) -> str:
    """The six stages with what each admitted and dropped."""
    lines = ["BUILD  stage    admitted  dropped  detail"]
    for stage in report.stages:
        detail = ", ".join(f"{k} {v}" for k, v in stage.detail.items())
        lines.append(f"       {stage.name:<8} {stage.admitted:>8}  {stage.dropped:>7}  {detail}")
    return "\n".join(lines)


def render_invalidation(report: InvalidationReport, *, dry_run: bool = False) -> str:
    """``INVALIDATED (n)`` with a ``because:`` chain per node, then ``PRESERVED (m)``."""
    verb = "would reject" if dry_run else "rejected assumption"
    lines = [f"{verb}: {report.statement}"]
    if report.evidence_id:
        lines.append(f"through evidence: {report.evidence_id}")
    lines.append(f"{'WOULD INVALIDATE' if dry_run else 'INVALIDATED'} ({report.blast_radius})")
    for node_id in report.invalidated:
        chain = report.invalidated[node_id]
        lines.append(f"  ✗ {chain[-1]}")
        lines.append(f"      because: {report.why(node_id)}")
    lines.append(f"PRESERVED ({report.preserved_count}) — untouched by the rejection")
    return "\n".join(lines)


def render_lineage(ledger: Assumptions, assumption_id: str) -> str:
    """``ASSUMPTION LINEAGE``: oldest first, each with version and status."""
    lines = ["ASSUMPTION LINEAGE"]
    for record in ledger.lineage(assumption_id):
        lines.append(f"  v{record.version} [{record.status}] {record.statement}")
    return "\n".join(lines)


def render_health(report: HealthReport, *, only: Sequence[str] = ()) -> str:
    """Status, size, then one line per signal with its remedy when it fired."""
    lines = [
        f"HEALTH {report.status.upper()} · {report.nodes_live} of {report.nodes_total} nodes live · "
        f"{report.edges_live} live edges · {report.edge_types_used} of 10 edge types in use"
    ]
    for signal in report.signals:
        if only and signal.kind not in only:
            continue
        mark = "✓" if not signal.count else ("✗" if signal.severity == "error" else "!")
        lines.append(f"  {mark} {signal.kind:<22} {signal.count:>5}  {signal.detail}")
        if signal.count and signal.severity != "info":
            lines.append(f"      remedy: {signal.remedy}")
    return "\n".join(lines)


def render_as_of(answer: AsOf) -> str:
    """The walk, preceded by what the graph held on that date."""
    head = (
        f"AS OF {answer.as_of} · {answer.counts.get('known', 0)} nodes known then, "
        f"{answer.counts.get('later', 0)} learned later (hidden), {answer.counts.get('undated', 0)} undated"
    )
    return head + "\n" + render_walk(answer.walk)


def render_round(report: RoundReport, *, url: str | None = None, rows: list[dict[str, str]] | None = None) -> str:
    """``ROUND n · e executed, c cached`` with its layers, cached, blocked and failed tasks.

    Given ``rows`` (:func:`contextmesh.execution.run_reasons.round_rows`: every task, its outcome and
    why), the header counts the blocked too and each task gets a line with its reason instead.
    """
    head = f"ROUND {report.round} · {len(report.executed)} executed, {len(report.cached)} cached"
    if rows is not None:
        head += f", {len(report.blocked)} blocked" + (f", {len(report.failed)} failed" if report.failed else "")
    lines = [head]
    if url:
        lines.append(f"  flow run: {url}")
    lines += [f"  layer {i}: {', '.join(layer)}" for i, layer in enumerate(report.layers, start=1)]
    if rows is not None:
        return "\n".join([*lines, *render_round_rows(rows)])
    lines += [f"  cached {name} — untouched, previous result stands" for name in report.cached]
    lines += [f"  blocked {name} — {reason}" for name, reason in report.blocked.items()]
    lines += [f"  failed {name} — {reason}" for name, reason in report.failed.items()]
    return "\n".join(lines)


def render_round_rows(rows: list[dict[str, str]]) -> list[str]:
    """One line per task: its outcome, its name and why (``not run this round`` when nothing says)."""
    width = max((len(row["task"]) for row in rows), default=0)
    return [f"  {row['outcome']:<8} {row['task']:<{width}} — {row['reason'] or 'not run this round'}" for row in rows]


def render_recheck(report: RecheckReport, *, url: str | None = None, reasons: dict[str, str] | None = None) -> str:
    """``RECHECK round n · a audited`` with each disproof (the auditor's reason, what fell and why)."""
    reasons = reasons or {}
    lines = [f"RECHECK round {report.round} · {len(report.audited)} audited: {', '.join(report.audited) or 'nothing'}"]
    if url:
        lines.append(f"  flow run: {url}")
    if report.skipped:  # ADR 0019: nothing they watch changed; --full runs them too
        lines.append(f"  skipped {len(report.skipped)}, nothing they watch changed: {', '.join(report.skipped)}")
    for fallen in report.invalidations:
        lines.append(f"  DISPROVED {fallen.statement}")
        if fallen.assumption_id in reasons:
            lines.append(f"    auditor: {reasons[fallen.assumption_id]}")
        if fallen.evidence_id:
            lines.append(f"    evidence: {fallen.evidence_id}")
        lines.append(f"    INVALIDATED ({fallen.blast_radius}), PRESERVED ({fallen.preserved_count})")
        lines += [f"      ✗ {fallen.why(node_id)}" for node_id in fallen.invalidated]
    if report.stale:
        lines.append(f"  now stale, waiting for repair or resume: {', '.join(report.stale)}")
    elif not report.invalidations:
        lines.append("  every ground audited still holds")
    lines += [f"  failed {name} — {reason}" for name, reason in report.failed.items()]
    lines += [f"  audit error {name} — {reason}" for name, reason in report.audit_errors.items()]
    return "\n".join(lines)


def render_commit(generation: int, outcome: str, reason: str | None) -> str:
    """The line after a session ask: the generation it committed, or that its commit was skipped or failed, and why."""
    if outcome == "committed":
        return f"(session generation {generation}: committed)"
    return (
        f"(session generation {generation}: commit {outcome} — {reason}; what this ask taught the graph "
        "(its walk telemetry) was not saved)"
    )


def render_session(data: dict[str, Any]) -> str:
    """``session show``: what the newest generation holds, and this process's commit counters."""
    lines = [f"SESSION {data['directory']} · id {data['session_id']} · generation {data['generation']}"]
    lines.append(f"  nodes {data['nodes_live']} live of {data['nodes_total']} · edges {data['edges_live']} live")
    lines.append(f"  walk rounds {data['rounds']} · walker {data['walker']}")
    if data["plan"]:
        lines.append(f"  plan {data['plan']['name']} round {data['plan']['round']}: {data['plan']['states']}")
        lines.append(
            f"  ledger {data['ledger']['entries']} entries · head {data['ledger']['head'][:16]}… · "
            f"chain intact: {data['ledger']['verified']}"
        )
    counts = data["checkpoints"]
    lines.append(
        f"  commits: generation {data['generation']} on disk (each generation is one commit that landed); "
        f"{counts['scope']}: {counts['commits']} committed, {counts['skipped']} skipped ({counts['contended']} "
        f"lock held, {counts['conflicts']} moved on), {counts['failed']} failed, {counts['pending']} pending"
    )
    lines.append(
        "  (a skipped commit cannot record itself on disk: the command that skipped says so — `ask` prints "
        "'commit skipped' and why, and --json carries committed: false)"
    )
    return "\n".join(lines)

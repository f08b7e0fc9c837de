"""Why a round ran what it ran, and one-line accounts of a round and a recheck, read off the ledger.

A round's report says *what* happened (executed, cached, blocked, failed); the run ledger says
*why*: the entries a task gathered before the round — the disproof that took its ground or its
decision down, the repair that put it on new ground, the failure it is retried after. These
functions read both and say it in words a person reads on a Prefect run page, in a round's table
artifact or on the command line. They only read: nothing here writes the ledger or the graph.

A task's reason is its newest explaining entry before the round (entries of earlier rounds, and
the repairs recorded since the last one, which carry the previous round's number):

* ``repaired`` — ``repaired onto <key>: now assumes '…' (replaces '…')``;
* ``invalidated`` (its decision fell with a disproof) — ``'<statement>' was disproved (evidence
  <id>): <chain>``;
* ``disproved`` (its own ground) — ``its ground '<statement>' was disproved (evidence <id>): <reason>``;
* ``failed`` — ``retry after failure: <detail>``;
* ``requested`` — ``rerun from <task>, asked by <who>`` (``contextmesh rerun-from``);
* an ``executed`` entry and nothing after it — ``input changed``;
* ``invalidated`` after a ``fact_changed`` entry (a fact it read through its context changed, noticed
  at the start of this very round, so these entries count although they carry its number) —
  ``a fact it read changed: <chain>``;
* nothing at all — ``first run``.

A task that did not run has a reason too (:func:`cached_reason`): ``untouched, its previous result
stands``, or — revalidated by early cutoff (ADR 0018) — the ``revalidated`` entry's words
(``output unchanged: <need> now <16 hex>, was <16 hex>; …``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from contextmesh.execution.reports import RecheckReport, RoundReport
from contextmesh.formats.run_ledger import LedgerEntry

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = [
    "UNTOUCHED",
    "Disproof",
    "Reason",
    "cached_reason",
    "disproofs_in",
    "reason_for",
    "recheck_message",
    "repair_message",
    "round_message",
    "round_rows",
    "round_story",
]

ReasonKind = Literal["first run", "repaired", "disproved", "failed", "input changed", "fact changed", "requested"]
_EXPLAINING = frozenset({"executed", "repaired", "invalidated", "disproved", "failed", "requested"})
# What a round writes before it runs anything: the facts it found changed and what fell with them.
_PROLOGUE = frozenset({"fact_changed", "invalidated"})
UNTOUCHED = "untouched, its previous result stands"
MESSAGE_LIMIT = 1500  # a state message is read on one screen; the table artifact holds every row
_LISTED = 8


@dataclass(frozen=True)
class Disproof:
    """A committed disproof, as its ``disproved`` ledger entry records it."""

    statement: str
    evidence_id: str
    auditor: str | None
    task: str
    reason: str
    round: int
    flow_run_id: str | None

    @classmethod
    def of(cls, entry: LedgerEntry) -> Disproof:
        """The disproof a ``disproved`` entry carries (its receipt)."""
        receipt = entry.receipt or {}
        ground = receipt.get("ground", {})
        run = entry.run or {}
        return cls(
            statement=str(ground.get("statement", "")),
            evidence_id=str(receipt.get("evidence_id", "")),
            auditor=entry.key,
            task=str(entry.task or ""),
            reason=entry.detail,
            round=entry.round,
            flow_run_id=run.get("flow_run_id"),
        )

    def said(self) -> str:
        """``'<statement>' was disproved (evidence <id>)``."""
        return f"'{self.statement}' was disproved (evidence {self.evidence_id})"


@dataclass(frozen=True)
class Reason:
    """Why a task ran in a round: its kind, the words, and the disproof behind it (if one is)."""

    kind: ReasonKind
    text: str
    disproof: Disproof | None = None
    key: str | None = None


def _cause_before(entries: tuple[LedgerEntry, ...], index: int) -> LedgerEntry | None:
    """The ``disproved`` or ``fact_changed`` entry an ``invalidated`` entry at ``index`` follows
    (the nearest one of its round)."""
    round_ = entries[index].round
    for entry in reversed(entries[:index]):
        if entry.round != round_:
            return None
        if entry.event in {"disproved", "fact_changed"}:
            return entry
    return None


def _disproof_before(entries: tuple[LedgerEntry, ...], index: int) -> Disproof | None:
    """The disproof an ``invalidated`` entry at ``index`` follows (the nearest one of its round)."""
    cause = _cause_before(entries, index)
    return Disproof.of(cause) if cause is not None and cause.event == "disproved" else None


def _prologue_end(entries: tuple[LedgerEntry, ...], round_: int) -> int:
    """The index after round ``round_``'s prologue (its ``fact_changed`` and ``invalidated`` entries
    written before it ran anything), or 0 when the ledger holds nothing of that round yet."""
    start = next((i for i in range(len(entries) - 1, -1, -1) if entries[i].round < round_), -1) + 1
    end = start
    while end < len(entries) and entries[end].round == round_ and entries[end].event in _PROLOGUE:
        end += 1
    return end if end > start and entries[start].round == round_ else 0


def reason_for(plan: Plan, task: str, round_: int) -> Reason:
    """Why ``task`` ran in round ``round_`` of ``plan``, read off the entries recorded before it."""
    entries = plan.ledger.entries
    prologue = _prologue_end(entries, round_)
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        earlier = entry.round < round_ or (entry.round == round_ and index < prologue)
        if entry.task != task or not earlier or entry.event not in _EXPLAINING:
            continue
        if entry.event == "repaired":
            return Reason("repaired", f"repaired onto {entry.key}: {entry.detail}", key=entry.key)
        if entry.event == "invalidated":
            cause = _cause_before(entries, index)
            if cause is not None and cause.event == "fact_changed":
                return Reason("fact changed", f"a fact it read changed: {entry.detail}")
            disproof = _disproof_before(entries, index)
            said = disproof.said() if disproof else "its ground was disproved"
            return Reason("disproved", f"{said}: {entry.detail}", disproof)
        if entry.event == "disproved":
            disproof = Disproof.of(entry)
            return Reason("disproved", f"its ground {disproof.said()}: {disproof.reason}", disproof)
        if entry.event == "failed":
            return Reason("failed", f"retry after failure: {entry.detail}")
        if entry.event == "requested":  # rerun-from (ADR 0019 §7): who asked, from which task
            return Reason("requested", entry.detail)
        return Reason("input changed", "input changed")
    return Reason("first run", "first run")


def round_story(plan: Plan, report: RoundReport) -> dict[str, Reason]:
    """The reason of every task that ran in ``report``'s round (executed, failed or gone stale)."""
    ran = [*report.executed, *report.failed, *(t for t in report.stale if t in report.runs)]
    return {name: reason_for(plan, name, report.round) for name in plan.tasks if name in ran}


def round_rows(plan: Plan, report: RoundReport) -> list[dict[str, str]]:
    """One row per task of the plan, in declaration order: ``task``, ``outcome`` and ``reason``."""
    reasons = round_story(plan, report)
    rows = []
    for name, task in plan.tasks.items():
        if name in report.blocked:
            outcome, reason = "blocked", report.blocked[name]
        elif name in report.failed:
            outcome, reason = "failed", f"{report.failed[name]} (ran because: {reasons[name].text})"
        elif name in report.executed:
            outcome, reason = "executed", reasons[name].text
        elif name in report.stale:
            outcome, reason = "stale", task.error or "its ground fell this round"
        elif name in report.cached:
            found = report.revalidated.get(name)
            outcome, reason = "cached", UNTOUCHED if found is None else f"revalidated — {found}"
        else:
            outcome, reason = task.state.value, ""
        rows.append({"task": name, "outcome": outcome, "reason": reason})
    return rows


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_LISTED])
    return shown + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")


def _short(reason: str) -> str:
    """A blocked reason without its remedy (the table keeps the whole sentence)."""
    return reason.split(";", 1)[0]


def _clip(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


def _unique(found: list[Disproof]) -> list[Disproof]:
    seen: dict[tuple[str, str], Disproof] = {}
    for disproof in found:
        seen.setdefault((disproof.statement, disproof.evidence_id), disproof)
    return list(seen.values())


def round_message(plan: Plan, report: RoundReport, mode: str) -> str:
    """A round in one paragraph: what waits and why, what ran and why, what stayed cached."""
    reasons = round_story(plan, report)
    parts = []
    if report.blocked:
        waiting = [f"{name} ({_short(reason)})" for name, reason in report.blocked.items()]
        parts.append(f"{len(waiting)} task(s) wait for repair: {_names(waiting)}")
    executed = report.executed
    if executed:
        fresh = all(reasons[name].kind == "first run" for name in executed)
        text = f"{'ran' if fresh else 're-ran'} {_names(executed)}"
        behind = _unique([r.disproof for name, r in reasons.items() if name in executed and r.disproof])
        if behind:
            text += " after " + " and ".join(d.said() for d in behind)
        repaired = [f"{name} repaired onto {r.key}" for name, r in reasons.items() if name in executed and r.key]
        parts.append(text + (f" ({', '.join(repaired)})" if repaired else ""))
    else:
        parts.append("ran nothing")
    for disproof in disproofs_in(plan, report.round):
        parts.append(f"its audit of {disproof.task} found {disproof.said()}: {disproof.reason}")
    if report.failed:
        parts.append("failed: " + _names([f"{name} ({reason})" for name, reason in report.failed.items()]))
    stale = [name for name in report.stale if name not in report.failed]
    if stale:
        parts.append(f"went stale before committing: {_names(stale)}")
    if report.revalidated:
        parts.append(f"revalidated {_names(list(report.revalidated))} (what they read is unchanged)")
    parts.append(f"{_names(report.cached)} cached" if report.cached else "nothing cached")
    return _clip(f"round {report.round} ({mode}): " + "; ".join(parts))


def cached_reason(plan: Plan, task: str) -> str:
    """Why ``task``'s previous result stands after the plan's latest round: the words of its
    ``revalidated`` entry of that round (early cutoff), else ``untouched, its previous result stands``."""
    for entry in reversed(plan.ledger.entries):
        if entry.round != plan.round:
            break
        if entry.task == task and entry.event == "revalidated":
            return f"revalidated — {entry.detail}"
    return UNTOUCHED


def disproofs_in(plan: Plan, round_: int) -> list[Disproof]:
    """The disproofs committed in round ``round_`` (a recheck's, or a round's own audits')."""
    return [Disproof.of(e) for e in plan.ledger.entries if e.event == "disproved" and e.round == round_]


def recheck_message(plan: Plan, report: RecheckReport) -> str:
    """A recheck in one paragraph: what it disproved and what fell, or that every ground stands."""
    parts = []
    for disproof in disproofs_in(plan, report.round):
        parts.append(
            f"disproved '{disproof.statement}' (evidence {disproof.evidence_id}, auditor {disproof.auditor} on "
            f"{disproof.task}): {disproof.reason}"
        )
    if report.stale:
        parts.append(f"{len(report.stale)} task(s) stale: {_names(report.stale)}")
    if report.failed:
        parts.append("audit failed: " + _names([f"{name} ({reason})" for name, reason in report.failed.items()]))
    if report.audit_errors:
        parts.append("auditor raised: " + _names([f"{n} ({r})" for n, r in report.audit_errors.items()]))
    if not parts:
        audited = _names(report.audited) if report.audited else "no task (none has a standing auditor)"
        parts.append(f"audited {audited}; every ground stands")
    return _clip(f"recheck round {report.round}: " + "; ".join(parts))


def repair_message(plan: Plan, task: str) -> str:
    """A committed repair in one line, and the next step: repair what else waits, or resume."""
    from contextmesh.execution.task import ground_stands  # noqa: PLC0415 - the task table, only here

    repaired = plan.tasks[task]
    detail = next(
        (e.detail for e in reversed(plan.ledger.entries) if e.event == "repaired" and e.task == task),
        f"now assumes '{repaired.assumes}'",
    )
    text = f"repaired {task} onto {repaired.worker_key or 'its callable'}: {detail}"
    fallen = [t.name for t in plan.tasks.values() if t.name != task and not ground_stands(plan.graph, t)]
    if fallen:
        return f"{text}; next: repair {_names(fallen)} too (their ground fell), then resume"
    todo = [name for name, state in plan.states().items() if state != "done"]
    return f"{text}; next: resume — it runs {_names(todo) or 'nothing'}"

"""What an auditor watches, read in one step, and the marks that let a recheck skip it (ADR 0019).

An auditor registered with ``watches=fingerprint`` and/or ``reads=("kind", …)`` declares the slice
of the world it reads. :func:`read_slices` reads every such auditor's slice in one pass — each
fingerprint once, the evidence grouped by kind once — and a **mark** (:class:`WatchMark`) pins what
an ``ok`` verdict saw: the task's decision, the fingerprint's digest and the digest of the ids of
the evidence it reads. :func:`select` then sorts a recheck's standing tasks into those whose
auditor must run (and why) and those skipped because nothing they watch changed.

Invariants (``tests/execution/test_watch.py``):

1. A fingerprint is read before the audit it vouches for, so a change during an audit shows next time.
2. A mark is void unless it names the task's current decision: a new output is always audited.
3. An auditor that declares nothing always runs; so does every auditor of a full recheck.
4. A fingerprint that raises or is not text refuses a recheck (``strict``) before anything changes;
   in a round it only leaves the task without a mark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contextmesh.core.canonical import digest, sha256_hex
from contextmesh.core.errors import ExecutionError, SnapshotError
from contextmesh.execution.context import EvidenceView
from contextmesh.execution.task import Task, TaskState
from contextmesh.formats.records import exact_keys, expect_dict

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan

__all__ = [
    "FIRST_LOOK",
    "FULL",
    "NEW_EVIDENCE",
    "NOTHING_DECLARED",
    "SLICE_CHANGED",
    "UNCHANGED",
    "Reading",
    "Selection",
    "WatchContext",
    "WatchError",
    "WatchMark",
    "keep_marks",
    "marks_data",
    "read_slices",
    "record_selection",
    "restore_marks",
    "select",
]

FIRST_LOOK = "first look"
SLICE_CHANGED = "watched slice changed"
NEW_EVIDENCE = "new evidence"
NOTHING_DECLARED = "declares nothing"
FULL = "full recheck"
UNCHANGED = "unchanged"
_WHY_ORDER = (FIRST_LOOK, SLICE_CHANGED, NEW_EVIDENCE, NOTHING_DECLARED, FULL)


class WatchError(ExecutionError):
    """An auditor's fingerprint function raised or returned something other than text."""

    def __init__(self, path: str, found: str, rule: str) -> None:
        self.path = path
        self.found = found
        self.rule = rule
        super().__init__(f"{path}: {found}; {rule}")


@dataclass(frozen=True)
class WatchContext:
    """What a fingerprint function is told: which task's auditor, the ground it judges, and the
    submitted evidence its auditor would be shown (the same copies). No output.

    ``evidence`` lets an auditor that reads only the observations *about its ground* fingerprint
    exactly those, so evidence about something else does not make it run (``reads=`` kinds cannot
    say that: any new evidence of a kind wakes every auditor reading the kind).
    """

    plan: str
    task: str
    worker_key: str | None
    auditor_key: str
    assumption: str
    evidence: tuple[EvidenceView, ...] = ()


@dataclass(frozen=True)
class WatchMark:
    """An ``ok`` verdict's pin: the decision judged, and digests of the slice and evidence it saw."""

    decision_id: str
    fingerprint: str | None
    evidence: str | None

    def to_dict(self) -> dict[str, str | None]:
        """Plain data, as the execution snapshot stores it."""
        return {"decision_id": self.decision_id, "evidence": self.evidence, "fingerprint": self.fingerprint}


@dataclass(frozen=True)
class Reading:
    """One auditor's slice as read now: the digests a mark would pin (None for what it does not declare)."""

    fingerprint: str | None
    evidence: str | None

    def mark(self, decision_id: str) -> WatchMark:
        """This reading pinned to ``decision_id``."""
        return WatchMark(decision_id, self.fingerprint, self.evidence)


@dataclass
class Selection:
    """A recheck's sorting: the tasks whose auditors run, why each runs, and the names skipped."""

    run: list[Task]
    why: dict[str, str]
    skipped: list[str]


def _fingerprint(plan: Plan, task: Task, fn: object, evidence: tuple[EvidenceView, ...]) -> str:
    assert callable(fn) and task.auditor_key is not None
    where = f"auditor '{task.auditor_key}' of task '{task.name}'"
    context = WatchContext(plan.name, task.name, task.worker_key, task.auditor_key, task.assumes, evidence)
    try:
        found = fn(context)
    except Exception as exc:  # user code: any failure is this one refusal, never a traceback
        raise WatchError(
            where, f"its fingerprint function raised {type(exc).__name__}: {exc}", "a fingerprint function returns text"
        ) from None
    if type(found) is not str:
        shown = repr(found)
        shown = shown if len(shown) <= 80 else f"{shown[:77]}..."
        raise WatchError(
            where, f"its fingerprint function returned {type(found).__name__} {shown}", "a fingerprint is text (str)"
        )
    return sha256_hex(found.encode("utf-8", "surrogatepass"))


def read_slices(
    plan: Plan, tasks: Iterable[Task], evidence: tuple[EvidenceView, ...], *, strict: bool
) -> dict[str, Reading]:
    """Every declaring auditor's slice of ``tasks``, read now in one pass; non-declaring ones are absent.

    ``strict`` (a recheck) raises :class:`WatchError` on a bad fingerprint; otherwise (a round) that
    task is left out, so it gets no mark.
    """
    registry = plan.registry
    if registry is None:
        return {}
    by_kind: dict[str, list[str]] = {}
    for view in evidence:
        kind = view.metadata.get("kind")
        if isinstance(kind, str):
            by_kind.setdefault(kind, []).append(view.id)
    seen: dict[tuple[str, ...], str] = {}  # many auditors read the same kinds: one digest per set of kinds
    readings: dict[str, Reading] = {}
    for task in tasks:
        if task.audit is not None or task.auditor_key is None or not registry.has_auditor(task.auditor_key):
            continue
        registration = registry.lookup_auditor(task.auditor_key)
        if not registration.declares:
            continue
        try:
            fingerprint = (
                None if registration.watches is None else _fingerprint(plan, task, registration.watches, evidence)
            )
        except WatchError:
            if strict:
                raise
            continue
        evidence_digest = None
        if registration.reads:
            evidence_digest = seen.get(registration.reads)
            if evidence_digest is None:
                evidence_digest = digest(sorted(i for kind in registration.reads for i in by_kind.get(kind, ())))
                seen[registration.reads] = evidence_digest
        readings[task.name] = Reading(fingerprint, evidence_digest)
    return readings


def _why(task: Task, reading: Reading | None, mark: WatchMark | None) -> str:
    if reading is None:
        return NOTHING_DECLARED
    if mark is None or mark.decision_id != task.decision_id:
        return FIRST_LOOK
    if mark.fingerprint != reading.fingerprint:
        return SLICE_CHANGED
    if mark.evidence != reading.evidence:
        return NEW_EVIDENCE
    return UNCHANGED


def select(plan: Plan, standing: list[Task], readings: Mapping[str, Reading], *, full: bool) -> Selection:
    """Which standing tasks' auditors run (all of them when ``full``), why, and which are skipped."""
    chosen = Selection([], {}, [])
    for task in standing:
        why = FULL if full else _why(task, readings.get(task.name), plan.watched.get(task.name))
        if why == UNCHANGED:
            chosen.skipped.append(task.name)
        else:
            chosen.run.append(task)
            chosen.why[task.name] = why
    return chosen


def keep_marks(plan: Plan, readings: Mapping[str, Reading], names: Iterable[str]) -> None:
    """Pin ``readings`` to the current decisions of ``names`` (tasks an auditor just found standing)."""
    for name in names:
        task = plan.tasks[name]
        reading = readings.get(name)
        if reading is not None and task.state is TaskState.DONE and task.decision_id is not None:
            plan.watched[name] = reading.mark(task.decision_id)


def record_selection(plan: Plan, selection: Selection) -> None:
    """One ledger entry per recheck that skipped any auditor: which were skipped, and why the rest ran."""
    if not selection.skipped:
        return
    ran: dict[str, list[str]] = {}
    for name, why in selection.why.items():
        ran.setdefault(why, []).append(name)
    total = len(selection.skipped) + len(selection.why)
    ran_text = "; ".join(f"{why}: {', '.join(ran[why])}" for why in _WHY_ORDER if why in ran)
    plan.ledger.record(
        "audited",
        round=plan.round,
        detail=(
            f"skipped {len(selection.skipped)} of {total} auditor(s), their watched slices unchanged: "
            f"{', '.join(selection.skipped)}" + (f"; ran ({ran_text})" if ran_text else "")
        ),
    )


# -- in the execution snapshot (docs/formats/execution-v2.md, rule E31) ----------------------------


def marks_data(plan: Plan) -> dict[str, dict[str, dict[str, str | None]]]:
    """The snapshot's optional ``watched`` field: the marks still in force, or nothing at all.

    A mark of a task that is not done, or of a decision the task no longer holds, is void and not
    written, so a plan without watching auditors writes the bytes it wrote before marks existed.
    """
    kept = {
        name: mark.to_dict()
        for name, mark in plan.watched.items()
        if name in plan.tasks
        and plan.tasks[name].state is TaskState.DONE
        and plan.tasks[name].decision_id == mark.decision_id
    }
    return {"watched": dict(sorted(kept.items()))} if kept else {}


def _hex_or_null(value: object, path: str) -> str | None:
    if value is None or (type(value) is str and _is_hex(value)):
        return value
    shown = repr(value) if len(repr(value)) <= 80 else f"{repr(value)[:77]}..."
    raise SnapshotError(path, shown, "a mark's digest is 64 lower-case hex digits or null")


def _is_hex(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def restore_marks(raw: object, tasks: Mapping[str, Task]) -> dict[str, WatchMark]:
    """E31: ``watched`` maps done tasks to marks of their current decisions; anything else is refused."""
    marks: dict[str, WatchMark] = {}
    for name, value in expect_dict(raw, "watched").items():
        path = f"watched.{name}"
        task = tasks.get(name)
        if task is None or task.state is not TaskState.DONE:
            state = "no such task" if task is None else f"a {task.state.value} task"
            raise SnapshotError(path, state, "a mark names a done task of the plan")
        item = expect_dict(value, path)
        exact_keys(item, ("decision_id", "evidence", "fingerprint"), path)
        if task.decision_id is None or item["decision_id"] != task.decision_id:
            raise SnapshotError(
                f"{path}.decision_id",
                repr(item["decision_id"])[:80],
                f"a mark names its task's decision ({task.decision_id})",
            )
        fingerprint = _hex_or_null(item["fingerprint"], f"{path}.fingerprint")
        evidence = _hex_or_null(item["evidence"], f"{path}.evidence")
        if fingerprint is None and evidence is None:
            raise SnapshotError(path, "neither digest", "a mark pins a fingerprint, evidence, or both")
        marks[name] = WatchMark(task.decision_id, fingerprint, evidence)
    if not marks:
        raise SnapshotError("watched", "an empty object", "the field is written only when a mark is in force")
    return marks

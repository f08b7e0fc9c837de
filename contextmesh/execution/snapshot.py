"""The execution snapshot ``contextmesh.execution`` v2: a plan's semantic state, keys never code.

The document is ``{"schema", "version", "plan", "round", "tasks"}``; each task, in declaration
order, carries ``name``, ``worker_key``, ``auditor_key``, ``assumes``, ``assumption_id``,
``needs``, ``produces``, ``rationale``, ``state`` (pending / done / stale / failed — never
blocked, which is recomputed), ``attempt``, ``decision_id``, ``output`` and ``error``.

``restore_plan`` checks the snapshot against the graph it is restored onto and the registry it
is given before building anything: references closed (needs name earlier tasks, so no cycles;
assumption and decision ids exist with the right types), a done task has a live decision and an
output, decision ids lie in the plan's own namespace, and every key is registered — a checkpoint
naming an unregistered key is refused with the key in the message.

The work is linear in the file's size: no number in it drives a loop. ``attempt`` lies in
0..:data:`MAX_ATTEMPT`; a task's decision is checked against the one attempt its decision node
records (``attrs.attempt``), not against every attempt up to the task's.
"""

from __future__ import annotations

from typing import Any

from contextmesh.core.canonical import MAX_SAFE_INTEGER, digest, file_bytes, loads
from contextmesh.core.errors import ContextMeshError, InputError, SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.execution.calls import Executor
from contextmesh.execution.plan import Plan, Task, TaskState
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.execution.watch import marks_data, restore_marks
from contextmesh.formats.records import check_header, exact_keys, expect_dict, expect_list
from contextmesh.formats.run_ledger import RunLedger
from contextmesh.knowledge.revisions import DocumentRef

__all__ = [
    "EXECUTION_SCHEMA",
    "EXECUTION_VERSION",
    "MAX_ATTEMPT",
    "dump_plan",
    "load_plan",
    "restore_plan",
    "snapshot_plan",
]

_STATE_TEXTS = frozenset(state.value for state in TaskState)  # once, not once per stored task

EXECUTION_SCHEMA = "contextmesh.execution"
EXECUTION_VERSION = 2
# A run adds one to a task's attempt and writes it (snapshot and decision attrs), so the largest
# attempt a file may hold is one below the largest integer a file can hold.
MAX_ATTEMPT = MAX_SAFE_INTEGER - 1
_TASK_FIELDS = (
    "name",
    "worker_key",
    "auditor_key",
    "assumes",
    "assumption_id",
    "needs",
    "produces",
    "rationale",
    "state",
    "attempt",
    "decision_id",
    "output",
    "error",
)
# Written only when not empty, after the thirteen (E28, E29): a plan whose tasks rest on no document
# writes exactly the file it wrote before tasks could.
_OPTIONAL_FIELDS = ("rests_on", "about", "volatile")


def snapshot_plan(plan: Plan) -> dict[str, Any]:
    """The plan's state as plain data (refuses a plan holding plain callables)."""
    plan.require_checkpointable()
    return {
        "schema": EXECUTION_SCHEMA,
        "version": EXECUTION_VERSION,
        "plan": plan.name,
        "round": plan.round,
        "tasks": [_task_data(t) for t in plan.tasks.values()],
        **marks_data(plan),  # optional (E31): absent while no auditor's mark is in force
    }


def _task_data(task: Task) -> dict[str, Any]:
    optional: dict[str, Any] = {}
    if task.rests_on:
        optional["rests_on"] = [ref.to_data() for ref in task.rests_on]
    if task.about:
        optional["about"] = list(task.about)
    if task.volatile:
        optional["volatile"] = True  # E30: written only when true (ADR 0018)
    return {
        "name": task.name,
        "worker_key": task.worker_key,
        "auditor_key": task.auditor_key,
        "assumes": task.assumes,
        "assumption_id": task.assumption_id,
        "needs": list(task.needs),
        "produces": list(task.produces),
        "rationale": task.rationale,
        "state": task.state.value,
        "attempt": task.attempt,
        "decision_id": task.decision_id,
        "output": task.output,
        "error": task.error,
        **optional,
    }


def dump_plan(plan: Plan) -> bytes:
    """The file bytes of a plan's state."""
    return file_bytes(snapshot_plan(plan))


def load_plan(
    data: bytes,
    graph: ContextGraph,
    registry: TaskRegistry,
    *,
    ledger: RunLedger | None = None,
    executor: Executor | None = None,
) -> Plan:
    """Parse a snapshot file and restore its plan onto ``graph`` with ``registry``."""
    return restore_plan(loads(data), graph, registry, ledger=ledger, executor=executor)


def _text(value: Any, path: str, *, nullable: bool = False, empty: bool = False) -> Any:
    if value is None and nullable:
        return None
    if type(value) is not str or (not empty and not value):
        raise SnapshotError(path, repr(value), "non-empty text" + (" or null" if nullable else ""))
    return value


def _texts(value: Any, path: str) -> tuple[str, ...]:
    items = expect_list(value, path)
    return tuple(_text(item, f"{path}[{i}]") for i, item in enumerate(items))


def restore_plan(
    data: Any,
    graph: ContextGraph,
    registry: TaskRegistry | None,
    *,
    ledger: RunLedger | None = None,
    executor: Executor | None = None,
) -> Plan:
    """Check a snapshot against ``graph`` and ``registry``, then build its plan.

    With ``registry=None`` the keys are not looked up (E16 is the one rule not applied) and the
    plan has no registry: its keys stay unresolved.
    """
    top = expect_dict(data, "$")
    check_header(top, EXECUTION_SCHEMA, EXECUTION_VERSION, original_versions=(1,))
    exact_keys(top, ("schema", "version", "plan", "round", "tasks", *(["watched"] if "watched" in top else [])), "$")
    plan_name = _text(top["plan"], "plan")
    round_ = top["round"]
    if type(round_) is not int or round_ < 0:
        raise SnapshotError("round", repr(round_), "the round is a non-negative integer")
    source_id = slug(f"execution plan: {plan_name}", "source")
    if source_id not in graph or graph.node(source_id).type != "source":
        raise SnapshotError("plan", repr(plan_name), f"the graph holds no plan source '{source_id}' for this plan")
    tasks: dict[str, Task] = {}
    for index, raw in enumerate(expect_list(top["tasks"], "tasks")):
        path = f"tasks[{index}]"
        item = expect_dict(raw, path)
        exact_keys(item, (*_TASK_FIELDS, *(f for f in _OPTIONAL_FIELDS if f in item)), path)
        task = _restore_task(item, path, graph, registry, tasks, plan_name)
        tasks[task.name] = task
    plan = Plan(plan_name, graph, registry=registry, ledger=ledger, executor=executor)
    plan.tasks = tasks
    plan.round = round_
    if "watched" in top:
        plan.watched = restore_marks(top["watched"], tasks)
    return plan


def _restore_task(
    item: dict[str, Any],
    path: str,
    graph: ContextGraph,
    registry: TaskRegistry | None,
    earlier: dict[str, Task],
    plan_name: str,
) -> Task:
    name = _text(item["name"], f"{path}.name")
    if name in earlier:
        raise SnapshotError(f"{path}.name", repr(name), "task names are unique within a plan")
    worker_key, auditor_key = _restore_keys(item, path, registry)
    assumes, assumption_id = _restore_ground(item, path, graph)
    needs = _texts(item["needs"], f"{path}.needs")
    for position, need in enumerate(needs):
        if need not in earlier:
            raise SnapshotError(f"{path}.needs[{position}]", repr(need), "a task needs tasks declared before it")
    produces = _texts(item["produces"], f"{path}.produces")
    rationale = _text(item["rationale"], f"{path}.rationale", empty=True)
    state, attempt, decision_id = _restore_progress(item, path, graph, plan_name, name, worker_key)
    return Task(
        name=name,
        assumes=assumes,
        assumption_id=assumption_id,
        worker_key=worker_key,
        auditor_key=auditor_key,
        needs=needs,
        produces=produces,
        rationale=rationale,
        state=state,
        attempt=attempt,
        decision_id=decision_id,
        output=item["output"],
        error=_text(item["error"], f"{path}.error", nullable=True, empty=True),
        rests_on=_restore_refs(item, path),
        about=_restore_about(item, path),
        volatile=_restore_volatile(item, path),
    )


def _restore_volatile(item: dict[str, Any], path: str) -> bool:
    """E30: ``volatile``, when present, is ``true`` (a task that is not volatile does not write it)."""
    if "volatile" not in item:
        return False
    if item["volatile"] is not True:
        raise SnapshotError(
            f"{path}.volatile", repr(item["volatile"]), "the field is written only when a task is volatile: true"
        )
    return True


def _restore_refs(item: dict[str, Any], path: str) -> tuple[DocumentRef, ...]:
    """E28: ``rests_on``, when present, is a non-empty array of distinct references."""
    if "rests_on" not in item:
        return ()
    raw = expect_list(item["rests_on"], f"{path}.rests_on")
    if not raw:
        raise SnapshotError(
            f"{path}.rests_on", "an empty array", "the field is written only when a task rests on something"
        )
    refs = []
    for index, value in enumerate(raw):
        try:
            ref = DocumentRef.from_data(value, f"{path}.rests_on[{index}]")
        except InputError as exc:
            raise SnapshotError(exc.path, exc.found, exc.rule) from None
        if ref in refs:
            raise SnapshotError(f"{path}.rests_on[{index}]", str(ref), "a task names each reference once")
        refs.append(ref)
    return tuple(refs)


def _restore_about(item: dict[str, Any], path: str) -> tuple[str, ...]:
    """E29: ``about``, when present, is a non-empty array of distinct non-empty strings."""
    if "about" not in item:
        return ()
    names = _texts(item["about"], f"{path}.about")
    if not names:
        raise SnapshotError(
            f"{path}.about", "an empty array", "the field is written only when a task is about something"
        )
    if len(set(names)) != len(names):
        raise SnapshotError(f"{path}.about", repr(list(names)), "a task names each entity once")
    return names


def _restore_keys(item: dict[str, Any], path: str, registry: TaskRegistry | None) -> tuple[str, str | None]:
    """The task's worker and auditor keys, each registered in ``registry`` (E16; skipped without one)."""
    worker_key = _text(item["worker_key"], f"{path}.worker_key")
    auditor_key = _text(item["auditor_key"], f"{path}.auditor_key", nullable=True)
    if registry is None:
        return worker_key, auditor_key
    for field_name, key, lookup in (
        ("worker_key", worker_key, registry.lookup_worker),
        ("auditor_key", auditor_key, registry.lookup_auditor),
    ):
        if key is None:
            continue
        try:
            lookup(key)
        except ContextMeshError as exc:
            raise SnapshotError(
                f"{path}.{field_name}", repr(key), f"every key must be registered here: {exc}"
            ) from None
    return worker_key, auditor_key


def _restore_ground(item: dict[str, Any], path: str, graph: ContextGraph) -> tuple[str, str]:
    """The task's statement and assumption id, which the graph's assumption must agree with."""
    assumes = _text(item["assumes"], f"{path}.assumes")
    assumption_id = _text(item["assumption_id"], f"{path}.assumption_id")
    record = graph.assumptions.get(assumption_id)
    if record is None:
        raise SnapshotError(
            f"{path}.assumption_id", repr(assumption_id), "the task's ground is an assumption of the graph"
        )
    if record.statement != assumes:
        raise SnapshotError(f"{path}.assumes", repr(assumes), f"the graph's assumption says {record.statement!r}")
    return assumes, assumption_id


def _restore_progress(
    item: dict[str, Any], path: str, graph: ContextGraph, plan_name: str, name: str, worker_key: str
) -> tuple[TaskState, int, str | None]:
    """The task's state, attempt and decision, checked against the decision node they name."""
    state_text = item["state"]
    if type(state_text) is not str or state_text not in _STATE_TEXTS:
        raise SnapshotError(f"{path}.state", repr(state_text), "a stored state is pending, done, stale or failed")
    state = TaskState(state_text)
    attempt = item["attempt"]
    if type(attempt) is not int or not 0 <= attempt <= MAX_ATTEMPT:
        raise SnapshotError(
            f"{path}.attempt",
            repr(attempt),
            f"an attempt is a non-negative integer of at most {MAX_ATTEMPT} (one more run must stay writable)",
        )
    decision_id = _text(item["decision_id"], f"{path}.decision_id", nullable=True)
    if decision_id is not None:
        _check_decision(decision_id, f"{path}.decision_id", graph, plan_name, name, attempt)
    if state is TaskState.DONE:
        _check_done(item, path, graph, decision_id, worker_key)
    if state is TaskState.PENDING and decision_id is not None:
        raise SnapshotError(f"{path}.decision_id", repr(decision_id), "a pending task has not made a decision yet")
    return state, attempt, decision_id


def _check_decision(decision_id: str, path: str, graph: ContextGraph, plan_name: str, name: str, attempt: int) -> None:
    """E24: a decision node of this plan and task, minted at the attempt it records (at most ``attempt``)."""
    node = graph.nodes.get(decision_id)
    if node is None or node.type != "decision":
        raise SnapshotError(path, repr(decision_id), "a task's decision is a decision node")
    # The decision records the attempt that minted it, so the namespace check costs one slug, not
    # one per attempt: a loop up to ``attempt`` let one number in the file cost gigabytes.
    minted_at = node.attrs.get("attempt")
    if (
        type(minted_at) is not int
        or not 1 <= minted_at <= attempt
        or slug(f"{plan_name}|{name}|v{minted_at}", "decision") != decision_id
    ):
        raise SnapshotError(
            path,
            repr(decision_id),
            f"a task's decision id lies in plan '{plan_name}''s namespace "
            f"for task '{name}' at an attempt up to {attempt}, the one its attrs.attempt records",
        )


def _check_done(item: dict[str, Any], path: str, graph: ContextGraph, decision_id: str | None, worker_key: str) -> None:
    """E25: a done task's decision stands, it keeps its output, and both are the ones the decision records."""
    if decision_id is None or not graph.is_live(decision_id):
        raise SnapshotError(f"{path}.state", "'done' without a live decision", "a done task's decision stands")
    if item["output"] is None:
        raise SnapshotError(f"{path}.output", "null on a done task", "a done task keeps its output")
    decision = graph.node(decision_id)
    if decision.attrs.get("worker_key") != worker_key:
        raise SnapshotError(
            f"{path}.worker_key",
            repr(worker_key),
            f"a done task's key is the one its decision records ({decision.attrs.get('worker_key')!r})",
        )
    try:
        recorded = digest(item["output"])
    except ContextMeshError as exc:
        raise SnapshotError(f"{path}.output", exc.args[0] if exc.args else "unusable", "plain JSON data") from None
    if decision.attrs.get("output_digest") != recorded:
        raise SnapshotError(
            f"{path}.output",
            "an output its decision did not record",
            "a done task's output hashes to its decision's output_digest",
        )

"""PrefectExecutor: the Executor contract with every worker and auditor call a Prefect task run.

Used inside a running flow (``make_plan_flow`` / ``make_recheck_flow``): the Plan hands it a ready
layer of plain-data calls; each call becomes a task run named ``<task>`` on the flow's task runner
(tags ``cm.plan:<p>``, ``cm.task:<t>``, ``cm.worker:<key>``, ``cm.assumption:<id>``,
``cm.role:worker``), and, once its worker has succeeded, its audit a task run ``<task> · audit``
(``cm.role:audit``). The layer is the dependency: every need of a call committed in an earlier
layer, so no ``wait_for`` is passed. Outcomes come back in call order with ``run`` / ``audit_run``
holding ``{"flow_run_id", "task_run_id"}``, which the Plan writes into the ledger.

Invariants (``tests/orchestration/``):

1. Task parameters and results are plain data: the task's identity as a dict
   (:meth:`~contextmesh.execution.calls.TaskIdentity.to_dict`), the inputs copied from needs,
   evidence as dicts; the registry is reached through the task function's closure, never passed.
2. ``cache_policy=NO_CACHE``: ContextMesh decides reuse, Prefect never skips a worker.
3. A key's ``timeout`` and ``retries`` are the task run's ``timeout_seconds`` and ``retries``. A key
   with a timeout runs as an async task whose worker runs in an abandoned-on-timeout thread, so
   Prefect's timeout interrupts it on time (a synchronous task in a worker thread can only be
   interrupted after its blocking call returns); the run ends ``Failed`` (``TimedOut``) and the
   outcome's error is a :class:`~contextmesh.execution.in_process.TaskTimeoutError`.
4. An audit verdict is the audit run's result; ``fail`` and ``disproved`` verdicts complete in
   states named ``Fail`` and ``Disproved`` so the UI shows them.
5. Identity tags only when ``tagged`` (the flows turn them on for plans of at most 50 tasks, the
   rule for ``Cached`` runs); the run's name always carries the task. Prefect 3.9 treats every
   task-run tag as a possible tag concurrency limit: a tagged run takes a round trip through a
   slot-acquisition service on Prefect's loop thread before it starts, and each distinct *set* of
   tags starts its own service (a thread and an HTTP client, kept for the life of the process).
   Measured on this 2-core box: +240 ms per task for per-task tag sets, +12-18 ms per task even for
   a few shared tags, against ~7 ms per plain task. Large plans carry their identity in run names,
   the flow run's tags, the round's table artifact and the ledger's run ids.
6. In an untagged (large) plan, a recheck judges the auditors that declare nothing they watch in
   one task run, ``recheck · <n> audits`` (:mod:`contextmesh.orchestration.audit_batch`, ADR 0033):
   one verdict, reason and ledger entry per auditor as before, one log line each in that run, and
   the run ``Disproved`` when any of them disproved. Declaring auditors, auditors with a timeout or
   retries, and every audit of a tagged plan keep a task run of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial, wraps
from types import MappingProxyType
from typing import Any, Literal

import anyio.to_thread
from prefect import Task, tags
from prefect._internal.result_records import ResultRecord  # what a finished run holds in memory (3.9)
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture, as_completed
from prefect.states import Completed
from prefect.task_engine import TaskRunTimeoutError

from contextmesh.core.canonical import digest
from contextmesh.core.errors import ContextMeshError, ExecutionError
from contextmesh.execution.boundary import AuditContractError, call_auditor, call_worker
from contextmesh.execution.calls import AuditCall, TaskCall, TaskIdentity, TaskOutcome, TaskTimeoutError
from contextmesh.execution.context import FactRead, Verdict
from contextmesh.execution.run_reasons import UNTOUCHED
from contextmesh.execution.task_registry import Registration, TaskRegistry
from contextmesh.orchestration.audit_batch import (
    BATCH_FROM,
    BatchItem,
    batch_error,
    batch_parameters,
    batch_task,
    batchable,
)
from contextmesh.orchestration.evidence_params import evidence_data, evidence_views
from contextmesh.orchestration.run_logs import run_logger
from contextmesh.orchestration.tag_limits import no_limits_known

__all__ = ["PrefectExecutor", "RunRef", "cached_run", "flow_run_id", "identity_tags"]

RunRef = dict[str, str | None]
Role = Literal["worker", "auditor"]


def flow_run_id() -> str:
    """The id of the flow run this code runs in; refuses outside one."""
    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:
        raise ExecutionError("the Prefect executor runs inside a flow run (make_plan_flow / make_recheck_flow)")
    return str(ctx.flow_run.id)


def identity_tags(
    plan: str, task: str, role: str, worker_key: str | None, assumption_id: str, auditor_key: str | None = None
) -> list[str]:
    """The tags that identify a task run in the UI and the API."""
    found = [f"cm.plan:{plan}", f"cm.task:{task}", f"cm.role:{role}"]
    if worker_key is not None:
        found.append(f"cm.worker:{worker_key}")
    if auditor_key is not None:
        found.append(f"cm.auditor:{auditor_key}")
    found.append(f"cm.assumption:{assumption_id}")
    return found


def _tags(found: list[str]) -> AbstractContextManager[object]:
    """Prefect's tags context for a submission, or nothing at all when untagged (see invariant 5).

    A tag set with no tag concurrency limit on the server is made known to Prefect first, so the
    run starts without a slot request that SQLite can refuse for two seconds (``tag_limits``).
    """
    if not found:
        return nullcontext()
    no_limits_known(found)
    return tags(*found)


# -- the task bodies (plain data in, plain data out) ----------------------------------------------


def _registration(registry: TaskRegistry, role: Role, key: str | None) -> Registration:
    if key is None:
        raise ExecutionError(f"no {role} key to resolve")
    return registry.lookup_worker(key) if role == "worker" else registry.lookup_auditor(key)


def _work(registry: TaskRegistry, identity: dict[str, Any], inputs: dict[str, Any]) -> Any:
    who = TaskIdentity.from_dict(identity)
    logger = run_logger()
    logger.info(
        "worker %s runs %s (attempt %d) on '%s'; reads the outputs of %s",
        who.worker_key,
        who.task,
        who.attempt,
        who.assumption,
        ", ".join(sorted(inputs)) or "no other task",
    )
    reads: list[FactRead] = []
    worker = _registration(registry, "worker", who.worker_key)
    output = call_worker(worker, who, MappingProxyType(inputs), registry, reads)
    logger.info("worker %s returned output %s (the round commits it after its audit)", who.worker_key, _digest(output))
    # The tracked reads travel back with the output (ADR 0018); the executor splits them again.
    return {"output": output, "reads": [read.to_dict() for read in reads]}


def _digest(output: Any) -> str:
    """A short digest for the log; an output the ledger cannot digest fails the round there, not here."""
    try:
        return digest(output)[:16]
    except (ContextMeshError, TypeError, ValueError) as exc:
        return f"(no digest: {type(exc).__name__})"


def _judge(registry: TaskRegistry, identity: dict[str, Any], output: Any, evidence: list[dict[str, Any]]) -> State[Any]:
    who = TaskIdentity.from_dict(identity)
    auditor = _registration(registry, "auditor", who.auditor_key)
    verdict = call_auditor(auditor, who, output, evidence_views(evidence))
    run_logger().info(
        "auditor %s read %d evidence item(s) and judged '%s' of %s: %s — %s",
        who.auditor_key,
        len(evidence),
        who.assumption,
        who.task,
        verdict.kind,
        verdict.reason,
    )
    names = {"ok": "Completed", "fail": "Fail", "disproved": "Disproved"}
    return Completed(name=names[verdict.kind], message=verdict.reason[:500], data=verdict.to_dict())


def _cached(task: str, output: Any, reason: str = UNTOUCHED) -> State[Any]:
    return Completed(name="Cached", message=f"{task}: {reason}"[:500], data=output)


def _asynchronous(body: Callable[..., Any]) -> Callable[..., Any]:
    """An async task body running ``body`` in a thread Prefect's timeout can walk away from."""

    @wraps(body)  # Prefect reads the parameters from the wrapped signature
    async def run(**params: Any) -> Any:
        return await anyio.to_thread.run_sync(partial(body, **params), abandon_on_cancel=True)

    return run


@dataclass(frozen=True)
class _Bodies:
    """The Prefect tasks of one registry: worker, audit (sync and timed) and the cached marker."""

    work: Task[..., Any]
    work_timed: Task[..., Any]
    judge: Task[..., Any]
    judge_timed: Task[..., Any]


def _bodies(registry: TaskRegistry) -> _Bodies:
    def work(identity: dict[str, Any], inputs: dict[str, Any]) -> Any:
        return _work(registry, identity, inputs)

    def judge(identity: dict[str, Any], output: Any, evidence: list[dict[str, Any]]) -> State[Any]:
        return _judge(registry, identity, output, evidence)

    def make(fn: Callable[..., Any], name: str, run_name: str) -> Task[..., Any]:
        return Task(fn, name=name, task_run_name=run_name, cache_policy=NO_CACHE, persist_result=False)

    return _Bodies(
        make(work, "cm-worker", "{identity[task]}"),
        make(_asynchronous(work), "cm-worker", "{identity[task]}"),
        make(judge, "cm-audit", "{identity[task]} · audit"),
        make(_asynchronous(judge), "cm-audit", "{identity[task]} · audit"),
    )


_CACHED_TASK: Task[..., Any] | None = None


def _cached_task() -> Task[..., Any]:
    global _CACHED_TASK  # noqa: PLW0603 - one task definition per process, built on first use
    if _CACHED_TASK is None:
        _CACHED_TASK = Task(
            _cached, name="cm-cached", task_run_name="{task} · cached", cache_policy=NO_CACHE, persist_result=False
        )
    return _CACHED_TASK


def cached_run(
    plan: str,
    task: str,
    worker_key: str | None,
    assumption_id: str,
    output: Any,
    *,
    tagged: bool = True,
    reason: str = UNTOUCHED,
) -> PrefectFuture[Any]:
    """Submit a ``<task> · cached`` run that completes in state ``Cached`` with the previous output;
    its message says why the result stands (untouched, or revalidated: ADR 0018)."""
    with _tags(identity_tags(plan, task, "cached", worker_key, assumption_id) if tagged else []):
        return _cached_task().submit(task=task, output=output, reason=reason)


# -- the executor -----------------------------------------------------------------------------------


class PrefectExecutor:
    """Runs each call as Prefect task runs of the current flow run; outcomes in call order."""

    def __init__(self, *, tagged: bool = True) -> None:
        self.tagged = tagged
        self._bodies: dict[int, tuple[TaskRegistry, _Bodies]] = {}
        self._variants: dict[tuple[str, int, str], Task[..., Any]] = {}
        self._batch: tuple[TaskRegistry, Task[..., Any]] | None = None
        self.task_runs = 0

    def _for(self, registry: TaskRegistry) -> _Bodies:
        held = self._bodies.get(id(registry))
        if held is None or held[0] is not registry:
            held = (registry, _bodies(registry))
            self._bodies[id(registry)] = held
        return held[1]

    def _task(self, registry: TaskRegistry, role: Role, registration: Registration) -> Task[..., Any]:
        bodies = self._for(registry)
        key = (role, id(registry), registration.key)
        found = self._variants.get(key)
        if found is None:
            timed = registration.timeout is not None
            if role == "worker":
                base = bodies.work_timed if timed else bodies.work
            else:
                base = bodies.judge_timed if timed else bodies.judge
            found = base.with_options(timeout_seconds=registration.timeout, retries=registration.retries)
            self._variants[key] = found
        return found

    # -- submitting ----------------------------------------------------------------------------

    def _start(
        self, call: TaskCall | AuditCall, registry: TaskRegistry | None, role: Role, outcome: TaskOutcome
    ) -> PrefectFuture[Any] | None:
        """Submit the call's worker or audit task run, or write on ``outcome`` why it cannot be one."""
        refused = _refusal(call, registry, role)
        if refused is not None:
            if role == "worker":
                outcome.error = refused
            else:
                outcome.audit_error = refused
            return None
        assert registry is not None
        identity = call.identity
        if isinstance(call, TaskCall):
            params: dict[str, Any] = {"inputs": dict(call.inputs)}
            found = identity_tags(identity.plan, identity.task, "worker", identity.worker_key, identity.assumption_id)
        else:
            params = {"output": call.output, "evidence": evidence_data(call.evidence)}
            found = identity_tags(
                identity.plan, identity.task, "audit", identity.worker_key, identity.assumption_id, identity.auditor_key
            )
        registration = _registration(registry, role, _key(identity, role))
        with _tags(found if self.tagged else []):
            future: PrefectFuture[Any] = self._task(registry, role, registration).submit(
                identity=identity.to_dict(), **params
            )
        self.task_runs += 1
        return future

    # -- the contract ----------------------------------------------------------------------------

    def run_layer(self, calls: Sequence[TaskCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        """Run every call's worker as a task run, then (when it succeeded) its audit; call order."""
        flow_run = flow_run_id()
        outcomes = [TaskOutcome(call.identity.task) for call in calls]
        workers: dict[PrefectFuture[Any], int] = {}
        for index, call in enumerate(calls):
            started = self._start(call, registry, "worker", outcomes[index])
            if started is not None:
                workers[started] = index
        audits: dict[PrefectFuture[Any], int] = {}
        for future in as_completed(list(workers)):
            index = workers[future]
            call, outcome = calls[index], outcomes[index]
            outcome.run = {"flow_run_id": flow_run, "task_run_id": str(future.task_run_id)}
            worked, outcome.error = _settle(future, call.identity, "worker", registry)
            if outcome.error is None:
                outcome.output = worked["output"]
                outcome.reads = tuple(FactRead.from_dict(read) for read in worked["reads"])
            if outcome.error is not None or not call.audited:
                continue
            started = self._start(call.audit(outcome.output), registry, "auditor", outcome)
            if started is not None:
                audits[started] = index
        self._collect_audits(audits, calls, outcomes, registry, flow_run)
        return outcomes

    def run_audits(self, calls: Sequence[AuditCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        """Run every call's auditor against its recorded output: a ``<task> · audit`` task run each, or
        (invariant 6) one batch run for the auditors that declare nothing in an untagged plan."""
        flow_run = flow_run_id()
        outcomes = [TaskOutcome(call.identity.task, output=call.output) for call in calls]
        batched = self._batched(calls, registry)
        batch = self._start_batch([calls[i] for i in batched], registry)
        in_batch = set(batched)
        audits: dict[PrefectFuture[Any], int] = {}
        for index, call in enumerate(calls):
            if index in in_batch:
                continue
            started = self._start(call, registry, "auditor", outcomes[index])
            if started is not None:
                audits[started] = index
        self._collect_audits(audits, calls, outcomes, registry, flow_run)
        if batch is not None:
            _settle_batch(batch, [calls[i] for i in batched], [outcomes[i] for i in batched], flow_run)
        return outcomes

    def _batched(self, calls: Sequence[AuditCall], registry: TaskRegistry | None) -> list[int]:
        """The calls judged in one batch run (invariant 6): none in a tagged plan, or fewer than two."""
        if self.tagged or registry is None or not calls:
            return []
        found = [i for i, c in enumerate(calls) if c.evidence is calls[0].evidence and batchable(registry, c)]
        return found if len(found) >= BATCH_FROM else []

    def _start_batch(self, calls: list[AuditCall], registry: TaskRegistry | None) -> PrefectFuture[Any] | None:
        if not calls or registry is None:
            return None
        if self._batch is None or self._batch[0] is not registry:
            self._batch = (registry, batch_task(registry))
        self.task_runs += 1
        future: PrefectFuture[Any] = self._batch[1].submit(**batch_parameters(calls))
        return future

    def _collect_audits(
        self,
        audits: dict[PrefectFuture[Any], int],
        calls: Sequence[TaskCall | AuditCall],
        outcomes: list[TaskOutcome],
        registry: TaskRegistry | None,
        flow_run: str,
    ) -> None:
        for future in as_completed(list(audits)):
            index = audits[future]
            outcome = outcomes[index]
            outcome.audit_run = {"flow_run_id": flow_run, "task_run_id": str(future.task_run_id)}
            identity = calls[index].identity
            data, error = _settle(future, identity, "auditor", registry)
            if error is not None:
                outcome.audit_error = error
            else:
                outcome.verdict = _verdict(data, identity.task, identity.auditor_key)


def _refusal(call: TaskCall | AuditCall, registry: TaskRegistry | None, role: Role) -> ExecutionError | None:
    """Why a call cannot become a task run (a plain callable, no registry, an unknown key), or None."""
    task, key = call.identity.task, _key(call.identity, role)
    plain = call.auditor if role == "auditor" else getattr(call, "worker", None)
    if plain is not None:
        return ExecutionError(
            f"task '{task}' runs a plain {role} callable; the Prefect executor runs registered keys only "
            "(register it under a key)"
        )
    if registry is None or key is None:
        return ExecutionError(f"no registry to resolve the {role} key {key!r} of task '{task}'")
    try:
        _registration(registry, role, key)
    except ExecutionError as exc:
        return exc
    return None


def _key(identity: TaskIdentity, role: Role) -> str | None:
    return identity.worker_key if role == "worker" else identity.auditor_key


def _settle(
    future: PrefectFuture[Any], identity: TaskIdentity, role: Role, registry: TaskRegistry | None
) -> tuple[Any, ExecutionError | None]:
    """A finished task run's result, or the ExecutionError it ended with."""
    task, key = identity.task, _key(identity, role)
    result = _result_of(future)
    state = future.state
    if state.is_completed():
        return result, None
    if isinstance(result, TaskRunTimeoutError) or state.name == "TimedOut":
        limit = _timeout_of(registry, role, key)
        return None, TaskTimeoutError(
            f"{role} '{key}' of task '{task}' ran longer than its {limit} timeout (Prefect state {state.name})"
        )
    if isinstance(result, ExecutionError):
        return None, result
    detail = f"{type(result).__name__}: {result}" if isinstance(result, BaseException) else (state.message or "")
    return None, ExecutionError(f"{role} '{key}' of task '{task}' ended in Prefect state {state.name}: {detail}")


def _result_of(future: PrefectFuture[Any]) -> Any:
    """The finished run's result (or the exception it ended with), as ``future.result(raise_on_failure=False)``.

    A run of this process holds its result in memory (``persist_result=False``); read it there.
    ``future.result`` gets the same value through a coroutine run on Prefect's loop thread, a hop
    on the critical path of every layer (the loop thread also sends the events and logs).
    """
    future.wait()
    data = future.state.data
    if isinstance(data, ResultRecord):
        return data.result
    return future.result(raise_on_failure=False)


def _settle_batch(
    future: PrefectFuture[Any], calls: list[AuditCall], outcomes: list[TaskOutcome], flow_run: str
) -> None:
    """Each batched call's verdict (or error) onto its outcome; a batch run that did not complete fails them all."""
    ref: RunRef = {"flow_run_id": flow_run, "task_run_id": str(future.task_run_id)}
    items = _result_of(future)
    whole = None
    if not future.state.is_completed() or not isinstance(items, list) or len(items) != len(calls):
        whole = ExecutionError(
            f"the batch audit run ended in Prefect state {future.state.name}: {future.state.message}"
        )
    for index, (call, outcome) in enumerate(zip(calls, outcomes, strict=True)):
        outcome.audit_run = ref
        if whole is not None:
            outcome.audit_error = whole
            continue
        item: BatchItem = items[index]
        outcome.audit_error = batch_error(item)
        if item.verdict is not None:
            outcome.verdict = _verdict(item.verdict, call.identity.task, call.identity.auditor_key)


def _timeout_of(registry: TaskRegistry | None, role: Role, key: str | None) -> str:
    if registry is None or key is None:
        return "key's"
    found = _registration(registry, role, key)
    return "key's" if found.timeout is None else f"{found.timeout:g} s"


def _verdict(data: Any, task: str, key: str | None) -> Verdict:
    if not isinstance(data, dict) or set(data) != {"kind", "reason", "cite"}:
        raise AuditContractError(f"auditor '{key}' of task '{task}' came back from Prefect without a verdict")
    return Verdict(data["kind"], data["reason"], data["cite"])

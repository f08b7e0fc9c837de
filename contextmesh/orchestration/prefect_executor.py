"""PrefectExecutor: the Executor contract with every worker and auditor call a Prefect task run.

Used inside a running flow (``make_plan_flow`` / ``make_recheck_flow``): the Plan hands it a ready
layer of plain-data calls; each call becomes a task run named ``<task>`` on the flow's task runner
(tags ``cm.plan:<p>``, ``cm.task:<t>``, ``cm.worker:<key>``, ``cm.assumption:<id>``,
``cm.role:worker``), and, once its worker has succeeded, its audit a task run ``<task> · audit``
(``cm.role:audit``). The layer is the dependency: every need of a call committed in an earlier
layer, so no ``wait_for`` is passed. Outcomes come back in call order with ``run`` / ``audit_run``
holding ``{"flow_run_id", "task_run_id"}``, which the Plan writes into the ledger.

Invariants (``tests/orchestration/``):

1. Task parameters and results are plain data: names, keys, the inputs copied from needs, evidence
   as dicts; the registry is reached through the task function's closure, never passed.
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
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture, as_completed
from prefect.states import Completed
from prefect.task_engine import TaskRunTimeoutError

from contextmesh.core.errors import ExecutionError
from contextmesh.execution.boundary import AuditContractError, call_auditor, call_worker
from contextmesh.execution.context import AuditContext, EvidenceView, RunContext, Verdict
from contextmesh.execution.in_process import AuditCall, TaskCall, TaskOutcome, TaskTimeoutError
from contextmesh.execution.task_registry import Registration, TaskRegistry

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
    """Prefect's tags context for a submission, or nothing at all when untagged (see invariant 5)."""
    return tags(*found) if found else nullcontext()


def _evidence_data(evidence: Sequence[EvidenceView]) -> list[dict[str, Any]]:
    return [
        {
            "id": e.id,
            "text": e.text,
            "source_id": e.source_id,
            "external_id": e.external_id,
            "metadata": dict(e.metadata),
        }
        for e in evidence
    ]


def _evidence_views(data: list[dict[str, Any]]) -> tuple[EvidenceView, ...]:
    return tuple(
        EvidenceView(e["id"], e["text"], e["source_id"], e["external_id"], MappingProxyType(dict(e["metadata"])))
        for e in data
    )


# -- the task bodies (plain data in, plain data out) ----------------------------------------------


def _work(
    registry: TaskRegistry,
    task: str,
    plan: str,
    attempt: int,
    worker_key: str,
    assumption: str,
    inputs: dict[str, Any],
) -> Any:
    worker = registry.lookup_worker(worker_key)
    ctx = RunContext(plan, task, attempt, worker.key, assumption, MappingProxyType(inputs))
    return call_worker(worker, ctx)


def _judge(
    registry: TaskRegistry,
    task: str,
    plan: str,
    attempt: int,
    worker_key: str | None,
    auditor_key: str,
    assumption: str,
    output: Any,
    evidence: list[dict[str, Any]],
) -> State[Any]:
    auditor = registry.lookup_auditor(auditor_key)
    ctx = AuditContext(
        plan, task, attempt, worker_key or "", auditor.key, assumption, output, _evidence_views(evidence)
    )
    verdict = call_auditor(auditor, ctx)
    names = {"ok": "Completed", "fail": "Fail", "disproved": "Disproved"}
    return Completed(name=names[verdict.kind], message=verdict.reason[:500], data=verdict.to_dict())


def _cached(task: str, output: Any) -> State[Any]:
    return Completed(name="Cached", message=f"{task}: untouched, its previous result stands", data=output)


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
    def work(task: str, plan: str, attempt: int, worker_key: str, assumption: str, inputs: dict[str, Any]) -> Any:
        return _work(registry, task, plan, attempt, worker_key, assumption, inputs)

    def judge(
        task: str,
        plan: str,
        attempt: int,
        worker_key: str | None,
        auditor_key: str,
        assumption: str,
        output: Any,
        evidence: list[dict[str, Any]],
    ) -> State[Any]:
        return _judge(registry, task, plan, attempt, worker_key, auditor_key, assumption, output, evidence)

    def make(fn: Callable[..., Any], name: str, run_name: str) -> Task[..., Any]:
        return Task(fn, name=name, task_run_name=run_name, cache_policy=NO_CACHE, persist_result=False)

    return _Bodies(
        make(work, "cm-worker", "{task}"),
        make(_asynchronous(work), "cm-worker", "{task}"),
        make(judge, "cm-audit", "{task} · audit"),
        make(_asynchronous(judge), "cm-audit", "{task} · audit"),
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
    plan: str, task: str, worker_key: str | None, assumption_id: str, output: Any, *, tagged: bool = True
) -> PrefectFuture[Any]:
    """Submit a ``<task> · cached`` run that completes in state ``Cached`` with the previous output."""
    with _tags(identity_tags(plan, task, "cached", worker_key, assumption_id) if tagged else []):
        return _cached_task().submit(task=task, output=output)


# -- the executor -----------------------------------------------------------------------------------


class PrefectExecutor:
    """Runs each call as Prefect task runs of the current flow run; outcomes in call order."""

    def __init__(self, *, tagged: bool = True) -> None:
        self.tagged = tagged
        self._bodies: dict[int, tuple[TaskRegistry, _Bodies]] = {}
        self._variants: dict[tuple[str, int, str], Task[..., Any]] = {}
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

    def _submit_worker(self, call: TaskCall, registry: TaskRegistry) -> PrefectFuture[Any]:
        assert call.worker_key is not None
        registration = registry.lookup_worker(call.worker_key)
        found = identity_tags(call.plan, call.task, "worker", call.worker_key, call.assumption_id)
        with _tags(found if self.tagged else []):
            future = self._task(registry, "worker", registration).submit(
                task=call.task,
                plan=call.plan,
                attempt=call.attempt,
                worker_key=call.worker_key,
                assumption=call.assumption,
                inputs=dict(call.inputs),
            )
        self.task_runs += 1
        return future

    def _submit_audit(self, call: AuditCall, registry: TaskRegistry) -> PrefectFuture[Any]:
        assert call.auditor_key is not None
        registration = registry.lookup_auditor(call.auditor_key)
        found = identity_tags(call.plan, call.task, "audit", call.worker_key, call.assumption_id, call.auditor_key)
        with _tags(found if self.tagged else []):
            future = self._task(registry, "auditor", registration).submit(
                task=call.task,
                plan=call.plan,
                attempt=call.attempt,
                worker_key=call.worker_key,
                auditor_key=call.auditor_key,
                assumption=call.assumption,
                output=call.output,
                evidence=_evidence_data(call.evidence),
            )
        self.task_runs += 1
        return future

    # -- the contract ----------------------------------------------------------------------------

    def run_layer(self, calls: Sequence[TaskCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        """Run every call's worker as a task run, then (when it succeeded) its audit; call order."""
        flow_run = flow_run_id()
        outcomes = [TaskOutcome(call.task) for call in calls]
        workers: dict[PrefectFuture[Any], int] = {}
        for index, call in enumerate(calls):
            refused = _refusal(call, registry, "worker")
            if refused is not None:
                outcomes[index].error = refused
                continue
            assert registry is not None
            workers[self._submit_worker(call, registry)] = index
        audits: dict[PrefectFuture[Any], int] = {}
        for future in as_completed(list(workers)):
            index = workers[future]
            call, outcome = calls[index], outcomes[index]
            outcome.run = {"flow_run_id": flow_run, "task_run_id": str(future.task_run_id)}
            outcome.output, outcome.error = _settle(future, call.task, call.worker_key, "worker", registry)
            if outcome.error is not None or (call.auditor_key is None and call.auditor is None):
                continue
            audit = AuditCall(
                call.plan,
                call.task,
                call.attempt,
                call.worker_key,
                call.auditor_key,
                call.assumption,
                call.assumption_id,
                outcome.output,
                call.evidence,
                call.auditor,
            )
            refused = _refusal(audit, registry, "auditor")
            if refused is not None:
                outcome.audit_error = refused
                continue
            assert registry is not None
            audits[self._submit_audit(audit, registry)] = index
        self._collect_audits(audits, calls, outcomes, registry, flow_run)
        return outcomes

    def run_audits(self, calls: Sequence[AuditCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        """Run every call's auditor as a ``<task> · audit`` task run against its recorded output."""
        flow_run = flow_run_id()
        outcomes = [TaskOutcome(call.task, output=call.output) for call in calls]
        audits: dict[PrefectFuture[Any], int] = {}
        for index, call in enumerate(calls):
            refused = _refusal(call, registry, "auditor")
            if refused is not None:
                outcomes[index].audit_error = refused
                continue
            assert registry is not None
            audits[self._submit_audit(call, registry)] = index
        self._collect_audits(audits, calls, outcomes, registry, flow_run)
        return outcomes

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
            data, error = _settle(future, calls[index].task, calls[index].auditor_key, "auditor", registry)
            if error is not None:
                outcome.audit_error = error
            else:
                outcome.verdict = _verdict(data, calls[index].task, calls[index].auditor_key)


def _refusal(call: TaskCall | AuditCall, registry: TaskRegistry | None, role: Role) -> ExecutionError | None:
    """Why a call cannot become a task run (a plain callable, no registry, an unknown key), or None."""
    key = call.worker_key if role == "worker" else call.auditor_key
    plain = call.auditor if role == "auditor" else getattr(call, "worker", None)
    if plain is not None:
        return ExecutionError(
            f"task '{call.task}' runs a plain {role} callable; the Prefect executor runs registered keys only "
            "(register it under a key)"
        )
    if registry is None or key is None:
        return ExecutionError(f"no registry to resolve the {role} key {key!r} of task '{call.task}'")
    try:
        registry.lookup_worker(key) if role == "worker" else registry.lookup_auditor(key)
    except ExecutionError as exc:
        return exc
    return None


def _settle(
    future: PrefectFuture[Any], task: str, key: str | None, role: Role, registry: TaskRegistry | None
) -> tuple[Any, ExecutionError | None]:
    """A finished task run's result, or the ExecutionError it ended with."""
    result = future.result(raise_on_failure=False)
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


def _timeout_of(registry: TaskRegistry | None, role: Role, key: str | None) -> str:
    if registry is None or key is None:
        return "key's"
    found = registry.lookup_worker(key) if role == "worker" else registry.lookup_auditor(key)
    return "key's" if found.timeout is None else f"{found.timeout:g} s"


def _verdict(data: Any, task: str, key: str | None) -> Verdict:
    if not isinstance(data, dict) or set(data) != {"kind", "reason", "cite"}:
        raise AuditContractError(f"auditor '{key}' of task '{task}' came back from Prefect without a verdict")
    return Verdict(data["kind"], data["reason"], data["cite"])

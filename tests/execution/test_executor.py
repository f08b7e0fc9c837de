"""The Executor contract: plain data in, outcomes in call order, identical bytes at any width."""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from types import MappingProxyType
from typing import Any

import pytest
from execution_helpers import AUDITOR, WORKER, RecordingExecutor, keyed_runner

from contextmesh.core.graph import ContextGraph
from contextmesh.execution.calls import AuditCall, TaskCall, TaskIdentity
from contextmesh.execution.context import AuditContext, EvidenceView, RunContext, Verdict
from contextmesh.execution.in_process import InProcessExecutor, TaskTimeoutError
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.formats.graph_file import dump_graph

PLAIN = (dict, list, str, int, float, bool, type(None))


def _is_plain(value: Any) -> bool:
    if isinstance(value, dict | MappingProxyType):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_is_plain(v) for v in value)
    return isinstance(value, PLAIN)


def _diamond(runner: Plan) -> None:
    runner.task("a", worker_key=WORKER, auditor_key=AUDITOR, assumes="a holds")
    runner.task("b", worker_key=WORKER, needs=["a"], assumes="b holds")
    runner.task("c", worker_key=WORKER, auditor_key=AUDITOR, needs=["a", "b"], assumes="c holds")


# -- plain data -----------------------------------------------------------------------------------


def test_a_task_call_carries_plain_data_and_no_graph() -> None:
    recorder = RecordingExecutor()
    runner, _, _, _ = keyed_runner(executor=recorder)
    _diamond(runner)
    runner.run()
    calls = [call for layer in recorder.layers for call in layer]
    assert [c.identity.task for c in calls] == ["a", "b", "c"]
    names = {f.name for f in (*dataclasses.fields(TaskCall), *dataclasses.fields(TaskIdentity))}
    assert not names & {"graph", "runner", "task_record", "registry"}
    for call in calls:
        # The identity is a record of plain fields: check them with the call's own.
        fields = [(f.name, getattr(call, f.name)) for f in dataclasses.fields(call) if f.name != "identity"]
        fields += [(f.name, getattr(call.identity, f.name)) for f in dataclasses.fields(call.identity)]
        for name, value in fields:
            assert not isinstance(value, ContextGraph | Plan | TaskRegistry), name
            if name in {"worker", "auditor"}:
                assert value is None  # keyed tasks travel as keys, never callables
            elif name == "evidence":
                assert all(isinstance(e, EvidenceView) for e in value)
            else:
                assert _is_plain(value), (name, value)
    c, who = calls[2], calls[2].identity
    assert (who.plan, who.attempt, who.worker_key, who.auditor_key, who.assumption) == (
        "plan",
        1,
        WORKER,
        AUDITOR,
        "c holds",
    )
    assert who.assumption_id == runner.tasks["c"].assumption_id
    assert dict(c.inputs) == {"a": runner.tasks["a"].output, "b": runner.tasks["b"].output}


def test_a_workers_inputs_are_read_only() -> None:
    seen: list[BaseException] = []
    registry = TaskRegistry()
    registry.register_worker("src", lambda ctx: {"x": 1})

    def intruder(ctx: RunContext) -> dict[str, Any]:
        try:
            ctx.inputs["src"] = {"x": 2}  # type: ignore[index]
        except TypeError as exc:
            seen.append(exc)
        return {}

    registry.register_worker("intruder", intruder)
    runner = Plan("plan", ContextGraph(), registry=registry)
    runner.task("src", worker_key="src", assumes="src holds")
    runner.task("dst", worker_key="intruder", needs=["src"], assumes="dst holds")
    runner.run()
    assert len(seen) == 1 and runner.tasks["src"].output == {"x": 1}


def test_a_workers_inputs_are_copies_of_the_outputs_it_needs() -> None:
    registry = TaskRegistry()
    registry.register_worker("src", lambda ctx: {"items": [1, 2]})

    def mutate(ctx: RunContext) -> dict[str, Any]:
        ctx.inputs["src"]["items"].append(99)
        return {}

    registry.register_worker("mutate", mutate)
    runner = Plan("plan", ContextGraph(), registry=registry)
    runner.task("src", worker_key="src", assumes="src holds")
    runner.task("dst", worker_key="mutate", needs=["src"], assumes="dst holds")
    runner.run()
    assert runner.tasks["src"].output == {"items": [1, 2]}


# -- call order -----------------------------------------------------------------------------------


def _identity(name: str, assumption: str, assumption_id: str) -> TaskIdentity:
    return TaskIdentity(
        plan="plan",
        task=name,
        attempt=1,
        worker_key=None,
        auditor_key=None,
        assumption=assumption,
        assumption_id=assumption_id,
    )


def _call(name: str, worker: Any, auditor: Any = None) -> TaskCall:
    identity = _identity(name, f"{name} holds", f"assumption:{name}")
    return TaskCall(identity=identity, inputs=MappingProxyType({}), worker=worker, auditor=auditor)


def test_outcomes_come_back_in_call_order_whatever_order_they_finish_in() -> None:
    finished: list[str] = []
    lock = threading.Lock()

    def sleeper(delay: float) -> Any:
        def work(ctx: RunContext) -> dict[str, Any]:
            time.sleep(delay)
            with lock:
                finished.append(ctx.task)
            return {"task": ctx.task}

        return work

    names = [f"t{i}" for i in range(6)]
    calls = [_call(name, sleeper(0.005 * (6 - i))) for i, name in enumerate(names)]
    outcomes = InProcessExecutor(width=6).run_layer(calls, None)
    assert [o.task for o in outcomes] == names
    assert [o.output for o in outcomes] == [{"task": n} for n in names]
    assert finished != names  # they really did finish out of order
    assert all(o.run is None for o in outcomes)


def test_audit_outcomes_come_back_in_call_order() -> None:
    def slow_ok(ctx: AuditContext) -> Verdict:
        time.sleep(0.02 if ctx.task == "first" else 0.0)
        return ctx.ok(ctx.task)

    calls = [
        AuditCall(identity=_identity(name, "g", "assumption:g"), output={"n": name}, auditor=slow_ok)
        for name in ("first", "second", "third")
    ]
    outcomes = InProcessExecutor(width=3).run_audits(calls, None)
    assert [(o.task, o.verdict.reason if o.verdict else None) for o in outcomes] == [
        ("first", "first"),
        ("second", "second"),
        ("third", "third"),
    ]


def test_an_executor_width_is_a_whole_number_from_one() -> None:
    from contextmesh.core.errors import ExecutionError

    for width in (0, -1, True, 1.5):
        with pytest.raises(ExecutionError, match="width"):
            InProcessExecutor(width=width)  # type: ignore[arg-type]


# -- determinism ----------------------------------------------------------------------------------


def _wide_plan(width: int, finished: list[str]) -> tuple[bytes, bytes]:
    """Run a wide plan (with a disproof and a failed audit) at ``width``; return graph and ledger bytes."""
    lock = threading.Lock()
    registry = TaskRegistry()

    def work(ctx: RunContext) -> dict[str, Any]:
        time.sleep(random.Random(f"{ctx.task}:{ctx.attempt}").uniform(0.0, 0.02))
        with lock:
            finished.append(ctx.task)
        return {"task": ctx.task, "attempt": ctx.attempt, "inputs": {k: v["task"] for k, v in ctx.inputs.items()}}

    def audit(ctx: AuditContext) -> Verdict:
        time.sleep(random.Random(f"audit:{ctx.task}").uniform(0.0, 0.005))
        if ctx.task == "m3":
            return ctx.disproved("the shared ground is false after all")
        if ctx.task == "m1":
            return ctx.fail("m1 produced the wrong thing")
        return ctx.ok(f"{ctx.task} checked")

    registry.register_worker("w", work)
    registry.register_auditor("a", audit)
    runner = Plan("wide", ContextGraph(), registry=registry, executor=InProcessExecutor(width=width))
    leaves = [f"t{i:02d}" for i in range(14)]
    for i, name in enumerate(leaves):
        ground = "the shared ground holds" if i in {4, 9} else f"{name} holds"
        runner.task(name, worker_key="w", auditor_key="a", assumes=ground, produces=[f"{name} artefact"])
    for j in range(6):
        needs = [leaves[(2 * j) % 14], leaves[(2 * j + 5) % 14]]
        ground = "the shared ground holds" if j == 3 else f"m{j} holds"
        runner.task(f"m{j}", worker_key="w", auditor_key="a", needs=needs, assumes=ground, produces=[f"m{j} out"])
    runner.task("top", worker_key="w", auditor_key="a", needs=["m0", "m2", "m5"], assumes="top holds")
    runner.run()
    runner.recheck()
    runner.run()
    return dump_graph(runner.graph), runner.ledger.dump()


def test_one_thread_and_sixteen_threads_write_byte_identical_graph_and_ledger() -> None:
    narrow_order: list[str] = []
    wide_order: list[str] = []
    narrow = _wide_plan(1, narrow_order)
    wide = _wide_plan(16, wide_order)
    assert narrow_order != wide_order  # the wide run really did finish in another order
    assert narrow[0] == wide[0]
    assert narrow[1] == wide[1]
    assert b'"disproved"' in narrow[1] and b'"failed"' in narrow[1]  # the run exercised both paths


# -- timeouts and retries -------------------------------------------------------------------------


def test_a_worker_over_its_timeout_fails_the_task_and_the_next_round_retries_it() -> None:
    recorder = RecordingExecutor()
    registry = TaskRegistry()
    attempts: list[int] = []

    def slow_then_fast(ctx: RunContext) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        if ctx.task == "s" and ctx.attempt == 1:
            time.sleep(0.3)
        return {"attempt": ctx.attempt}

    registry.register_worker("slow", slow_then_fast, timeout=0.05)
    runner = Plan("plan", ContextGraph(), registry=registry, executor=recorder)
    runner.task("s", worker_key="slow", assumes="s holds")
    runner.task("after", worker_key="slow", needs=["s"], assumes="after holds")
    first = runner.run()
    error = recorder.outcomes[0][0].error
    assert isinstance(error, TaskTimeoutError)
    assert "'slow'" in first.failed["s"] and "0.05 s timeout" in first.failed["s"]
    assert first.blocked == {"after": "it needs 's', which did not complete this round"}
    failed = [e for e in runner.ledger.entries if e.event == "failed"]
    assert [(e.task, e.key, e.detail) for e in failed] == [("s", "slow", first.failed["s"])]
    assert runner.states() == {"s": "failed", "after": "pending"}
    time.sleep(0.3)  # the abandoned thread finishes; its late result must not land anywhere
    assert runner.tasks["s"].output is None and runner.states()["s"] == "failed"
    second = runner.run()
    assert second.executed == ["s", "after"]
    assert runner.tasks["s"].output == {"attempt": 2}
    assert runner.states() == {"s": "done", "after": "done"}


def test_a_timeout_failure_detail_names_task_timeout_error() -> None:
    registry = TaskRegistry()
    registry.register_worker("slow", lambda ctx: time.sleep(0.2) or {}, timeout=0.02)
    runner = Plan("plan", ContextGraph(), registry=registry)
    runner.task("s", worker_key="slow", assumes="s holds")
    report = runner.run()
    assert "TaskTimeoutError" in report.failed["s"]


@pytest.mark.parametrize(("retries", "state", "calls"), [(2, "done", 3), (1, "failed", 2), (0, "failed", 1)])
def test_a_keys_retries_are_honoured_within_one_attempt(retries: int, state: str, calls: int) -> None:
    seen: list[int] = []

    def flaky(ctx: RunContext) -> dict[str, Any]:
        seen.append(ctx.attempt)
        if len(seen) <= 2:
            raise ConnectionError(f"flake {len(seen)}")
        return {"ok": True}

    registry = TaskRegistry()
    registry.register_worker("flaky", flaky, retries=retries)
    runner = Plan("plan", ContextGraph(), registry=registry)
    runner.task("f", worker_key="flaky", assumes="f holds")
    report = runner.run()
    assert runner.states() == {"f": state}
    assert seen == [1] * calls  # retries re-call the worker inside the same attempt
    if state == "failed":
        assert "ConnectionError" in report.failed["f"]
    else:
        assert runner.tasks["f"].attempt == 1 and [e.event for e in runner.ledger.entries] == ["executed"]


def test_a_timeout_with_a_retry_succeeds_in_the_same_round() -> None:
    seen: list[int] = []

    def slow_once(ctx: RunContext) -> dict[str, Any]:
        seen.append(ctx.attempt)
        if len(seen) == 1:
            time.sleep(0.3)
        return {"ok": True}

    registry = TaskRegistry()
    registry.register_worker("slow", slow_once, timeout=0.05, retries=1)
    runner = Plan("plan", ContextGraph(), registry=registry)
    runner.task("s", worker_key="slow", assumes="s holds")
    assert runner.run().executed == ["s"]
    assert seen == [1, 1]


def test_an_auditors_retries_are_honoured() -> None:
    seen: list[str] = []

    def flaky_audit(ctx: AuditContext) -> Verdict:
        seen.append(ctx.task)
        if len(seen) == 1:
            raise ConnectionError("audit backend blinked")
        return ctx.ok("fine")

    registry = TaskRegistry()
    registry.register_worker("w", lambda ctx: {})
    registry.register_auditor("a", flaky_audit, retries=1)
    runner = Plan("plan", ContextGraph(), registry=registry)
    runner.task("t", worker_key="w", auditor_key="a", assumes="t holds")
    assert runner.run().executed == ["t"]
    assert seen == ["t", "t"]

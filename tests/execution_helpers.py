"""Shared builders for the execution tests: counting registries, a recording executor, the demo.

:class:`Calls` counts how often each task's worker or auditor was called (thread-safe, since the
in-process executor runs a layer on a pool). :func:`keyed_runner` builds a runner over a fresh graph
whose registry holds a counting worker and an ok-auditor. :func:`demo_runner` and
:func:`walk_to_repair` build the bundled secure-authentication plan and walk it to the durable-key
checkpoint (argon2 → advisory → recheck disproves → repair to bcrypt, nothing rerun yet).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from contextmesh.core.graph import ContextGraph
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, PLAN_NAME, declare_plan, publish, register_demo
from contextmesh.demo.execute import REPAIR_GROUND
from contextmesh.execution.context import AuditContext, RunContext, Verdict
from contextmesh.execution.in_process import AuditCall, Executor, InProcessExecutor, TaskCall, TaskOutcome
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry

__all__ = [
    "AUDITOR",
    "WORKER",
    "Calls",
    "RecordingExecutor",
    "demo_registry",
    "demo_runner",
    "keyed_runner",
    "walk_to_repair",
]

WORKER = "test.worker.v1"
AUDITOR = "test.audit.ok.v1"


class Calls:
    """A thread-safe tally of calls by task name."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def hit(self, name: str) -> None:
        with self._lock:
            self.counts[name] += 1

    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())


def counting_worker(calls: Calls) -> Callable[[RunContext], dict[str, Any]]:
    """A worker that counts its calls and returns plain data naming its task and attempt."""

    def work(ctx: RunContext) -> dict[str, Any]:
        calls.hit(ctx.task)
        return {"task": ctx.task, "attempt": ctx.attempt, "inputs": sorted(ctx.inputs)}

    return work


def ok_auditor(calls: Calls) -> Callable[[AuditContext], Verdict]:
    """An auditor that counts its calls and always lets the output stand."""

    def audit(ctx: AuditContext) -> Verdict:
        calls.hit(ctx.task)
        return ctx.ok(f"{ctx.task} looks right")

    return audit


def keyed_runner(plan: str = "plan", *, executor: Executor | None = None) -> tuple[Plan, TaskRegistry, Calls, Calls]:
    """A runner on a fresh graph with a counting worker (``WORKER``) and an ok-auditor (``AUDITOR``)."""
    workers, auditors = Calls(), Calls()
    registry = TaskRegistry()
    registry.register_worker(WORKER, counting_worker(workers))
    registry.register_auditor(AUDITOR, ok_auditor(auditors))
    runner = Plan(plan, ContextGraph(), registry=registry, executor=executor)
    return runner, registry, workers, auditors


class RecordingExecutor:
    """Wraps an executor and keeps every call it was handed and every outcome it returned."""

    def __init__(self, inner: Executor | None = None) -> None:
        self.inner: Executor = inner if inner is not None else InProcessExecutor(width=1)
        self.layers: list[list[TaskCall]] = []
        self.outcomes: list[list[TaskOutcome]] = []
        self.audits: list[list[AuditCall]] = []

    def run_layer(self, calls: Sequence[TaskCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        self.layers.append(list(calls))
        outcomes = self.inner.run_layer(calls, registry)
        self.outcomes.append(outcomes)
        return outcomes

    def run_audits(self, calls: Sequence[AuditCall], registry: TaskRegistry | None) -> list[TaskOutcome]:
        self.audits.append(list(calls))
        outcomes = self.inner.run_audits(calls, registry)
        self.outcomes.append(outcomes)
        return outcomes


def demo_registry(feed: Path, *, without: Sequence[str] = ()) -> TaskRegistry:
    """The demo's registry, optionally without some keys (re-registered from a full one)."""
    full = TaskRegistry()
    register_demo(full, feed=feed)
    if not without:
        return full
    registry = TaskRegistry()
    described = full.describe()
    for key in described["workers"]:
        if key not in without:
            registry.register_worker(key, full.lookup_worker(key).fn)
    for key in described["auditors"]:
        if key not in without:
            registry.register_auditor(key, full.lookup_auditor(key).fn)
    return registry


def demo_runner(feed: Path, *, registry: TaskRegistry | None = None, executor: Executor | None = None) -> Plan:
    """The secure-authentication plan, declared on a fresh graph."""
    runner = Plan(
        PLAN_NAME,
        ContextGraph(),
        registry=registry if registry is not None else demo_registry(feed),
        executor=executor,
    )
    declare_plan(runner)
    return runner


def walk_to_repair(feed: Path) -> Plan:
    """Round 1 on argon2, publish the advisory, recheck (disproves), repair to bcrypt — and stop."""
    runner = demo_runner(feed)
    runner.run()
    publish(feed, "argon2-cffi", ADVISORY_TEXT)
    runner.recheck()
    runner.repair("hashing", assumes=REPAIR_GROUND, worker_key=DEFAULT_KEYS["bcrypt"], produces=["password hasher"])
    return runner

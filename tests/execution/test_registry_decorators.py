"""``@registry.worker(key)`` and ``@registry.auditor(key)``: the registration API written above a function."""

from __future__ import annotations

from typing import Any

import pytest

from contextmesh.core.graph import ContextGraph
from contextmesh.execution.context import AuditContext, RunContext, Verdict
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import RegistryError, TaskRegistry


def test_the_worker_decorator_registers_the_function_and_returns_it_unchanged() -> None:
    registry = TaskRegistry()

    @registry.worker("auth.hash.v1", timeout=2.5, retries=1)
    def argon2(ctx: RunContext) -> dict[str, str]:
        return {"algorithm": "argon2id"}

    found = registry.lookup_worker("auth.hash.v1")
    assert found.fn is argon2
    assert (found.key, found.timeout, found.retries) == ("auth.hash.v1", 2.5, 1)
    assert argon2.__name__ == "argon2"  # the name is the function, not a wrapper
    assert registry.describe() == {"workers": ["auth.hash.v1"], "auditors": []}


def test_the_auditor_decorator_registers_in_the_auditor_namespace_only() -> None:
    registry = TaskRegistry()

    @registry.auditor("auth.audit.v1")
    def audit(ctx: AuditContext) -> Verdict:
        return ctx.ok()

    assert registry.lookup_auditor("auth.audit.v1").fn is audit
    assert registry.has_auditor("auth.audit.v1") and not registry.has_worker("auth.audit.v1")
    with pytest.raises(RegistryError, match=r"'auth\.audit\.v1' is registered as an auditor, not a worker"):
        registry.lookup_worker("auth.audit.v1")


def test_the_decorator_runs_the_same_checks_as_register_worker() -> None:
    registry = TaskRegistry()

    @registry.worker("auth.hash.v1")
    def first(ctx: RunContext) -> int:
        return 1

    with pytest.raises(RegistryError, match=r"worker 'auth\.hash\.v1' is already registered"):

        @registry.worker("auth.hash.v1")
        def second(ctx: RunContext) -> int:
            return 2

    assert registry.lookup_worker("auth.hash.v1").fn is first  # the first registration stands
    with pytest.raises(RegistryError, match=r"cannot register 'has space'.*whitespace"):
        registry.worker("has space")(first)
    with pytest.raises(RegistryError, match=r"a timeout is a positive number of seconds, not 0"):
        registry.auditor("auth.audit.v1", timeout=0)(first)
    not_callable: Any = "text"
    with pytest.raises(RegistryError, match=r"str is not callable"):
        registry.worker("auth.tokens.v1")(not_callable)
    assert registry.describe() == {"workers": ["auth.hash.v1"], "auditors": []}


def test_a_plan_runs_decorated_workers_and_auditors() -> None:
    registry = TaskRegistry()

    @registry.worker("greet.v1")
    def greet(ctx: RunContext) -> dict[str, str]:
        return {"greeting": f"hello from {ctx.task}"}

    @registry.auditor("greet.audit.v1")
    def check(ctx: AuditContext) -> Verdict:
        return ctx.ok("polite") if "hello" in ctx.output["greeting"] else ctx.fail("rude")

    plan = Plan("greetings", ContextGraph(), registry=registry)
    plan.task("greet", worker_key="greet.v1", auditor_key="greet.audit.v1", assumes="people like a greeting")
    report = plan.run()
    assert report.executed == ["greet"]
    assert plan.tasks["greet"].output == {"greeting": "hello from greet"}

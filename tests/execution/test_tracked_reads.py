"""Tracked reads (ADR 0018): facts read through ``ctx.read`` are dependencies of the decision.

A changed fact makes exactly its readers stale — noticed at the start of the next round, with a
reason chain through the fact — and a read that bypasses the context stays invisible.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from contextmesh import ContextGraph, ExecutionError, Plan, RunContext, TaskRegistry
from contextmesh.execution.run_reasons import reason_for
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.formats.openlineage import openlineage_events
from contextmesh.formats.prov import prov_document


class Shop:
    """``prices`` reads the fact ``usd``, ``stock`` reads ``widgets``, ``quote`` needs ``prices`` (and
    rounds it), ``sneaky`` reads ``usd`` straight from the dict, around its context."""

    def __init__(self) -> None:
        self.world: dict[str, Any] = {"usd": 100, "widgets": 7}
        self.calls: Counter[str] = Counter()
        self.broken = False
        registry = TaskRegistry()

        @registry.fact("market")
        def market(name: str) -> Any:
            if self.broken:
                raise ConnectionError("market feed is down")
            return self.world[name]

        self._worker(registry, "prices", lambda ctx: {"usd": ctx.read("market", "usd")})
        self._worker(registry, "stock", lambda ctx: {"widgets": ctx.read("market", "widgets")})
        self._worker(registry, "quote", lambda ctx: {"band": ctx.inputs["prices"]["usd"] // 50})
        self._worker(registry, "sneaky", lambda ctx: {"usd": self.world["usd"]})
        self.plan = Plan("shop", ContextGraph(), registry=registry)
        self.plan.task("prices", worker_key="prices.v1", assumes="the market feed is current")
        self.plan.task("stock", worker_key="stock.v1", assumes="the warehouse count is current")
        self.plan.task("quote", worker_key="quote.v1", needs=["prices"], assumes="quotes round to bands")
        self.plan.task("sneaky", worker_key="sneaky.v1", assumes="nobody looks")

    def _worker(self, registry: TaskRegistry, name: str, body: Any) -> None:
        def work(ctx: RunContext) -> Any:
            self.calls[name] += 1
            return body(ctx)

        registry.register_worker(f"{name}.v1", work)

    def first_run(self) -> None:
        assert set(self.plan.run().executed) == {"prices", "stock", "quote", "sneaky"}
        self.calls.clear()


def test_a_changed_fact_makes_exactly_its_readers_stale_with_a_chain_through_the_fact() -> None:
    shop = Shop()
    shop.first_run()
    shop.world["usd"] = 180
    report = shop.plan.run()
    assert report.executed == ["prices", "quote"] and shop.calls == Counter({"prices": 1, "quote": 1})
    assert report.cached == ["stock", "sneaky"]
    changed = [e for e in shop.plan.ledger.entries if e.event == "fact_changed"]
    assert len(changed) == 1 and changed[0].key == "market" and changed[0].round == report.round
    assert changed[0].detail.startswith("fact market:usd now reads ")
    why = reason_for(shop.plan, "prices", report.round)
    assert why.kind == "fact changed"
    assert "-supersedes-> claim(market:usd read as " in why.text and why.text.endswith("<-derived_from- prices (shop)")
    assert (
        "<-derived_from- prices (shop) <-depends_on- quote (shop)" in reason_for(shop.plan, "quote", report.round).text
    )
    assert shop.plan.tasks["quote"].output == {"band": 3} and shop.plan.ledger.verify()


def test_a_fact_change_that_does_not_reach_an_output_stops_the_cascade_there() -> None:
    shop = Shop()
    shop.plan.task("label", worker_key="quote.v1", needs=["prices"], assumes="labels round too")
    shop.plan.task("poster", worker_key="stock.v1", needs=["quote"], assumes="posters follow quotes")
    shop.plan.run()
    shop.calls.clear()
    shop.world["usd"] = 120  # prices re-runs to 120; quote re-runs to the same band of 50
    report = shop.plan.run()
    assert sorted(report.executed) == ["label", "prices", "quote"] and list(report.revalidated) == ["poster"]
    assert shop.calls == Counter({"prices": 1, "quote": 2})


def test_a_read_around_the_context_is_invisible_and_its_reader_serves_the_old_value() -> None:
    shop = Shop()
    shop.first_run()
    assert shop.plan.run().executed == []  # nothing changed: nothing runs
    shop.world["usd"] = 101
    report = shop.plan.run()
    # prices read usd through its context and re-runs; sneaky read the same fact from the dict, so
    # the engine never learnt it depends on usd and keeps serving what it computed before.
    assert report.executed == ["prices", "quote"] and "sneaky" in report.cached
    assert shop.plan.tasks["prices"].output == {"usd": 101} and shop.plan.tasks["sneaky"].output == {"usd": 100}


def test_a_fact_that_comes_back_to_an_old_value_is_a_new_reading_each_time() -> None:
    shop = Shop()
    shop.first_run()
    for value in (150, 100, 150):
        shop.world["usd"] = value
        assert shop.plan.run().executed == ["prices", "quote"]
        assert shop.plan.tasks["prices"].output == {"usd": value}
    claims = [n for n in shop.plan.graph.by_type("claim", live_only=False) if n.attrs.get("fact") == "usd"]
    assert len(claims) == 4 and sum(1 for n in claims if n.live) == 1


def test_a_fact_source_that_fails_counts_as_changed_and_its_reader_fails_with_the_reason() -> None:
    shop = Shop()
    shop.first_run()
    shop.broken = True
    report = shop.plan.run()
    assert set(report.failed) == {"prices", "stock"}
    assert "ConnectionError: market feed is down" in report.failed["prices"]
    assert any("could not be read (ConnectionError" in e.detail for e in shop.plan.ledger.entries)


def test_a_task_gone_stale_by_a_disproof_reruns_when_a_fact_it_read_changed_meanwhile() -> None:
    world = {"advisory": False, "widgets": 7}
    registry = TaskRegistry()
    registry.register_fact("market", lambda name: world[name])
    registry.register_worker("gate.v1", lambda ctx: {"open": True})
    registry.register_worker("total.v1", lambda ctx: {"widgets": ctx.read("market", "widgets")})
    registry.register_auditor(
        "advisory.v1", lambda ctx: ctx.disproved("advisory open") if world["advisory"] else ctx.ok()
    )
    plan = Plan("gated", ContextGraph(), registry=registry)
    plan.task("gate", worker_key="gate.v1", auditor_key="advisory.v1", assumes="the gate is safe")
    plan.task("total", worker_key="total.v1", needs=["gate"], assumes="totals are cheap")
    plan.run()
    world["advisory"] = True
    assert plan.recheck().stale == ["gate", "total"]
    world.update(advisory=False, widgets=9)
    plan.repair("gate", assumes="the gate is patched", worker_key="gate.v1")
    report = plan.run()
    # gate re-ran to the same output, so on its inputs alone total would keep its result; but the
    # fact it read changed while it was stale, so it runs.
    assert report.executed == ["gate", "total"] and plan.tasks["total"].output == {"widgets": 9}


def test_reading_without_fact_sources_or_from_an_unknown_source_is_refused_clearly() -> None:
    ctx = RunContext("p", "t", 1, "k", "it holds", __import__("types").MappingProxyType({}))
    with pytest.raises(ExecutionError) as refused:
        ctx.read("market", "usd")
    assert "reaches no fact sources" in str(refused.value)
    registry = TaskRegistry()
    registry.register_worker("reads.v1", lambda c: c.read("nowhere", "x"))
    plan = Plan("p", ContextGraph(), registry=registry)
    plan.task("t", worker_key="reads.v1", assumes="it holds")
    failed = plan.run().failed
    assert "no fact source is registered under 'nowhere'" in failed["t"]


def test_a_graph_whose_decisions_rest_on_read_facts_saves_and_loads() -> None:
    shop = Shop()
    shop.first_run()
    shop.world["usd"] = 180
    shop.plan.run()
    data = dump_graph(shop.plan.graph)
    assert dump_graph(load_graph(data)) == data


def test_a_registry_without_fact_sources_describes_itself_as_before() -> None:
    registry = TaskRegistry()
    registry.register_worker("w.v1", lambda ctx: {})
    assert registry.describe() == {"workers": ["w.v1"], "auditors": []}
    registry.register_fact("f.v1", lambda name: 1)
    assert registry.describe() == {"workers": ["w.v1"], "auditors": [], "facts": ["f.v1"]}
    assert registry.lookup_fact("f.v1").fn("x") == 1


def test_lineage_exports_do_not_blame_an_earlier_disproof_for_a_fall_a_changed_fact_caused() -> None:
    world = {"advisory": False, "usd": 100}
    registry = TaskRegistry()
    registry.register_fact("market", lambda name: world[name])
    registry.register_worker("gate.v1", lambda ctx: {"open": world["usd"] > 0})
    registry.register_worker("price.v1", lambda ctx: {"usd": ctx.read("market", "usd")})
    registry.register_auditor(
        "advisory.v1",
        lambda ctx: (
            ctx.disproved("advisory open") if world["advisory"] and "patched" not in ctx.assumption else ctx.ok()
        ),
    )
    plan = Plan("lineage", ContextGraph(), registry=registry)
    plan.task("gate", worker_key="gate.v1", auditor_key="advisory.v1", assumes="the gate is safe")
    plan.task("price", worker_key="price.v1", assumes="the feed is current")
    plan.run()
    world["advisory"] = True
    plan.recheck()
    plan.repair("gate", assumes="the gate is patched", worker_key="gate.v1")
    plan.run()  # gate re-runs after its disproof
    world["usd"] = 150
    assert plan.run().executed == ["price"]  # price re-runs because the fact changed, after that disproof
    events = openlineage_events(plan.ledger, plan.graph, plan="lineage", namespace="t", started_at=datetime.now(UTC))
    blamed = {e["job"]["name"] for e in events if "contextmesh_disproof" in e["run"]["facets"]}
    assert blamed == {"lineage.gate"}
    document = prov_document(plan.ledger, plan.graph, plan="lineage")
    informed = [n for n in document["@graph"] if "wasInformedBy" in json.dumps(n)]
    assert len(informed) == 1  # gate's re-run, informed by its disproof; price's is not


_BUILD = """
import sys
sys.path.insert(0, {tests!r})
from test_tracked_reads import Shop
from contextmesh.formats.graph_file import dump_graph
shop = Shop()
shop.first_run()
shop.world["usd"] = 180
shop.plan.run()
sys.stdout.buffer.write(dump_graph(shop.plan.graph) + shop.plan.ledger.head.encode())
"""


def test_the_graph_and_ledger_after_a_fact_change_are_byte_identical_across_hash_seeds() -> None:
    script = _BUILD.format(tests=str(Path(__file__).parent))
    found = {
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, env={**os.environ, "PYTHONHASHSEED": seed}, check=True
        ).stdout
        for seed in ("0", "7", "31337")
    }
    assert len(found) == 1 and b"market:usd read as" in next(iter(found))

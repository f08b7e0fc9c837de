"""``Session.open_readonly``: a session loaded with no registry — every other check, and no write.

The reader here never builds the plan's registry: the plan comes back with its keys as data, its
graph, ledger and task states as a writable load with the registry sees them, and every write is
refused before a byte of the directory moves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from demo_cache import DemoSessions
from session_helpers import TINY_KEY, build_tiny_session, clone, reseal_doc, tiny_registry

from contextmesh.core.errors import SessionError
from contextmesh.core.graph import ContextGraph
from contextmesh.demo.saved import open_demo_session
from contextmesh.execution.context import RunContext
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.formats.graph_file import dump_graph
from contextmesh.formats.resolver_file import dump_resolver
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.files import SessionFileError
from contextmesh.session.session import Session


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    """The demo saved once (plan round 1 run, every ground audited); copied per test."""
    return demo_sessions.copy(tmp_path_factory.mktemp("readonly"))


def _state(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of the directory with its bytes and modification time."""
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir())}


def test_a_plan_session_opens_without_its_registry_and_shows_what_a_full_load_shows(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    directory, feed = clone(template[0], tmp_path / "s"), template[1]
    with pytest.raises(SessionError, match="holds an execution plan; load it with the deployment's registry"):
        Session.load(directory)  # the writable load still needs the registry
    full = open_demo_session(directory, feed=feed, policy="never")
    read = Session.open_readonly(directory)
    assert read.read_only and not full.read_only
    assert read.runner is not None and full.runner is not None and read.ledger is not None
    assert read.registry is None and read.runner.registry is None  # the keys resolve to nothing
    assert dump_graph(read.graph) == dump_graph(full.graph)
    assert dump_resolver(read.resolver) == dump_resolver(full.resolver)
    assert read.runner.states() == full.runner.states() == dict.fromkeys(full.runner.tasks, "done")
    assert read.runner.round == full.runner.round == 1
    assert [(t.worker_key, t.auditor_key) for t in read.runner.tasks.values()] == [
        (t.worker_key, t.auditor_key) for t in full.runner.tasks.values()
    ]
    assert read.ledger.dump() == full.runner.ledger.dump()
    assert read.ledger.verify()
    assert read.companions() == full.companions()  # the same state, byte for byte
    mine, theirs = read.describe(), full.describe()
    for key in ("session_id", "generation", "rounds", "nodes_live", "edges_live", "assumptions", "plan", "ledger"):
        assert mine[key] == theirs[key], key
    assert mine["persistent"] is False  # it will never write
    assert read.health().to_dict() == full.health().to_dict()


def test_a_session_without_a_plan_opens_read_only_too(tmp_path: Path) -> None:
    graph, resolver = ContextGraph(), Resolver()
    node = graph.add_node("entity", "Index Builder", attrs={"canonical": "Index Builder", "aliases": []})
    resolver.register(node.id, "Index Builder")
    saved = Session.create(tmp_path / "s", Session(graph, resolver, walk_rounds=3))
    read = Session.open_readonly(tmp_path / "s")
    assert read.runner is None and read.ledger is None
    assert read.walk_rounds == 3
    assert read.companions() == saved.companions()


def test_every_write_is_refused_with_the_directory_named_and_no_byte_changes(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    directory = clone(template[0], tmp_path / "s")
    before = _state(directory)
    read = Session.open_readonly(directory)
    ran: list[str] = []

    def mutate(session: Session) -> None:
        ran.append("mutated")

    read.pending = 1  # work waiting to be committed does not make a read-only session write
    refusals = {
        "commit": read.commit,
        "checkpoint": read.checkpoint,
        "apply": lambda: read.apply(mutate),
        "save": lambda: Session.create(tmp_path / "elsewhere", read),
    }
    for what, write in refusals.items():
        with pytest.raises(SessionError) as caught:
            write()
        message = str(caught.value)
        assert "\n" not in message, what
        assert "opened read-only (Session.open_readonly)" in message, what
        assert str(directory) in message, what
    assert ran == []  # apply refused before running the mutation
    assert not (tmp_path / "elsewhere").exists()
    read.ask("Why did the Index Builder run out of memory?")  # walks in memory: the policy is never
    read.close()
    assert read.refresh() is False  # nothing newer on disk
    assert read.generation == 1 and read.commits == 0 and read.failed == 0
    assert _state(directory) == before


def test_a_read_only_plan_never_resolves_a_key_into_code(tmp_path: Path) -> None:
    calls: list[int] = []

    def work(ctx: RunContext) -> dict[str, Any]:
        calls.append(ctx.attempt)
        return {"attempt": ctx.attempt}

    registry = TaskRegistry()
    registry.register_worker(TINY_KEY, work)
    graph = ContextGraph()
    runner = Plan("tiny-plan", graph, registry=registry)
    runner.task("work", assumes="the tiny world holds still", worker_key=TINY_KEY)
    Session.create(tmp_path / "s", Session(graph, Resolver(), runner=runner, registry=registry))
    before = _state(tmp_path / "s")
    read = Session.open_readonly(tmp_path / "s")
    assert read.runner is not None and read.runner.tasks["work"].worker_key == TINY_KEY
    report = read.runner.run()  # in memory only; with no registry the key names no code
    assert calls == []
    assert list(report.failed) == ["work"]
    assert "no registry to resolve the worker key" in report.failed["work"]
    with pytest.raises(SessionError, match="opened read-only"):
        read.commit()
    assert _state(tmp_path / "s") == before
    Session.load(tmp_path / "s", registry=registry, policy="never").runner.run()  # type: ignore[union-attr]
    assert calls == [1]  # the same plan, loaded with its registry, does run the code


def test_a_key_no_registry_holds_loads_read_only_but_every_other_check_still_runs(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    unknown = tmp_path / "unknown"
    build_tiny_session(unknown)  # its one task is pending: no decision records its key

    def rename_key(doc: dict[str, Any]) -> None:
        doc["tasks"][0]["worker_key"] = "nobody.registered.this"

    reseal_doc(unknown, "execution", rename_key)
    with pytest.raises(SessionFileError, match=r"tasks\[0\]\.worker_key.*every key must be registered"):
        Session.load(unknown, registry=tiny_registry())  # the registry's check refuses it
    read = Session.open_readonly(unknown)  # kept as data: there is no registry to check it against
    assert read.runner is not None and read.runner.tasks["work"].worker_key == "nobody.registered.this"

    for name, edit, where in (
        ("swapped", rename_key, r"tasks\[0\]\.worker_key.*the one its decision records"),
        ("groundless", _lose_ground, r"tasks\[0\]\.assumption_id"),
    ):
        broken = clone(template[0], tmp_path / name)
        reseal_doc(broken, "execution", edit)
        with pytest.raises(SessionFileError, match=where):
            Session.open_readonly(broken)


def _lose_ground(doc: dict[str, Any]) -> None:
    doc["tasks"][0]["assumption_id"] = "assumption:nowhere-000000"

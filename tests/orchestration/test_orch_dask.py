"""A wide layer fans out through a distributed task runner and commits the thread pool's bytes.

A generated 200-task plan (4 layers x 50, keyed on this deployment's ``registry/``) runs a first
round on the thread pool; an advisory then disproves the ground of 10 of its tasks (5 %), which are
repaired onto the bcrypt key. The session is copied twice and resumed once on each copy: with
``prefect-dask``'s ``DaskTaskRunner`` on a local cluster of two worker processes, and with the
default thread pool. The resumed layer is 10 tasks wide; every one of its worker and audit runs is
a Dask task in another process, which rebuilds the registry by importing ``registry/`` (the
registry pickles as its recipe, never as its callables: ``contextmesh/execution/task_registry.py``
invariants 6 and 7). Both copies must commit the same generation with byte-identical graph files.

The cluster is started by the test (``DaskTaskRunner(address=...)``) rather than by the runner, so
the test can ask each worker process afterwards what it ran and whether it imported ``registry/``.
It listens on 127.0.0.1 only, with no dashboard.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from orch_helpers import keyed_session, task_runs

from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, publish
from contextmesh.execution.plan import Plan
from contextmesh.orchestration.flow_bodies import make_plan_flow, make_recheck_flow
from contextmesh.session.load import load_directory
from contextmesh.session.session import Session
from contextmesh.session.telemetry import dump_structure

ROOT = Path(__file__).resolve().parents[2]
LAYERS, COLUMNS = 4, 50
HASHED_EVERY = 5  # the last layer's columns 0, 5, 10, ... hash with argon2 under the advisory auditor


def _name(layer: int, column: int) -> str:
    return f"l{layer}-c{column % COLUMNS:02d}"


def _hashed(layer: int, column: int) -> bool:
    return layer == LAYERS - 1 and column % HASHED_EVERY == 0


def declare_wide(runner: Plan) -> None:
    """200 tasks in 4 layers of 50; each task after the first layer needs two of the layer before, but a
    hashing task only one (its ``Cached`` need is one more Dask task run in the resume)."""
    for layer in range(LAYERS):
        for column in range(COLUMNS):
            needs = [] if layer == 0 else [_name(layer - 1, column), _name(layer - 1, column + 1)]
            if _hashed(layer, column):
                runner.task(
                    _name(layer, column),
                    worker_key=DEFAULT_KEYS["argon2"],
                    auditor_key=DEFAULT_KEYS["advisory_audit"],
                    needs=needs[:1],
                    assumes=f"argon2-cffi has no open advisory for store {column:02d}",
                    produces=[f"password hasher of store {column:02d}"],
                )
            else:
                runner.task(
                    _name(layer, column),
                    worker_key=DEFAULT_KEYS["schema" if (layer + column) % 2 == 0 else "tokens"],
                    needs=needs,
                    assumes=f"store {column:02d} keeps its layer-{layer} contract",
                    produces=[f"artefact of {_name(layer, column)}"],
                )


def newest_graph(directory: Path) -> tuple[int, bytes]:
    """The newest generation of a session directory and its graph's bytes (the snapshot with its
    journal replayed, session v5: the graph companion alone is only the snapshot)."""
    loaded = load_directory(directory, read_only=True)
    return loaded.manifest.generation, dump_structure(loaded.graph)


def test_this_deployments_registry_pickles_as_its_recipe_and_reads_the_same_feed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.chdir(tmp_path)
    from registry import build_registry

    sent = build_registry("feed.json")  # relative: the recipe holds the absolute path
    assert sent.recipe == (build_registry, (tmp_path / "feed.json",))
    data = pickle.dumps(sent)
    assert b"_advisory_auditor" not in data and b"_argon2" not in data
    monkeypatch.chdir(ROOT)
    received = pickle.loads(data)
    assert received.describe() == sent.describe()
    assert received.recipe == sent.recipe


def _drain_prefect() -> None:
    """Run in each Dask worker process: flush every Prefect event and log worker it started (in a
    thread of its own: on the Dask worker's event loop ``drain_all`` hands back a coroutine instead
    of waiting; and every instance, each made under the task runs' settings, not a new one)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    def drain() -> None:
        APILogWorker.drain_all()
        EventsWorker.drain_all()

    flusher = threading.Thread(target=drain)
    flusher.start()
    flusher.join(timeout=30)


def _worker_probe(dask_worker: Any) -> dict[str, Any]:
    """Run in each Dask worker process: its pid, how many tasks it ran, where ``registry`` came from."""
    found = sys.modules.get("registry")
    return {
        "pid": os.getpid(),
        "executed": dask_worker.state.executed_count,
        "registry": getattr(found, "__file__", None),
        "threads": sorted(t.name for t in threading.enumerate() if not t.daemon),
    }


@pytest.mark.integration
@pytest.mark.slow
def test_a_resume_on_a_dask_cluster_of_two_processes_commits_the_thread_pools_graph_bytes(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from distributed import Client, LocalCluster
    from prefect_dask import DaskTaskRunner

    monkeypatch.syspath_prepend(str(ROOT))  # spawned Dask workers start with this process's sys.path
    from registry import build_registry

    started = time.perf_counter()
    feed = tmp_path / "feed.json"
    registry = build_registry(feed)
    base = tmp_path / "base"
    keyed_session(base, registry, declare_wide, plan="wide-layer")
    first = make_plan_flow(registry)(session_dir=str(base), mode="run")
    assert len(first["executed"]) == LAYERS * COLUMNS, first["failed"]

    publish(feed, "argon2-cffi", ADVISORY_TEXT)
    checked = make_recheck_flow(registry)(session_dir=str(base))
    hashed = {_name(LAYERS - 1, c) for c in range(COLUMNS) if _hashed(LAYERS - 1, c)}
    assert set(checked["stale"]) == hashed and len(hashed) == LAYERS * COLUMNS // 20  # 5 %

    def repair(s: Session) -> None:
        assert s.runner is not None
        for name in sorted(hashed):
            s.runner.repair(name, assumes=f"bcrypt has no open advisory for {name}", worker_key=DEFAULT_KEYS["bcrypt"])

    Session.load(base, registry=registry).apply(repair)
    on_threads, on_dask = tmp_path / "threads", tmp_path / "dask"
    shutil.copytree(base, on_threads)
    shutil.copytree(base, on_dask)

    clock = time.perf_counter()
    threaded = make_plan_flow(registry)(session_dir=str(on_threads), mode="resume")
    threads_s = time.perf_counter() - clock

    with (
        LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=2,
            host="127.0.0.1",
            # The scheduler always serves HTTP (health, metrics); None would mean port 8787, and a
            # warning when another cluster holds it. A free loopback port, no dashboard (no bokeh).
            dashboard_address="127.0.0.1:0",
            worker_dashboard_address=None,
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        runner = DaskTaskRunner(address=cluster.scheduler_address)
        clock = time.perf_counter()
        distributed = make_plan_flow(registry, task_runner=runner)(session_dir=str(on_dask), mode="resume")
        dask_s = time.perf_counter() - clock
        # Each worker process sends its task runs' events to the server before the cluster stops.
        client.run(_drain_prefect)
        probes = client.run(_worker_probe)

    assert set(threaded["executed"]) == set(distributed["executed"]) == hashed
    assert distributed["task_runs"] == threaded["task_runs"]
    assert newest_graph(on_dask) == newest_graph(on_threads)
    assert newest_graph(on_dask)[1] != newest_graph(base)[1], "the resume committed a new graph"
    # Two worker processes, each of which ran task runs and rebuilt the registry from registry/.
    recorded = task_runs(prefect_api, distributed["flow_run_id"], distributed["task_runs"])
    assert {r["state_type"] for r in recorded} == {"COMPLETED"}
    assert len(probes) == 2 and all(address.startswith("tcp://127.0.0.1:") for address in probes)
    assert len({p["pid"] for p in probes.values()}) == 2
    assert os.getpid() not in {p["pid"] for p in probes.values()}
    for address, probe in probes.items():
        assert probe["executed"] > 0, f"worker {address} ran no task: {probes}"
        assert probe["registry"] == str(ROOT / "registry" / "__init__.py"), probe
    print(
        f"\nresume of {len(hashed)} stale tasks in a {LAYERS * COLUMNS}-task plan: thread pool {threads_s:.2f} s, "
        f"Dask (2 processes x 2 threads) {dask_s:.2f} s; tasks per worker "
        f"{sorted(p['executed'] for p in probes.values())}; test {time.perf_counter() - started:.1f} s"
    )

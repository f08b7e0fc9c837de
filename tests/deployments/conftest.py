"""ContextMesh on a Prefect work pool: a Prefect server on PostgreSQL, a process worker, prefect.yaml.

Session fixtures, each started once for this folder and stopped in reverse order:

* ``postgres``      the local PostgreSQL cluster, up on loopback — started here only when it was
                    down, and then stopped at the end (``scripts/install-postgres`` installs it and
                    the role ``cm``; without them the tests fail, never skip);
* ``pg_url``        a fresh database for this run (``postgresql+asyncpg://cm:cm@127.0.0.1:5432/…``),
                    dropped at the end;
* ``prefect_api``   the managed Prefect server of :mod:`contextmesh.orchestration.local_server` on that
                    database (own home, free port, no UI); the client side points at it through
                    ``temporary_settings``, and the log and event workers drain before it stops;
* ``demo``          a demo session saved with ``contextmesh session save DIR --feed FEED``;
* ``deployed``      the process work pool ``contextmesh`` and ``prefect --no-prompt deploy --all
                    --prefect-file deployments/prefect.yaml`` run from the project root with
                    ``CONTEXTMESH_SESSION`` naming the demo session;
* ``worker``        ``prefect worker start --pool contextmesh --type process`` in its own process
                    group, started in a directory outside the project (the pull step must find it),
                    polling every second; stopped before the server (SIGTERM, 15 s, then SIGKILL:
                    a process worker can outlive SIGTERM, docs/prefect-facts.md §9).
"""

from __future__ import annotations

from contextmesh.orchestration.settings import prepare_environment

prepare_environment()  # before anything imports Prefect: quiet clients, no telemetry, no ephemeral server

import asyncio  # noqa: E402
import contextlib  # noqa: E402
import os  # noqa: E402
import secrets  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
import run_notes  # noqa: E402
from deploy_helpers import NOTES, ROOT, TIMINGS, alive, pg_cluster, pg_ctl, pg_online, post, stop_group, timed  # noqa: E402

from contextmesh.orchestration import local_server as server  # noqa: E402
from contextmesh.orchestration.settings import client_settings  # noqa: E402

POOL = "contextmesh"
PG = "postgresql+asyncpg://cm:cm@127.0.0.1:5432"


@dataclass(frozen=True)
class Demo:
    """The demo session the deployments serve."""

    directory: Path
    feed: Path
    home: Path


@dataclass(frozen=True)
class Worker:
    """The process worker: its process, log and the gate directory the gated plan waits at."""

    proc: subprocess.Popen[bytes]
    log: Path
    gate: Path


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` for the block (what ``server.start`` hands its server), restored after."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def pytest_sessionfinish(session: pytest.Session) -> None:
    lines = ["deployments timings (s): " + ", ".join(f"{k} {v}" for k, v in TIMINGS.items())] if TIMINGS else []
    lines += [f"deployments: {name}: {note}" for name, note in NOTES.items()]
    run_notes.leave(session.config, "deployments", lines)  # printed by the root conftest's summary


@pytest.fixture(scope="session")
def postgres() -> Iterator[tuple[str, str]]:
    """The local cluster, online for the session; stopped at the end only if this fixture started it."""
    if shutil.which("pg_ctlcluster") is None or shutil.which("pg_lsclusters") is None:
        pytest.fail("PostgreSQL is not installed: run scripts/install-postgres (as root)")
    version, name = pg_cluster()
    started = not pg_online(version, name)
    if started:
        with timed("postgres start"):
            pg_ctl(version, name, "start")
    try:
        yield version, name
    finally:
        if started:
            pg_ctl(version, name, "stop")


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect("postgresql://cm:cm@127.0.0.1:5432/postgres", timeout=10)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def pg_url(postgres: tuple[str, str]) -> Iterator[str]:
    """A database of its own for this run, owned by ``cm``; dropped at the end."""
    name = f"cm_deploy_{os.getpid()}_{secrets.token_hex(4)}"
    try:
        asyncio.run(_admin(f"create database {name}"))
    except Exception as exc:
        pytest.fail(f"cannot create a database as role cm ({type(exc).__name__}: {exc}); run scripts/install-postgres")
    try:
        yield f"{PG}/{name}"
    finally:
        asyncio.run(_admin(f"drop database if exists {name} with (force)"))


@pytest.fixture(scope="session")
def prefect_api(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Prefect server on the run's PostgreSQL database; the client side points at it."""
    home = tmp_path_factory.mktemp("prefect-pg-server")
    # server.start hands the server this process's environment (settings.server_environment); the
    # database URL and a short lease-repossession loop reach it that way, for the start only.
    with (
        timed("prefect server on PostgreSQL"),
        _environ(PREFECT_SERVER_DATABASE_CONNECTION_URL=pg_url, PREFECT_SERVER_SERVICES_REPOSSESSOR_LOOP_SECONDS="2"),
    ):
        info = server.start(home, port=server.free_port(), ui=False, keep=False, timeout=240)
    try:
        environ = Path(f"/proc/{info.pid}/environ").read_bytes().split(b"\0")
        assert f"PREFECT_SERVER_DATABASE_CONNECTION_URL={pg_url}".encode() in environ
        with client_settings(info.api_url, heartbeat=False):
            yield info.api_url
            server.drain_workers()
    finally:
        server.stop(home)
    assert not server.process_alive(info.pid), "the test server's process outlived the session"


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """A demo session (round 1 run in-process), saved through the CLI."""
    root = tmp_path_factory.mktemp("deploy-demo")
    found = Demo(root / "session", root / "feed.json", root / "home")
    env = {**os.environ, "CONTEXTMESH_HOME": str(found.home)}
    cli = [sys.executable, "-m", "contextmesh", "session", "save", str(found.directory), "--feed", str(found.feed)]
    done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return found


def _create_pool() -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.workers.process import ProcessWorker

    template = ProcessWorker.get_default_base_job_template()
    with get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name=POOL, type="process", base_job_template=template))


@pytest.fixture(scope="session")
def deployed(prefect_api: str, demo: Demo, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The work pool, and deployments/prefect.yaml deployed from the project root for the demo session."""
    _create_pool()
    env = {
        **os.environ,
        "PREFECT_API_URL": prefect_api,
        "PREFECT_HOME": str(tmp_path_factory.mktemp("deploy-prefect-home")),
        "CONTEXTMESH_SESSION": str(demo.directory),
    }
    argv = [
        sys.executable,
        "-m",
        "prefect",
        "--no-prompt",
        "deploy",
        "--all",
        "--prefect-file",
        "deployments/prefect.yaml",
    ]
    with timed("prefect deploy --all"):
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = post(prefect_api, "/deployments/filter", {"limit": 50})
    return {d["name"]: d for d in found}


@pytest.fixture(scope="session")
def worker(
    prefect_api: str, deployed: dict[str, Any], demo: Demo, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Worker]:
    """``prefect worker start --pool contextmesh --type process``, stopped before the server."""
    root = tmp_path_factory.mktemp("process-worker")
    gate = root / "gate"
    gate.mkdir()
    env = {
        **os.environ,
        "PREFECT_API_URL": prefect_api,
        "PREFECT_HOME": str(root / "prefect-home"),
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "PREFECT_LOGGING_LEVEL": "INFO",
        "CONTEXTMESH_HOME": str(root / "contextmesh-home"),
        "CONTEXTMESH_DEMO_FEED": str(demo.feed),
        "CONTEXTMESH_TEST_GATE": str(gate),
    }
    log = root / "worker.log"
    argv = [sys.executable, "-m", "prefect", "worker", "start", "--pool", POOL, "--type", "process"]
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    found = Worker(proc, log, gate)
    try:
        with timed("worker online"):
            deadline = time.monotonic() + 120
            while not post(prefect_api, f"/work_pools/{POOL}/workers/filter", {}):
                assert proc.poll() is None, f"the worker exited ({proc.returncode}):\n{log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"the worker did not come online:\n{log.read_text()[-3000:]}"
                time.sleep(0.5)
        yield found
    finally:
        (gate / "open").touch()  # let any gated worker finish
        with timed("worker stop"):
            NOTES["worker stop"] = stop_group(proc)
    assert not alive(proc.pid), "the worker outlived its stop"

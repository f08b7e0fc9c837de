"""Units of work for pytest-xdist: one per test module, one per part of a Prefect server configuration.

``scripts/test`` runs the suite on xdist workers with ``--dist loadscope``. xdist hands each worker
whole units, and this module decides what a unit is and in which order the units are handed out:

* every test of a module is one unit, so module fixtures are set up once and a module's tests keep
  their order, as in a serial run;
* every module whose tests use a shared Prefect server (``prefect_api``; ``pg_url`` for the one on
  PostgreSQL) joins a unit of that server, so a server starts once per unit. The SQLite server's
  modules together take longer than the whole run may, so they are split over two units
  (``SERVER_SPLIT``), each on its own worker with its own server: one more server start buys two
  workers on that work at once (docs/adr/0029-ci-under-six-minutes.md). The modules are dealt to
  the parts longest first, each to the lighter part, by their expected time;
* a module that defines its own ``prefect_api`` (a server configuration only it uses, such as
  ``tests/orchestration/test_runs_explain.py``'s server with the UI) is a unit of its own;
* the units are handed out longest first (``EXPECTED_SECONDS``: what the long modules took, measured;
  a module not listed counts ``SLOW_SECONDS`` if it holds a test marked ``slow``, else
  ``DEFAULT_SECONDS``), so that no long unit starts last and runs alone at the end;
* a worker is handed its next unit when it starts the last test of its current one (xdist's own
  rule hands it out two tests earlier, which ties a waiting unit to a worker still busy with a long
  test while another worker may be free).

Only the workers see the tests' fixtures, so each worker writes the unit of every node id to a file
the controller named (``workerinput``), and the controller's scheduler reads it when it splits the
collection. (``--dist loadgroup`` with ``xdist_group`` marks would say the same, but pytest 9.2's
node ids no longer take the suffix that xdist 3.8 writes to group them.)
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "EXPECTED_SECONDS",
    "SERVER_SPLIT",
    "SERVER_UNITS",
    "UNITS",
    "configure_node",
    "make_scheduler",
    "order_and_record",
    "start",
    "stop",
]

# The fixture that marks each server configuration; ``pg_url`` first: a deployments test has both.
SERVER_UNITS = {"pg_url": "prefect-postgres", "prefect_api": "prefect-sqlite"}
# How many units (each with its own server) a server configuration's modules are split over.
SERVER_SPLIT = {"prefect-sqlite": 2}
# What a server start adds to its unit.
SERVER_START_SECONDS = 15.0
# Seconds the modules of 15 s or more took on one worker in one loaded run of the whole suite
# (load average 5-18 on two cores: several times a quiet machine's figures). Only their order and
# ratios matter: they decide which SQLite part a module joins and which unit goes out first.
EXPECTED_SECONDS = {
    "tests/orchestration/test_project_deployments.py": 830.0,
    "tests/session/test_session_crash.py": 415.0,
    "tests/orchestration/test_serve_reacts.py": 408.0,
    "tests/cli/test_cli_fuzz.py": 364.0,
    "tests/orchestration/test_rerun_from.py": 214.0,
    "tests/orchestration/test_churn_scenario.py": 212.0,
    "tests/session/test_session_hostile.py": 205.0,
    "tests/cli/test_cli_ingest.py": 205.0,
    "tests/mcp/test_mcp_exposure.py": 204.0,
    "tests/orchestration/test_orch_server.py": 195.0,
    "tests/mcp/test_mcp_transports.py": 190.0,
    "tests/deployments/test_deploy_postgres.py": 177.0,
    "tests/orchestration/test_runs_explain.py": 175.0,
    "tests/orchestration/test_readme_project.py": 169.0,
    "tests/orchestration/test_tutorial.py": 164.0,
    "tests/orchestration/test_serve_e2e.py": 162.0,
    "tests/mcp/test_mcp_dispatch.py": 147.0,
    "tests/session/test_session.py": 112.0,
    "tests/belief/test_invalidation.py": 109.0,
    "tests/session/test_session_journal.py": 98.0,
    "tests/orchestration/test_cli_prefect_refusals.py": 97.0,
    "tests/mcp/test_mcp_inspector.py": 96.0,
    "tests/orchestration/test_demo_on_prefect.py": 92.0,
    "tests/mcp/test_mcp_subscriptions.py": 84.0,
    "tests/cli/test_cli_ledger_scale.py": 82.0,
    "tests/cli/test_cli_errors.py": 79.0,
    "tests/session/test_session_commit_failures.py": 76.0,
    "tests/cli/test_cli_commits.py": 67.0,
    "tests/dashboard/test_dashboard_project.py": 66.0,
    "tests/mcp/test_mcp_project.py": 63.0,
    "tests/cli/test_cli.py": 62.0,
    "tests/orchestration/test_orch_dask.py": 60.0,
    "tests/session/test_session_concurrency.py": 56.0,
    "tests/testing/test_generate.py": 55.0,
    "tests/test_packaging.py": 54.0,
    "tests/mcp/test_mcp_protocol.py": 53.0,
    "tests/mcp/test_mcp_slow_clients.py": 51.0,
    "tests/cli/test_cli_watching.py": 51.0,
    "tests/deployments/test_deploy_sigkill.py": 46.0,
    "tests/dashboard/test_dashboard_payload.py": 40.0,
    "tests/knowledge/test_health.py": 35.0,
    "tests/demo/test_demo_off_every_surface.py": 34.0,
    "tests/cli/test_cli_no_plan.py": 33.0,
    "tests/orchestration/test_orch_walkthrough.py": 33.0,
    "tests/demo/test_execute_demo.py": 31.0,
    "tests/cli/test_cli_project.py": 30.0,
    "tests/execution/test_early_cutoff.py": 30.0,
    "tests/formats/test_graph_columns.py": 27.0,
    "tests/orchestration/test_invalidation_bench.py": 27.0,
    "tests/orchestration/test_deploy_units.py": 25.0,
    "tests/dashboard/test_dashboard_browser.py": 24.0,
    "tests/cli/test_cli_ledger.py": 24.0,
    "tests/dashboard/test_dashboard_scale.py": 24.0,
    "tests/mcp/test_mcp_writes.py": 23.0,
    "tests/test_deployment_layout.py": 22.0,
    "tests/cli/test_cli_ledger_since.py": 22.0,
    "tests/formats/test_ledger_verifier.py": 21.0,
    "tests/knowledge/test_answers_parts.py": 19.0,
    "tests/orchestration/test_orch_rounds.py": 19.0,
    "tests/knowledge/test_pipeline.py": 19.0,
    "tests/session/test_session_receipts.py": 19.0,
    "tests/session/test_session_corruption.py": 18.0,
    "tests/test_module_sizes.py": 18.0,
    "tests/project/test_sessions.py": 17.0,
    "tests/orchestration/test_run_report.py": 17.0,
    "tests/orchestration/test_orch_documents.py": 16.0,
    "tests/knowledge/test_increment.py": 16.0,
    "tests/execution/test_tracked_reads.py": 15.0,
    "tests/project/test_binding.py": 15.0,
    "tests/execution/test_cutoff_properties.py": 15.0,
    "tests/execution/test_repair_shared_ground.py": 15.0,
    "tests/orchestration/test_slot_lease.py": 15.0,
    "tests/orchestration/test_cutoff_on_prefect.py": 10.0,
}
SLOW_SECONDS = 20.0
DEFAULT_SECONDS = 2.0
_INPUT = "contextmesh_units"
_DIRECTORY = pytest.StashKey[Path]()
UNITS = pytest.StashKey[dict[str, str]]()  # on a worker: node id -> unit (for server_lifetime)


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def start(config: pytest.Config) -> None:
    """On the controller: the directory the workers write their units to."""
    if not hasattr(config, "workerinput"):
        config.stash[_DIRECTORY] = Path(tempfile.mkdtemp(prefix="contextmesh-units-"))


def stop(config: pytest.Config) -> None:
    directory = config.stash.get(_DIRECTORY, None)
    if directory is not None:
        for path in directory.iterdir():
            path.unlink()
        directory.rmdir()


def configure_node(node: Any) -> None:
    """On the controller, for each worker: where it writes its units."""
    node.workerinput[_INPUT] = str(node.config.stash[_DIRECTORY])


def _own_server(item: Any, fixture: str) -> bool:
    """True when ``item``'s module defines ``fixture`` itself (a server configuration of its own)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.get(fixture) if info is not None else None
    return bool(defs) and str(defs[-1].baseid) == _module(item.nodeid)


def _servers(items: list[Any]) -> tuple[dict[str, str], set[str]]:
    """Each module's shared server configuration (or its own module name), and the modules holding a slow test."""
    servers: dict[str, str] = {}
    slow: set[str] = set()
    for item in items:
        module = _module(item.nodeid)
        names = set(getattr(item, "fixturenames", ()))
        fixture = next((name for name in SERVER_UNITS if name in names), None)
        if fixture is not None:  # one test using a server takes the whole module into its unit
            servers[module] = module if _own_server(item, fixture) else SERVER_UNITS[fixture]
        else:
            servers.setdefault(module, module)
        if item.get_closest_marker("slow") is not None:
            slow.add(module)
    return servers, slow


def _expected(module: str, slow: set[str]) -> float:
    return EXPECTED_SECONDS.get(module, SLOW_SECONDS if module in slow else DEFAULT_SECONDS)


def _deal(modules: list[str], parts: list[str], slow: set[str]) -> dict[str, str]:
    """Deal ``modules`` to ``parts``: longest first, each to the part with the least expected time so far."""
    load = dict.fromkeys(parts, 0.0)
    dealt: dict[str, str] = {}
    for module in sorted(modules, key=lambda name: (-_expected(name, slow), name)):
        part = min(parts, key=lambda name: (load[name], parts.index(name)))
        dealt[module] = part
        load[part] += _expected(module, slow)
    return dealt


def _units(items: list[Any]) -> tuple[dict[str, str], dict[str, float]]:
    """Each module's unit, and each unit's expected seconds."""
    servers, slow = _servers(items)
    units = {module: server for module, server in servers.items() if server == module}
    for server in sorted(set(servers.values()) - set(units.values())):
        split = SERVER_SPLIT.get(server, 1)
        parts = [server] + [f"{server}-{index}" for index in range(2, split + 1)]
        units.update(_deal([module for module, of in servers.items() if of == server], parts, slow))
    expected: dict[str, float] = {}
    for module, unit in units.items():
        expected[unit] = expected.get(unit, SERVER_START_SECONDS if unit != module else 0.0) + _expected(module, slow)
    return units, expected


def order_and_record(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker: order the units longest first and write every node id's unit for the controller."""
    where = getattr(config, "workerinput", {}).get(_INPUT)
    if where is None:
        return
    units, expected = _units(items)
    first = {}  # a unit's first place in the collection: the tie-breaker, so equal units keep their order
    for index, item in enumerate(items):
        first.setdefault(units[_module(item.nodeid)], index)
    items.sort(key=lambda item: (-expected[units[_module(item.nodeid)]], first[units[_module(item.nodeid)]]))
    of_node = {item.nodeid: units[_module(item.nodeid)] for item in items}
    config.stash[UNITS] = of_node
    target = Path(where) / f"units-{config.workerinput['workerid']}.json"  # type: ignore[attr-defined]
    scratch = target.with_suffix(".tmp")
    scratch.write_text(json.dumps(of_node), encoding="utf-8")
    scratch.replace(target)


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The controller's scheduler for ``--dist loadscope``: xdist's, with the units above."""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    directory = config.stash[_DIRECTORY]

    class ServerUnits(LoadScopeScheduling):  # type: ignore[misc]
        units: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.units is None:  # every worker has collected by the time the collection is split
                found = sorted(directory.glob("units-*.json"))
                self.units = json.loads(found[0].read_text(encoding="utf-8")) if found else {}
            return self.units.get(nodeid, _module(nodeid))

        def _reschedule(self, node: Any) -> None:
            # A worker runs a test only once it knows the next one, so it needs more work when one
            # test of its units is left, not (xdist's rule) two.
            if not node.shutting_down and self.workqueue and self._pending_of(self.assigned_work[node]) > 1:
                return
            super()._reschedule(node)

    return ServerUnits(config, log)

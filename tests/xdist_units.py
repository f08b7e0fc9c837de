"""Units of work for pytest-xdist: one per test module, one per Prefect server configuration.

``scripts/test`` runs the suite on three workers with ``--dist loadscope``. xdist hands each worker
whole units, and this module decides what a unit is:

* every test of a module is one unit, so module fixtures are set up once and a module's tests keep
  their order, as in a serial run;
* every module whose tests use a Prefect server (``prefect_api``; ``pg_url`` for the one on
  PostgreSQL) joins that server's unit, so each server configuration starts once in the whole run;
* a module that defines its own ``prefect_api`` (a server configuration only it uses, such as
  ``tests/orchestration/test_runs_explain.py``'s server with the UI) is a unit of its own: it
  needs nothing from the shared server, so it runs beside that server's unit on another worker
  instead of adding its whole length to it;
* the server units are handed out first: they take longest; then the modules with their own
  server, then the modules holding a test marked ``slow``, so that no long module starts last and
  runs alone at the end.

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

__all__ = ["SERVER_ORDER", "SERVER_UNITS", "configure_node", "make_scheduler", "order_and_record", "start", "stop"]

# The fixture that marks each server configuration; ``pg_url`` first: a deployments test has both.
SERVER_UNITS = {"pg_url": "prefect-postgres", "prefect_api": "prefect-sqlite"}
# The order their units are handed out: the SQLite server's tests take longest, so they start first.
SERVER_ORDER = ("prefect-sqlite", "prefect-postgres")
_INPUT = "contextmesh_units"
_DIRECTORY = pytest.StashKey[Path]()


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


def order_and_record(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker: put the server units first and write every node id's unit for the controller."""
    where = getattr(config, "workerinput", {}).get(_INPUT)
    if where is None:
        return
    units: dict[str, str] = {}
    own: set[str] = set()
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        fixture = next((name for name in SERVER_UNITS if name in names), None)
        server = None if fixture is None else SERVER_UNITS[fixture]
        if fixture is not None and _own_server(item, fixture):
            server = _module(item.nodeid)
            own.add(server)
        if server is not None or _module(item.nodeid) not in units:
            units[_module(item.nodeid)] = server or _module(item.nodeid)
    slow = {_module(item.nodeid) for item in items if item.get_closest_marker("slow") is not None}
    rank = {unit: index for index, unit in enumerate(SERVER_ORDER)}
    rank.update({unit: len(SERVER_ORDER) for unit in sorted(own)})  # after the shared servers
    rank.update({unit: len(SERVER_ORDER) + 1 for unit in sorted(slow) if unit not in rank})
    rest = len(SERVER_ORDER) + 2
    items.sort(key=lambda item: rank.get(units[_module(item.nodeid)], rest))  # stable: order kept within
    target = Path(where) / f"units-{config.workerinput['workerid']}.json"  # type: ignore[attr-defined]
    scratch = target.with_suffix(".tmp")
    scratch.write_text(json.dumps({item.nodeid: units[_module(item.nodeid)] for item in items}), encoding="utf-8")
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

    return ServerUnits(config, log)

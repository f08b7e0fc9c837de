"""The xdist units of a worker's collection: one per server configuration, handed out first, then slow modules.

:func:`xdist_units.order_and_record` runs on every worker after collection; these tests hand it a
collection of stand-in items (a node id, the fixtures it uses, its markers) and read back the order
it leaves and the units it writes for the controller's scheduler.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xdist_units


@dataclass
class _Def:
    baseid: str


@dataclass
class _Info:
    name2fixturedefs: dict[str, list[_Def]]


@dataclass
class _Item:
    nodeid: str
    fixturenames: tuple[str, ...] = ()
    markers: tuple[str, ...] = ()
    _fixtureinfo: _Info | None = None

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


@dataclass
class _Config:
    workerinput: dict[str, Any] = field(default_factory=dict)


COLLECTION = [
    _Item("tests/a/test_plain.py::test_one"),
    _Item("tests/a/test_slow.py::test_fast"),
    _Item("tests/a/test_slow.py::test_slow", markers=("slow",)),
    _Item("tests/mcp/test_dispatch.py::test_units"),
    _Item("tests/mcp/test_dispatch.py::test_served", fixturenames=("prefect_api",)),
    _Item("tests/deployments/test_pg.py::test_deploy", fixturenames=("prefect_api", "pg_url")),
    _Item("tests/orchestration/test_rounds.py::test_round", fixturenames=("prefect_api",)),
    _Item(  # defines prefect_api itself: a server configuration of its own
        "tests/orchestration/test_explain.py::test_ui",
        fixturenames=("prefect_api",),
        _fixtureinfo=_Info({"prefect_api": [_Def("tests"), _Def("tests/orchestration/test_explain.py")]}),
    ),
    _Item("tests/z/test_last.py::test_two"),
]


def _ordered(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    items: list[Any] = list(COLLECTION)
    config: Any = _Config({"contextmesh_units": str(tmp_path), "workerid": "gw0"})
    xdist_units.order_and_record(config, items)
    return [i.nodeid for i in items], json.loads((tmp_path / "units-gw0.json").read_text(encoding="utf-8"))


def test_each_server_configuration_is_one_unit_and_a_module_joins_its_server_whole(tmp_path: Path) -> None:
    _, units = _ordered(tmp_path)
    assert units["tests/mcp/test_dispatch.py::test_units"] == "prefect-sqlite"  # a plain test of a server module
    assert units["tests/mcp/test_dispatch.py::test_served"] == "prefect-sqlite"
    assert units["tests/orchestration/test_rounds.py::test_round"] == "prefect-sqlite"
    assert units["tests/deployments/test_pg.py::test_deploy"] == "prefect-postgres"  # pg_url wins over prefect_api
    assert units["tests/orchestration/test_explain.py::test_ui"] == "tests/orchestration/test_explain.py"
    assert units["tests/a/test_slow.py::test_fast"] == "tests/a/test_slow.py"
    assert set(units) == {i.nodeid for i in COLLECTION}


def test_server_units_go_first_then_own_server_modules_then_modules_with_a_slow_test_then_the_rest(
    tmp_path: Path,
) -> None:
    order, _ = _ordered(tmp_path)
    assert order == [
        "tests/mcp/test_dispatch.py::test_units",
        "tests/mcp/test_dispatch.py::test_served",
        "tests/orchestration/test_rounds.py::test_round",
        "tests/deployments/test_pg.py::test_deploy",
        "tests/orchestration/test_explain.py::test_ui",
        "tests/a/test_slow.py::test_fast",
        "tests/a/test_slow.py::test_slow",
        "tests/a/test_plain.py::test_one",
        "tests/z/test_last.py::test_two",
    ]


def test_outside_xdist_the_collection_is_left_as_it_is(tmp_path: Path) -> None:
    items: list[Any] = list(COLLECTION)
    xdist_units.order_and_record(_Config(), items)  # type: ignore[arg-type]
    assert items == COLLECTION and not list(tmp_path.iterdir())

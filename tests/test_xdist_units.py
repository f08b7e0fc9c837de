"""The xdist units of a worker's collection: server configurations split over their parts, handed out longest first.

:func:`xdist_units.order_and_record` runs on every worker after collection; these tests hand it a
collection of stand-in items (a node id, the fixtures it uses, its markers) and read back the order
it leaves and the units it writes for the controller's scheduler.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
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
    stash: dict[Any, Any] = field(default_factory=dict)


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


def test_a_server_configuration_is_split_over_its_parts_and_a_module_joins_one_part_whole(tmp_path: Path) -> None:
    _, units = _ordered(tmp_path)
    # The two SQLite-server modules (equal expected time) are dealt one to each part, by name.
    assert units["tests/mcp/test_dispatch.py::test_units"] == "prefect-sqlite"  # a plain test of a server module
    assert units["tests/mcp/test_dispatch.py::test_served"] == "prefect-sqlite"
    assert units["tests/orchestration/test_rounds.py::test_round"] == "prefect-sqlite-2"
    assert units["tests/deployments/test_pg.py::test_deploy"] == "prefect-postgres"  # pg_url wins over prefect_api
    assert units["tests/orchestration/test_explain.py::test_ui"] == "tests/orchestration/test_explain.py"
    assert units["tests/a/test_slow.py::test_fast"] == "tests/a/test_slow.py"
    assert set(units) == {i.nodeid for i in COLLECTION}
    assert xdist_units.SERVER_SPLIT == {"prefect-sqlite": 2}


def test_units_go_out_longest_first_a_server_unit_counting_its_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(xdist_units, "EXPECTED_SECONDS", {"tests/z/test_last.py": 100.0})
    order, _ = _ordered(tmp_path)
    assert order == [
        "tests/z/test_last.py::test_two",  # 100 s, listed
        "tests/a/test_slow.py::test_fast",  # SLOW_SECONDS: not listed, holds a slow test
        "tests/a/test_slow.py::test_slow",
        "tests/mcp/test_dispatch.py::test_units",  # DEFAULT_SECONDS + a server start
        "tests/mcp/test_dispatch.py::test_served",
        "tests/deployments/test_pg.py::test_deploy",  # as long: collection order between them
        "tests/orchestration/test_rounds.py::test_round",
        "tests/a/test_plain.py::test_one",  # DEFAULT_SECONDS
        "tests/orchestration/test_explain.py::test_ui",
    ]


def test_a_split_server_deals_its_modules_longest_first_to_the_lighter_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    times = {"tests/s/test_a.py": 10.0, "tests/s/test_b.py": 8.0, "tests/s/test_c.py": 5.0, "tests/s/test_d.py": 4.0}
    monkeypatch.setattr(xdist_units, "EXPECTED_SECONDS", times)
    items: list[Any] = [_Item(f"{module}::test_it", fixturenames=("prefect_api",)) for module in sorted(times)]
    config: Any = _Config({"contextmesh_units": str(tmp_path), "workerid": "gw0"})
    xdist_units.order_and_record(config, items)
    units = json.loads((tmp_path / "units-gw0.json").read_text(encoding="utf-8"))
    parts = {unit: sorted(n.split("::")[0] for n, u in units.items() if u == unit) for unit in set(units.values())}
    assert parts == {
        "prefect-sqlite": ["tests/s/test_a.py", "tests/s/test_d.py"],  # 10 + 4
        "prefect-sqlite-2": ["tests/s/test_b.py", "tests/s/test_c.py"],  # 8 + 5
    }
    assert config.stash[xdist_units.UNITS] == units  # what server_lifetime reads on the worker


def test_every_module_with_an_expected_time_exists() -> None:
    root = Path(__file__).parent.parent
    assert [m for m in xdist_units.EXPECTED_SECONDS if not (root / m).is_file()] == []


def test_outside_xdist_the_collection_is_left_as_it_is(tmp_path: Path) -> None:
    items: list[Any] = list(COLLECTION)
    xdist_units.order_and_record(_Config(), items)  # type: ignore[arg-type]
    assert items == COLLECTION and not list(tmp_path.iterdir())

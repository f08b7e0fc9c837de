"""Imports inside ``contextmesh/`` point down the layer table only (docs/architecture.md, "Layers").

Every module under ``contextmesh/`` is parsed with ``ast``; every import is checked, at module
level or inside a function, ``import x`` or ``from x import y``, relative imports resolved, and
literal ``importlib.import_module("...")`` / ``__import__("...")`` calls counted as imports. A
module missing from :data:`LAYERS` fails the test: add it to the table.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "contextmesh"

TOOLING = 100  # may import any layer; no layer-1..10 module may import it
ROOT = "contextmesh"  # the package __init__: imports layers 1-8; only layers 9-10 and tooling import it

# The one table to edit. A key ending in ".*" covers that package and every module under it.
LAYERS: dict[str, int] = {
    "contextmesh.core.*": 1,  # errors, canonical bytes, ids, the ontology, records, the graph
    "contextmesh.knowledge.*": 2,  # documents, text, extraction, resolution, embedding, pipeline, walks, health
    "contextmesh.belief.*": 3,  # assumptions, invalidation, decisions, evidence, time
    "contextmesh.formats.*": 4,  # each file format's strict loader and writer
    "contextmesh.execution.*": 5,  # registry, plan, contexts, executor contract; Prefect-free
    "contextmesh.session.*": 6,  # generations, commits, the lock, loading
    "contextmesh.project.*": 7,  # a user's project: contextmesh.toml, its registry and plan
    ROOT: 8,  # the public API re-exports layers 1-7
    "contextmesh.orchestration.*": 9,  # the only engine package that imports Prefect
    "contextmesh.demo.*": 9,  # the bundled demo, an ordinary user of the public API
    "contextmesh.cli.*": 10,
    "contextmesh.mcp.*": 10,
    "contextmesh.dashboard.*": 10,
    "contextmesh.__main__": 10,
    "contextmesh.testing.*": TOOLING,
}

# Third-party or deployment packages and the only modules allowed to import them (empty: nobody).
RESTRICTED: dict[str, tuple[str, ...]] = {
    "prefect": ("contextmesh.orchestration.*",),
    "mcp": ("contextmesh.mcp.server",),
    "flows": (),
    "registry": (),
    "deployments": (),
}


def matches(module: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        package = pattern[:-2]
        return module == package or module.startswith(package + ".")
    return module == pattern


def layer_of(module: str) -> float | None:
    if module in LAYERS:
        return LAYERS[module]
    best = max((p for p in LAYERS if p.endswith(".*") and matches(module, p)), key=len, default=None)
    return None if best is None else LAYERS[best]


@dataclass(frozen=True)
class Source:
    text: str
    is_package: bool


def discover() -> dict[str, Source]:
    """Every module under contextmesh/ by dotted name."""
    modules: dict[str, Source] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        modules[name] = Source(path.read_text(encoding="utf-8"), is_package)
    return modules


def imports_of(name: str, source: Source, known: set[str]) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in the module, wherever it appears."""
    package = name if source.is_package else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source.text)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.append((node.lineno, candidate if candidate in known else base))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            dynamic = (isinstance(func, ast.Name) and func.id == "__import__") or (
                isinstance(func, ast.Attribute) and func.attr == "import_module"
            )
            if dynamic and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def violations(modules: dict[str, Source]) -> list[str]:
    known = set(modules)
    problems: list[str] = []
    for name, source in sorted(modules.items()):
        mine = layer_of(name)
        if mine is None:
            problems.append(f"{name}: not in the layer table of tests/test_layering.py; add it")
            continue
        for line, target in dict.fromkeys(imports_of(name, source, known)):
            where = f"{name}:{line} imports {target}"
            top = target.split(".")[0]
            if top != "contextmesh":
                allowed = RESTRICTED.get(top)
                if allowed is not None and not any(matches(name, p) for p in allowed):
                    who = f"only {list(allowed)}" if allowed else "nothing under contextmesh"
                    problems.append(f"{where}: {who} may import {top}")
                continue
            theirs = layer_of(target)
            if theirs is None:
                problems.append(f"{where}: {target} is not in the layer table")
            elif theirs == TOOLING and mine != TOOLING:
                problems.append(f"{where}: no layer module may import tooling")
            elif mine != TOOLING and theirs > mine:
                problems.append(f"{where}: layer {mine} may not import layer {theirs}")
    return problems


# -- the real tree ---------------------------------------------------------------------------


def test_every_module_imports_only_its_own_or_a_lower_layer() -> None:
    modules = discover()
    assert {"contextmesh", "contextmesh.core.graph", "contextmesh.core.canonical"} <= set(modules)
    assert violations(modules) == []


def test_the_table_knows_every_module_in_the_tree() -> None:
    unknown = [name for name in discover() if layer_of(name) is None]
    assert unknown == []


def test_the_table_has_one_integer_row_per_package_of_the_tree() -> None:
    packages = {p.name for p in PACKAGE_DIR.iterdir() if (p / "__init__.py").is_file()}
    rows = {key.split(".")[1] for key in LAYERS if key.endswith(".*")}
    assert packages <= rows
    assert all(type(layer) is int for layer in LAYERS.values())


def test_the_top_of_the_package_holds_only_packages_and_the_two_entry_modules() -> None:
    loose = sorted(p.name for p in PACKAGE_DIR.glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"]


def test_the_package_init_sits_above_every_engine_layer_and_below_orchestration() -> None:
    engine = [
        v
        for k, v in LAYERS.items()
        if k != ROOT
        and k.split(".")[1] in {"core", "knowledge", "belief", "formats", "execution", "session", "project"}
    ]
    assert LAYERS[ROOT] > max(engine)
    assert LAYERS[ROOT] < LAYERS["contextmesh.orchestration.*"]


# -- the checker itself ----------------------------------------------------------------------


def fake(*pairs: tuple[str, str, bool]) -> list[str]:
    return violations({name: Source(text, is_package) for name, text, is_package in pairs})


def test_an_upward_import_is_caught() -> None:
    found = fake(
        ("contextmesh.core.graph", "from contextmesh.knowledge.pipeline import Pipeline\n", False),
        ("contextmesh.knowledge.pipeline", "", False),
    )
    assert found == ["contextmesh.core.graph:1 imports contextmesh.knowledge.pipeline: layer 1 may not import layer 2"]


def test_a_function_level_import_is_caught() -> None:
    found = fake(("contextmesh.core.canonical", "def f():\n    import contextmesh.belief.assumptions\n", False))
    assert found == [
        "contextmesh.core.canonical:2 imports contextmesh.belief.assumptions: layer 1 may not import layer 3"
    ]


def test_a_relative_import_is_resolved() -> None:
    found = fake(
        ("contextmesh.formats", "", True),
        ("contextmesh.formats.graph_file", "from ..session import store\nfrom . import records\n", False),
        ("contextmesh.formats.records", "from ..core import graph\n", False),
        ("contextmesh.core.graph", "", False),
    )
    assert found == ["contextmesh.formats.graph_file:1 imports contextmesh.session: layer 4 may not import layer 6"]


def test_from_package_import_name_resolves_to_the_submodule() -> None:
    ok = fake(
        ("contextmesh.core.graph", "from contextmesh.core import vectors\n", False),
        ("contextmesh.core.vectors", "", False),
    )
    assert ok == []
    found = fake(("contextmesh.core.graph", "from contextmesh import ContextGraph\n", False))
    assert found == ["contextmesh.core.graph:1 imports contextmesh: layer 1 may not import layer 8"]


def test_a_module_missing_from_the_table_is_caught() -> None:
    assert fake(("contextmesh.utils", "", False)) == [
        "contextmesh.utils: not in the layer table of tests/test_layering.py; add it"
    ]


def test_importing_a_module_missing_from_the_table_is_caught() -> None:
    found = fake(("contextmesh.cli", "import contextmesh.helpers\n", False))
    assert found == ["contextmesh.cli:1 imports contextmesh.helpers: contextmesh.helpers is not in the layer table"]


def test_the_package_init_may_not_import_orchestration() -> None:
    found = fake(("contextmesh", "from contextmesh.orchestration import flow_bodies\n", True))
    assert found == ["contextmesh:1 imports contextmesh.orchestration: layer 8 may not import layer 9"]
    assert fake(("contextmesh", "from contextmesh.session import Session\n", True)) == []


def test_prefect_is_imported_only_under_orchestration() -> None:
    assert fake(("contextmesh.orchestration.prefect_executor", "import prefect\n", False)) == []
    assert fake(("contextmesh.orchestration", "from prefect import flow\n", True)) == []
    found = fake(("contextmesh.cli", "def run():\n    from prefect.client import get_client\n", False))
    assert found == [
        "contextmesh.cli:2 imports prefect.client: only ['contextmesh.orchestration.*'] may import prefect"
    ]


def test_mcp_is_imported_only_by_the_mcp_server() -> None:
    assert fake(("contextmesh.mcp.server", "from mcp.server.fastmcp import FastMCP\n", False)) == []
    found = fake(("contextmesh.mcp.read_tools", "import mcp\n", False))
    assert found == ["contextmesh.mcp.read_tools:1 imports mcp: only ['contextmesh.mcp.server'] may import mcp"]


def test_a_sibling_module_named_like_a_restricted_package_is_not_confused_with_it() -> None:
    found = fake(
        ("contextmesh.execution", "", True),
        ("contextmesh.execution.task_registry", "", False),
        ("contextmesh.execution.plan", "from .task_registry import TaskRegistry\nfrom . import task_registry\n", False),
        ("contextmesh.mcp", "from . import server\n", True),
        ("contextmesh.mcp.server", "", False),
    )
    assert found == []


@pytest.mark.parametrize("package", ["flows", "registry", "deployments"])
def test_deployment_code_is_never_imported(package: str) -> None:
    found = fake(("contextmesh.cli", f"import {package}.demo\n", False))
    assert found == [f"contextmesh.cli:1 imports {package}.demo: nothing under contextmesh may import {package}"]


def test_a_dynamic_import_by_literal_name_is_checked() -> None:
    found = fake(
        ("contextmesh.core.ids", "import importlib\nimportlib.import_module('contextmesh.belief.evidence')\n", False)
    )
    assert found == ["contextmesh.core.ids:2 imports contextmesh.belief.evidence: layer 1 may not import layer 3"]


def test_tooling_may_import_anything_and_nothing_may_import_tooling() -> None:
    assert fake(("contextmesh.testing.fixtures", "import contextmesh.cli\nimport contextmesh\n", False)) == []
    found = fake(("contextmesh.cli", "from contextmesh.testing import fixtures\n", False))
    assert found == ["contextmesh.cli:1 imports contextmesh.testing: no layer module may import tooling"]


def test_same_layer_imports_are_allowed() -> None:
    assert (
        fake(("contextmesh.core.decision_identity", "from contextmesh.core.graph import ContextGraph\n", False)) == []
    )
    assert fake(("contextmesh.core.ids", "from contextmesh.core.canonical import text_hash\n", False)) == []

"""Imports inside ``contextmesh/`` point down the layer table only (ARCHITECTURE.md, "Layers").

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
LAYERS: dict[str, float] = {
    # 1 foundations
    "contextmesh.errors": 1,
    "contextmesh.canonical": 1,
    "contextmesh.ids": 1,
    "contextmesh.vectors": 1,
    # 2 schema
    "contextmesh.ontology": 2,
    "contextmesh.model": 2,
    # 3 storage
    "contextmesh.graph": 3,
    "contextmesh.decision_identity": 3,
    # 4 knowledge
    "contextmesh.pipeline": 4,
    "contextmesh.resolve": 4,
    "contextmesh.embed": 4,
    "contextmesh.traverse": 4,
    "contextmesh.health": 4,
    "contextmesh.extract": 4,
    "contextmesh.corpus": 4,
    "contextmesh.text": 4,  # the tokenizer the knowledge modules share; imports nothing of ours
    "contextmesh.knowledge.*": 4,
    # 5 belief
    "contextmesh.assumptions": 5,
    "contextmesh.invalidation": 5,
    "contextmesh.decisions": 5,
    "contextmesh.evidence": 5,
    "contextmesh.temporal": 5,
    "contextmesh.reconstruct": 5,
    # 6 formats
    "contextmesh.formats.*": 6,
    "contextmesh.ledger": 6,
    # 7 execution
    "contextmesh.execution.*": 7,
    # 8 sessions
    "contextmesh.session.*": 8,
    # the package __init__ sits between sessions and orchestration
    ROOT: 8.5,
    # the bundled demo records belief and runs a plan, so it sits above sessions (docs/adr/0001)
    "contextmesh.demo.*": 8.7,
    # 9 orchestration
    "contextmesh.orchestration.*": 9,
    # the bridge from MCP's recheck/resume to the served deployments: builds the MCP result models
    "contextmesh.orchestration.mcp_dispatch": 10,
    # 10 surfaces
    "contextmesh.cli.*": 10,
    "contextmesh.render": 10,
    "contextmesh.__main__": 10,
    "contextmesh.mcp.*": 10,
    "contextmesh.dashboard.*": 10,
    # tooling
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
    assert {"contextmesh", "contextmesh.graph", "contextmesh.canonical"} <= set(modules)
    assert violations(modules) == []


def test_the_table_knows_every_module_in_the_tree() -> None:
    unknown = [name for name in discover() if layer_of(name) is None]
    assert unknown == []


def test_the_package_init_may_import_layers_one_to_eight_only() -> None:
    assert LAYERS[ROOT] > 8
    assert LAYERS[ROOT] < min(v for k, v in LAYERS.items() if matches("contextmesh.orchestration.flows", k))


# -- the checker itself ----------------------------------------------------------------------


def fake(*pairs: tuple[str, str, bool]) -> list[str]:
    return violations({name: Source(text, is_package) for name, text, is_package in pairs})


def test_an_upward_import_is_caught() -> None:
    found = fake(
        ("contextmesh.graph", "from contextmesh.pipeline import Pipeline\n", False),
        ("contextmesh.pipeline", "", False),
    )
    assert found == ["contextmesh.graph:1 imports contextmesh.pipeline: layer 3 may not import layer 4"]


def test_a_function_level_import_is_caught() -> None:
    found = fake(("contextmesh.canonical", "def f():\n    import contextmesh.graph\n", False))
    assert found == ["contextmesh.canonical:2 imports contextmesh.graph: layer 1 may not import layer 3"]


def test_a_relative_import_is_resolved() -> None:
    found = fake(
        ("contextmesh.formats", "", True),
        ("contextmesh.formats.graph_file", "from ..session import store\nfrom . import records\n", False),
        ("contextmesh.formats.records", "from .. import graph\n", False),
        ("contextmesh.graph", "", False),
    )
    assert found == ["contextmesh.formats.graph_file:1 imports contextmesh.session: layer 6 may not import layer 8"]


def test_from_package_import_name_resolves_to_the_submodule() -> None:
    ok = fake(("contextmesh.graph", "from contextmesh import vectors\n", False), ("contextmesh.vectors", "", False))
    assert ok == []
    found = fake(("contextmesh.graph", "from contextmesh import ContextGraph\n", False))
    assert found == ["contextmesh.graph:1 imports contextmesh: layer 3 may not import layer 8.5"]


def test_a_module_missing_from_the_table_is_caught() -> None:
    assert fake(("contextmesh.utils", "", False)) == [
        "contextmesh.utils: not in the layer table of tests/test_layering.py; add it"
    ]


def test_importing_a_module_missing_from_the_table_is_caught() -> None:
    found = fake(("contextmesh.cli", "import contextmesh.helpers\n", False))
    assert found == ["contextmesh.cli:1 imports contextmesh.helpers: contextmesh.helpers is not in the layer table"]


def test_the_package_init_may_not_import_orchestration() -> None:
    found = fake(("contextmesh", "from contextmesh.orchestration import flows\n", True))
    assert found == ["contextmesh:1 imports contextmesh.orchestration: layer 8.5 may not import layer 9"]
    assert fake(("contextmesh", "from contextmesh.session import Session\n", True)) == []


def test_prefect_is_imported_only_under_orchestration() -> None:
    assert fake(("contextmesh.orchestration.executor", "import prefect\n", False)) == []
    assert fake(("contextmesh.orchestration", "from prefect import flow\n", True)) == []
    found = fake(("contextmesh.cli", "def run():\n    from prefect.client import get_client\n", False))
    assert found == [
        "contextmesh.cli:2 imports prefect.client: only ['contextmesh.orchestration.*'] may import prefect"
    ]


def test_mcp_is_imported_only_by_the_mcp_server() -> None:
    assert fake(("contextmesh.mcp.server", "from mcp.server.fastmcp import FastMCP\n", False)) == []
    found = fake(("contextmesh.mcp.tools", "import mcp\n", False))
    assert found == ["contextmesh.mcp.tools:1 imports mcp: only ['contextmesh.mcp.server'] may import mcp"]


def test_a_sibling_module_named_like_a_restricted_package_is_not_confused_with_it() -> None:
    found = fake(
        ("contextmesh.execution", "", True),
        ("contextmesh.execution.registry", "", False),
        ("contextmesh.execution.plan", "from .registry import TaskRegistry\nfrom . import registry\n", False),
        ("contextmesh.mcp", "from . import server\n", True),
        ("contextmesh.mcp.server", "", False),
    )
    assert found == []


@pytest.mark.parametrize("package", ["flows", "registry", "deployments"])
def test_deployment_code_is_never_imported(package: str) -> None:
    found = fake(("contextmesh.cli", f"import {package}.demo\n", False))
    assert found == [f"contextmesh.cli:1 imports {package}.demo: nothing under contextmesh may import {package}"]


def test_a_dynamic_import_by_literal_name_is_checked() -> None:
    found = fake(("contextmesh.ids", "import importlib\nimportlib.import_module('contextmesh.graph')\n", False))
    assert found == ["contextmesh.ids:2 imports contextmesh.graph: layer 1 may not import layer 3"]


def test_tooling_may_import_anything_and_nothing_may_import_tooling() -> None:
    assert fake(("contextmesh.testing.fixtures", "import contextmesh.cli\nimport contextmesh\n", False)) == []
    found = fake(("contextmesh.cli", "from contextmesh.testing import fixtures\n", False))
    assert found == ["contextmesh.cli:1 imports contextmesh.testing: no layer module may import tooling"]


def test_same_layer_imports_are_allowed() -> None:
    assert fake(("contextmesh.decision_identity", "from contextmesh.graph import ContextGraph\n", False)) == []
    assert fake(("contextmesh.ids", "from contextmesh.canonical import text_hash\n", False)) == []

"""The demo is an ordinary user of the public API: it imports names that ``contextmesh`` exports, nothing deeper.

Every module under ``contextmesh/demo/`` is parsed with ``ast``. Allowed: ``import contextmesh``,
``from contextmesh import X`` with ``X`` in ``contextmesh.__all__``, the demo's own modules
(``contextmesh.demo`` and below, absolute or relative), the orchestration modules docs/api.md says
a program imports by path (:data:`BY_PATH`), the standard library and third-party packages.
Refused: any other ``contextmesh.*`` module, whether imported (at module level or in a function,
``import`` or ``from``), named in a literal ``importlib.import_module``/``__import__`` call, or
reached as an attribute of ``contextmesh`` (``contextmesh.core.graph``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import contextmesh

DEMO_DIR = Path(contextmesh.__file__).resolve().parent / "demo"
PUBLIC = frozenset(contextmesh.__all__)
# The modules docs/api.md says a program imports by path (Prefect orchestration is not in the root).
BY_PATH = frozenset(
    f"contextmesh.orchestration.{name}" for name in ("flow_steps", "commands", "local_server", "settings")
)
API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _own(module: str) -> bool:
    return module == "contextmesh.demo" or module.startswith("contextmesh.demo.")


def _engine(module: str) -> bool:
    return module.startswith("contextmesh.") and not _own(module) and module not in BY_PATH


def _relative_base(node: ast.ImportFrom, package: str) -> str:
    parts = package.split(".")
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _from_import(node: ast.ImportFrom, package: str) -> list[str]:
    base = _relative_base(node, package) if node.level else (node.module or "")
    if base == "contextmesh":
        return [f"from contextmesh import {a.name}: not a public name" for a in node.names if a.name not in PUBLIC]
    if _engine(base):
        return [f"from {base} import ...: an engine module, not the public API"]
    return []


def _call(node: ast.Call) -> list[str]:
    func = node.func
    dynamic = (isinstance(func, ast.Name) and func.id == "__import__") or (
        isinstance(func, ast.Attribute) and func.attr == "import_module"
    )
    first = node.args[0] if node.args else None
    if dynamic and isinstance(first, ast.Constant) and isinstance(first.value, str) and _engine(first.value):
        return [f"import_module({first.value!r}): an engine module, not the public API"]
    return []


def problems(source: str, package: str = "contextmesh.demo") -> list[str]:
    """Every way ``source`` (a module of ``package``) reaches past the public API, with its line."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        issues: list[str] = []
        if isinstance(node, ast.Import):
            issues = [f"import {a.name}: an engine module, not the public API" for a in node.names if _engine(a.name)]
        elif isinstance(node, ast.ImportFrom):
            issues = _from_import(node, package)
        elif isinstance(node, ast.Call):
            issues = _call(node)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "contextmesh"
            and node.attr not in PUBLIC | {"demo"}
            and not node.attr.startswith("__")
        ):
            issues = [f"contextmesh.{node.attr}: not a public name"]
        found += [f"{getattr(node, 'lineno', 0)}: {issue}" for issue in issues]
    return found


def demo_modules() -> dict[str, str]:
    return {str(p.relative_to(DEMO_DIR)): p.read_text(encoding="utf-8") for p in sorted(DEMO_DIR.rglob("*.py"))}


# -- the real demo --------------------------------------------------------------------------------


def test_every_demo_module_imports_only_public_names() -> None:
    modules = demo_modules()
    assert {"__init__.py", "auth.py", "execute.py", "knowledge.py", "saved.py", "scenario.py"} <= set(modules)
    found = {name: problems(text) for name, text in modules.items()}
    assert {name: issues for name, issues in found.items() if issues} == {}


def test_the_demo_does_use_the_public_api() -> None:
    """Not vacuous: the demo's engine calls all come through ``from contextmesh import ...``."""
    used: set[str] = set()
    for text in demo_modules().values():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module == "contextmesh" and not node.level:
                used |= {alias.name for alias in node.names}
    assert {"Plan", "TaskRegistry", "Session", "build_graph", "RunContext", "AuditContext", "Verdict"} <= used
    assert used <= PUBLIC


def test_the_modules_imported_by_path_are_the_ones_the_api_page_names() -> None:
    page = API_DOC.read_text(encoding="utf-8")
    assert all(f"`{module}`" in page for module in BY_PATH)


# -- the checker itself ---------------------------------------------------------------------------


def test_an_engine_module_import_is_caught_in_every_form() -> None:
    assert problems("from contextmesh.execution.plan import Plan\n") == [
        "1: from contextmesh.execution.plan import ...: an engine module, not the public API"
    ]
    assert problems("import contextmesh.core.graph\n") == [
        "1: import contextmesh.core.graph: an engine module, not the public API"
    ]
    assert problems("def f():\n    from contextmesh.session import session\n") == [
        "2: from contextmesh.session import ...: an engine module, not the public API"
    ]
    assert problems("from contextmesh.orchestration.run_states import x\n") == [
        "1: from contextmesh.orchestration.run_states import ...: an engine module, not the public API"
    ]
    assert problems("import importlib\nimportlib.import_module('contextmesh.knowledge.pipeline')\n") == [
        "2: import_module('contextmesh.knowledge.pipeline'): an engine module, not the public API"
    ]


def test_a_relative_import_out_of_the_demo_is_caught() -> None:
    assert problems("from ..core import graph\n", "contextmesh.demo") == [
        "1: from contextmesh.core import ...: an engine module, not the public API"
    ]
    assert problems("from .auth import publish\nfrom . import knowledge\n", "contextmesh.demo") == []


def test_a_submodule_through_the_package_root_is_caught() -> None:
    assert problems("from contextmesh import core\n") == ["1: from contextmesh import core: not a public name"]
    assert problems("import contextmesh\ngraph = contextmesh.core.graph.ContextGraph\n") == [
        "2: contextmesh.core: not a public name"
    ]


def test_public_names_the_demos_own_modules_and_other_packages_pass() -> None:
    source = (
        "import json\nimport contextmesh\nfrom pathlib import Path\nimport orjson\n"
        "from contextmesh import Plan, Session\nfrom contextmesh.demo.auth import publish\n"
        "import contextmesh.demo.knowledge\nplan = contextmesh.Plan\nversion = contextmesh.__version__\n"
    )
    assert problems(source) == []

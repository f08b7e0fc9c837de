"""The deployment folders: names that cannot shadow a library, and a library that never imports them.

``flows/``, ``registry/`` and ``deployments/`` are this repository's deployment code: Prefect loads
``flows/<name>.py`` by path with the folder on ``sys.path``, so a file there named like a package
(``prefect.py``, ``mcp.py``) would shadow it. The library reaches deployment code only by running
it (``contextmesh serve`` execs ``deployments/serve.py``), never by importing it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHADOWING = {"mcp.py", "prefect.py", "registry.py", "contextmesh.py"}
DEPLOYMENT_PACKAGES = {"flows", "registry", "deployments"}


@pytest.mark.parametrize("folder", ["flows", "deployments"])
def test_no_deployment_file_shadows_a_package(folder: str) -> None:
    names = {path.name for path in (ROOT / folder).iterdir()}
    assert names, f"{folder}/ is part of the repository"
    assert not names & SHADOWING


def test_the_flow_entrypoints_exist_where_the_deployments_name_them() -> None:
    for name in ("plan", "recheck", "repair"):
        tree = ast.parse((ROOT / "flows" / f"{name}_flow.py").read_text(encoding="utf-8"))
        functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert name in functions, f"flows/{name}_flow.py:{name} is a deployment entrypoint"


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_the_library_never_imports_deployment_code() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & DEPLOYMENT_PACKAGES)
        for path in sorted((ROOT / "contextmesh").rglob("*.py"))
        if _imports(path) & DEPLOYMENT_PACKAGES
    }
    assert offenders == {}


def test_the_ast_check_would_see_an_import_of_deployment_code(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    source = "def f():\n    from registry import build_registry\n    import flows.plan_flow\n"
    sample.write_text(source, encoding="utf-8")
    assert _imports(sample) == {"registry", "flows"}

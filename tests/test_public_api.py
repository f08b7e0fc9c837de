"""The package's public surface: a sorted ``__all__``, a light import, one version number."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import contextmesh

REPO_ROOT = Path(__file__).resolve().parents[1]


def isort_style_key(name: str) -> tuple[int, list[int | str]]:
    """The order ruff's RUF022 keeps ``__all__`` in: CONSTANTS, then Classes, then the rest; natural within."""
    if name.isupper() and len(name) > 1:
        group = 0
    elif name[:1].isupper():
        group = 1
    else:
        group = 2
    return group, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def test_all_is_sorted() -> None:
    assert contextmesh.__all__ == sorted(contextmesh.__all__, key=isort_style_key)


def test_all_has_no_repeats() -> None:
    assert len(contextmesh.__all__) == len(set(contextmesh.__all__))


def test_every_name_in_all_is_importable() -> None:
    fresh = importlib.import_module("contextmesh")
    missing = [name for name in fresh.__all__ if not hasattr(fresh, name)]
    assert missing == []
    namespace: dict[str, object] = {}
    exec("from contextmesh import *", namespace)
    assert set(fresh.__all__) <= set(namespace)


def test_the_public_api_names_the_core_types() -> None:
    assert {"ContextGraph", "ContextMeshError", "ONTOLOGY", "NodeType", "EdgeType", "Provenance"} <= set(
        contextmesh.__all__
    )


def _probe(statements: str) -> list[str]:
    """Run ``statements`` in a fresh interpreter and return the lines it printed."""
    result = subprocess.run(
        [sys.executable, "-c", statements], capture_output=True, text=True, check=True, cwd=REPO_ROOT, timeout=60
    )
    return result.stdout.splitlines()


def test_importing_contextmesh_does_not_import_prefect_or_mcp() -> None:
    probe = (
        "import sys\n"
        "import contextmesh\n"
        "banned = {'prefect', 'mcp', 'flows', 'registry', 'deployments'}\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in banned)\n"
        "print(','.join(heavy))\n"
        "print('networkx' in sys.modules)\n"
    )
    heavy, networkx_loaded = _probe(probe)
    assert heavy == ""
    # networkx is a core dependency, but the names resolve lazily now: the bare import costs nothing.
    assert networkx_loaded == "False"


def test_importing_contextmesh_imports_no_module_of_the_package_and_no_library() -> None:
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import contextmesh\n"
        "print(' '.join(sorted(set(sys.modules) - before)))\n"
    )
    (added,) = _probe(probe)
    loaded = set(added.split())
    assert {m for m in loaded if m.startswith("contextmesh")} == {"contextmesh"}
    assert not loaded & {"networkx", "pydantic", "orjson", "rfc8785", "typing", "prefect", "mcp"}


def test_a_name_imports_its_own_layer_on_first_use_and_no_other() -> None:
    probe = (
        "import sys\n"
        "import contextmesh\n"
        "registry = contextmesh.TaskRegistry\n"
        "print(registry.__module__)\n"
        "print(*(m in sys.modules for m in ('networkx', 'contextmesh.session', 'contextmesh.knowledge')))\n"
        "graph = contextmesh.ContextGraph\n"
        "print('networkx' in sys.modules, 'prefect' in sys.modules, 'mcp' in sys.modules)\n"
    )
    module, after_registry, after_graph = _probe(probe)
    assert module == "contextmesh.execution.task_registry"
    assert after_registry == "False False False"
    assert after_graph == "True False False"


def test_every_export_is_the_object_its_table_names_and_is_kept_after_first_use() -> None:
    for name in contextmesh.__all__:
        module, attribute = contextmesh._EXPORTS[name]
        value = getattr(contextmesh, name)
        assert value is getattr(importlib.import_module(module), attribute), name
        assert contextmesh.__dict__[name] is value  # resolved once, then an ordinary attribute
    assert set(contextmesh._EXPORTS) == set(contextmesh.__all__)


def test_every_export_is_loaded_from_the_module_that_defines_it() -> None:
    """First use imports what the name needs and no re-exporting module on the way."""
    elsewhere = {
        name: (module, getattr(contextmesh, name).__module__)
        for name, (module, _) in contextmesh._EXPORTS.items()
        if callable(getattr(contextmesh, name)) and getattr(contextmesh, name).__module__ != module
    }
    assert elsewhere == {}


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match=r"module 'contextmesh' has no attribute 'Runner'"):
        contextmesh.Runner  # type: ignore[attr-defined]  # noqa: B018 - the access is the test
    assert not hasattr(contextmesh, "not_a_name")


def test_the_type_checking_imports_name_the_same_objects_as_the_table() -> None:
    """mypy and the IDEs read the TYPE_CHECKING block; the run time reads _EXPORTS. They must agree."""
    tree = ast.parse((REPO_ROOT / "contextmesh" / "__init__.py").read_text(encoding="utf-8"))
    (block,) = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    seen: dict[str, tuple[str, str]] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module is not None
        if node.module == "typing":
            continue
        for alias in node.names:
            seen[alias.asname or alias.name] = (node.module, alias.name)
    assert seen == contextmesh._EXPORTS


def test_dir_lists_every_public_name_before_any_is_used() -> None:
    (listed,) = _probe("import contextmesh\nprint(' '.join(dir(contextmesh)))\n")
    assert set(contextmesh.__all__) <= set(listed.split())


def test_orchestration_and_mcp_stay_out_of_the_root() -> None:
    for name in contextmesh.__all__:
        module, _ = contextmesh._EXPORTS[name]
        assert module.split(".")[1] in {"core", "knowledge", "belief", "formats", "execution", "session", "project"}


def test_the_public_api_names_what_a_user_writes_a_plan_against() -> None:
    assert {
        "Plan",
        "TaskRegistry",
        "RunContext",
        "AuditContext",
        "Verdict",
        "Session",
        "build_graph",
        "load_corpus",
        "read_folder",
        "Walker",
        "blast_radius",
        "ContextGraph",
    } <= set(contextmesh.__all__)


def test_version_equals_pyproject() -> None:
    with (REPO_ROOT / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    assert contextmesh.__version__ == project["version"]
    assert project["name"] == "contextmesh"


def test_the_whole_error_tree_of_the_engine_is_exported() -> None:
    """Every ContextMeshError subclass an engine layer defines is a public name a user may catch."""
    engine = ("core", "knowledge", "belief", "formats", "execution", "session", "project")
    defined: dict[str, type] = {}
    for info in pkgutil.walk_packages(contextmesh.__path__, "contextmesh."):
        if info.name.split(".")[1] not in engine:
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, contextmesh.ContextMeshError)
                and value.__module__ == info.name
            ):
                defined[name] = value
    assert {"ContextMeshError", "RegistryError", "SessionLockedError", "DocumentError"} <= set(defined)
    assert sorted(set(defined) - set(contextmesh.__all__)) == []
    assert {name: getattr(contextmesh, name) for name in defined} == defined

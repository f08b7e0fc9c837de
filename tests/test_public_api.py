"""The package's public surface: a sorted ``__all__``, a light import, one version number."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

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


def test_importing_contextmesh_does_not_import_prefect_or_mcp() -> None:
    probe = (
        "import sys\n"
        "import contextmesh\n"
        "banned = {'prefect', 'mcp', 'flows', 'registry', 'deployments'}\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in banned)\n"
        "print(','.join(heavy))\n"
        "print('networkx' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO_ROOT, timeout=60
    )
    heavy, networkx_loaded = result.stdout.splitlines()
    assert heavy == ""
    assert networkx_loaded == "True"  # networkx is a core dependency; importing it is fine


def test_version_equals_pyproject() -> None:
    with (REPO_ROOT / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    assert contextmesh.__version__ == project["version"]
    assert project["name"] == "contextmesh"

"""The wheel carries GRAPH.md inside the package, and an installed wheel parses it at import."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_exactly_one_graph_md_exists_in_the_repository() -> None:
    skip = {".git", ".venv", ".venv-core", "node_modules", "build", "dist"}
    found = [p for p in ROOT.rglob("GRAPH.md") if not skip & set(p.relative_to(ROOT).parts)]
    assert found == [ROOT / "GRAPH.md"]


@pytest.mark.slow  # builds a wheel with pip and installs it into a target directory
def test_an_installed_wheel_carries_and_parses_graph_md(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("contextmesh-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert [n for n in names if n.endswith("GRAPH.md")] == ["contextmesh/GRAPH.md"]
    assert not [n for n in names if n.split("/")[0] in {"flows", "registry", "deployments", "tests"}]
    target = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    probe = (
        "import contextmesh, contextmesh.core.ontology as o; "
        "print(o.graph_md_path()); print(len(o.ONTOLOGY.node_types), len(o.ONTOLOGY.edge_types))"
    )
    # Run from an empty directory with only the installed copy first on sys.path.
    result = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(target)!r}); {probe}"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    where, counts = result.stdout.splitlines()
    assert Path(where) == target / "contextmesh" / "GRAPH.md"
    assert counts == "6 10"

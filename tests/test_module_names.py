"""Every module name means one thing: no two modules of the product share a file name.

The product is the library (``contextmesh/``) and this repository's deployment code (``flows/``,
``registry/``, ``deployments/``). Two files named ``plan.py`` in it make a traceback, a grep or a
Prefect entrypoint ambiguous; docs/adr/0007 (item 4) renamed the ones that clashed and this test
keeps it so. Package markers (``__init__.py``, ``__main__.py``) are not module names.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("contextmesh", "flows", "registry", "deployments")
MARKERS = {"__init__.py", "__main__.py"}


def module_files() -> dict[str, list[str]]:
    by_name: dict[str, list[str]] = defaultdict(list)
    for folder in PRODUCT:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name not in MARKERS and "__pycache__" not in path.parts:
                by_name[path.name].append(path.relative_to(ROOT).as_posix())
    return by_name


def test_the_scan_sees_the_product() -> None:
    found = module_files()
    assert all((ROOT / folder).is_dir() for folder in PRODUCT)
    assert "plan.py" in found and "plan_flow.py" in found and "serve.py" in found


def test_no_two_modules_share_a_name() -> None:
    clashes = {name: paths for name, paths in module_files().items() if len(paths) > 1}
    assert not clashes, f"module names used twice (rename one; docs/adr/0007 item 4): {clashes}"

"""``--leave-core-layers``: the main suite leaves the engine layers' in-process tests to the core suite.

``scripts/test`` runs two suites: the whole suite in the development venv, and the core suite
(every test not marked ``integration`` outside the orchestration, MCP, dashboard and deployment
folders) in ``.venv-core``, which holds neither Prefect nor the MCP SDK and runs ContextMesh from
its wheel. The tests of layers 1-7 (``tests/core`` ... ``tests/project``) not marked
``integration`` ran in both, and a run of them costs the same either way: the code they test may
import neither Prefect nor the MCP SDK nor any layer above its own (``tests/test_layering.py``), so
it runs alike whether Prefect is installed or not. With this option the main suite deselects them
(pytest reports them as deselected), and each of them runs once, in the core suite. Every other
test, the command line's included, still runs in both.

A module of those folders whose text never says ``integration`` can hold no test marked so (a mark
is spelled in the module, by ``pytestmark`` or a decorator; no conftest of those folders adds one),
so under the option it is not even imported (:func:`not_collected`): every xdist worker of the main
suite collects the whole tree, and importing the ~130 modules only to deselect them cost each
worker about a third of its collection (docs/adr/0035-ci-cpu-budget.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["LAYER_FOLDERS", "OPTION", "add_option", "leave_to_core_suite", "not_collected"]

OPTION = "--leave-core-layers"
# The folders of layers 1-7 of tests/test_layering.py's table (checked by tests/test_core_layers.py).
LAYER_FOLDERS = ("core", "knowledge", "belief", "formats", "execution", "session", "project")


def add_option(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        action="store_true",
        help="deselect the tests of tests/{core,...,project} not marked integration: the core suite runs them",
    )


def not_collected(path: Path, config: pytest.Config) -> bool:
    """Under the option: True for a test module of a layer folder that cannot hold an integration test."""
    if not config.getoption(OPTION, default=False) or path.suffix != ".py" or not path.name.startswith("test_"):
        return False
    parts = path.relative_to(config.rootpath).parts if path.is_relative_to(config.rootpath) else ()
    if len(parts) < 3 or parts[0] != "tests" or parts[1] not in LAYER_FOLDERS:
        return False
    # The module, and any conftest between it and its layer folder (one could add a mark by a hook).
    layer = config.rootpath / "tests" / parts[1]
    spelled = [path, *(folder / "conftest.py" for folder in path.parents if folder.is_relative_to(layer))]
    return not any(f.is_file() and "integration" in f.read_text(encoding="utf-8") for f in spelled)


def _left(item: pytest.Item) -> bool:
    folder = item.nodeid.split("/")
    return (
        len(folder) > 2
        and folder[0] == "tests"
        and folder[1] in LAYER_FOLDERS
        and item.get_closest_marker("integration") is None
    )


def leave_to_core_suite(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--leave-core-layers``, deselect the layers' tests that the core suite runs."""
    if not config.getoption(OPTION, default=False):
        return
    left = [item for item in items if _left(item)]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if not _left(item)]

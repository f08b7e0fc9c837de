"""``--leave-core-layers`` (:mod:`core_layers`): the main suite leaves to the core suite only what it runs.

The deselected tests must each still run once: they are the tests of layers 1-7 not marked
``integration``, and the core suite in ``scripts/test`` selects every test not marked
``integration`` and ignores none of those folders.
"""

from __future__ import annotations

import re
from pathlib import Path

import core_layers
import pytest
from test_layering import LAYERS

pytest_plugins = ["pytester"]

SCRIPT = (Path(__file__).parent.parent / "scripts" / "test").read_text(encoding="utf-8")


def _function(name: str) -> str:
    found = re.search(rf"^{name}\(\) {{\n(.*?)^}}", SCRIPT, re.S | re.M)
    assert found, f"scripts/test defines no {name}()"
    return found.group(1)


def test_the_folders_left_are_the_packages_of_layers_1_to_7() -> None:
    engine = sorted(name.split(".")[1] for name, layer in LAYERS.items() if name.endswith(".*") and layer <= 7)
    assert sorted(core_layers.LAYER_FOLDERS) == engine


def test_the_core_suite_runs_every_test_the_main_suite_leaves_to_it() -> None:
    core = _function("core_suite")
    assert '-m "not integration"' in core
    ignored = re.findall(r"--ignore=(\S+)", core)
    assert ignored and not set(ignored) & set(core_layers.LAYER_FOLDERS)
    assert "--leave-core-layers" in _function("main_suite")


CONFTEST = """
import core_layers


def pytest_addoption(parser):
    core_layers.add_option(parser)


def pytest_configure(config):
    config.addinivalue_line("markers", "integration: starts something")


def pytest_collection_modifyitems(config, items):
    core_layers.leave_to_core_suite(config, items)
"""

IN_A_LAYER = """
import pytest


def test_in_process():
    pass


@pytest.mark.integration
def test_starting_something():
    pass
"""


def test_only_the_layers_tests_not_marked_integration_are_deselected(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    for folder in ("core", "session", "cli"):
        (pytester.path / "tests" / folder).mkdir(parents=True)
        (pytester.path / "tests" / folder / f"test_{folder}_cases.py").write_text(IN_A_LAYER, encoding="utf-8")
    left = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist", "--leave-core-layers", "-v")
    left.assert_outcomes(passed=4, deselected=2)
    left.stdout.fnmatch_lines(["*test_cli_cases.py::test_in_process PASSED*"])
    left.stdout.fnmatch_lines(["*test_core_cases.py::test_starting_something PASSED*"])
    whole = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist")
    whole.assert_outcomes(passed=6)


NEVER_IMPORTED = """
raise AssertionError("imported although the core suite runs it")
"""


def test_a_layer_module_that_mentions_no_integration_test_is_not_even_imported(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        CONFTEST + "\n\ndef pytest_ignore_collect(collection_path, config):\n"
        "    return True if core_layers.not_collected(collection_path, config) else None\n"
    )
    (pytester.path / "tests" / "core").mkdir(parents=True)
    (pytester.path / "tests" / "core" / "test_left.py").write_text(NEVER_IMPORTED, encoding="utf-8")
    (pytester.path / "tests" / "core" / "test_core_cases.py").write_text(IN_A_LAYER, encoding="utf-8")
    (pytester.path / "tests" / "session" / "deep").mkdir(parents=True)
    (pytester.path / "tests" / "session" / "conftest.py").write_text("# marks integration by a hook\n")
    (pytester.path / "tests" / "session" / "deep" / "test_kept.py").write_text("def test_x():\n    pass\n")
    left = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist", "--leave-core-layers", "-v")
    # test_left.py is not imported; test_core_cases.py is (it names the mark) and runs its integration test;
    # test_kept.py is imported because a conftest above it mentions integration (and then deselected).
    left.assert_outcomes(passed=1, deselected=2)
    left.stdout.fnmatch_lines(["*test_core_cases.py::test_starting_something PASSED*"])
    whole = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist")
    whole.stdout.fnmatch_lines(["*imported although the core suite runs it*"])  # without it, all are imported

"""``-p cpu_ledger`` (:mod:`cpu_ledger`) charges a test with what its children spent during it, and how it ended."""

from __future__ import annotations

import json
from pathlib import Path

import cpu_ledger
import pytest

pytest_plugins = ["pytester"]

BURNS_IN_A_CHILD = """
import subprocess, sys


def test_spends_cpu_in_a_child():
    burn = "import time\\nend = time.process_time() + 0.3\\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)


def test_spends_nothing():
    pass


def test_fails():
    assert False
"""


def test_a_tests_reaped_children_are_charged_to_it(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    where = pytester.path / "ledger"
    monkeypatch.setenv(cpu_ledger.ENV, str(where))
    pytester.makepyfile(test_burns=BURNS_IN_A_CHILD)
    pytester.runpytest("-p", "cpu_ledger", "-p", "no:cacheprovider", "-p", "no:xdist").assert_outcomes(
        passed=2, failed=1
    )
    (ledger,) = where.glob("cpu-*.jsonl")
    records = {r["nodeid"]: r for r in map(json.loads, ledger.read_text(encoding="utf-8").splitlines())}
    assert set(records) == {
        "<collection>",
        "test_burns.py::test_spends_cpu_in_a_child",
        "test_burns.py::test_spends_nothing",
        "test_burns.py::test_fails",
    }
    assert records["test_burns.py::test_spends_nothing"]["outcome"] == "passed"
    assert records["test_burns.py::test_fails"]["outcome"] == "call failed"
    assert records["test_burns.py::test_spends_cpu_in_a_child"]["children"] >= 0.25
    assert records["test_burns.py::test_spends_nothing"]["children"] < 0.05
    summary = cpu_ledger.summary(Path(where))
    assert summary[2].endswith("test_burns.py") and float(summary[2].split()[0]) >= 0.25


# A module's child outlives its tests, as a session's Prefect server does: it burns CPU only while the
# second test runs, and the module's teardown (in the third test) stops and reaps it.
A_SERVER_OF_THE_MODULE = """
import subprocess, sys, time
from pathlib import Path

import pytest

SERVER = (
    "import sys, time\\nfrom pathlib import Path\\ngo, done = Path(sys.argv[1]), Path(sys.argv[2])\\n"
    "while not go.exists(): time.sleep(0.01)\\n"
    "end = time.process_time() + 0.4\\nwhile time.process_time() < end: pass\\n"
    "done.touch()\\ntime.sleep(600)"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    where = tmp_path_factory.mktemp("server")
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(where / "go"), str(where / "done")])
    yield where
    proc.kill()
    proc.wait()


def test_before_it_works(server):
    time.sleep(0.2)


def test_while_it_works(server):
    (server / "go").touch()
    while not (server / "done").exists():
        time.sleep(0.01)


def test_after_it_worked_its_teardown_stops_it(server):
    pass
"""


def test_a_childs_cpu_is_charged_to_the_test_it_was_spent_in_not_the_one_that_reaps_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = pytester.path / "ledger"
    monkeypatch.setenv(cpu_ledger.ENV, str(where))
    pytester.makepyfile(test_module_server=A_SERVER_OF_THE_MODULE)
    pytester.runpytest("-p", "cpu_ledger", "-p", "no:cacheprovider", "-p", "no:xdist").assert_outcomes(passed=3)
    (ledger,) = where.glob("cpu-*.jsonl")
    records = {r["nodeid"].split("::")[-1]: r for r in map(json.loads, ledger.read_text(encoding="utf-8").splitlines())}
    spent = {name: r["children"] + r["live"] for name, r in records.items() if name != "<collection>"}
    assert spent["test_while_it_works"] >= 0.35, records
    assert spent["test_after_it_worked_its_teardown_stops_it"] < 0.1, records  # it reaps the child, not its work
    assert spent["test_before_it_works"] < 0.2, records  # the child's start only (an interpreter's)

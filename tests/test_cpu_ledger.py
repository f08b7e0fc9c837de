"""``-p cpu_ledger`` (:mod:`cpu_ledger`) charges a test with the CPU of the children it reaps, and says how it ended."""

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

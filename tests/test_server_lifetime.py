"""A server fixture stops after the last test that uses it (:mod:`server_lifetime`), dependants first.

Run on a small suite of its own (``pytester``): two session fixtures standing for the PostgreSQL
cluster and a Prefect server on it, two tests that use the server and two that do not. With the
plugin the server and the cluster are down before the first test that does not use them; without
it they are still up (pytest's own rule: a session fixture lives to the end of the run).
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import pytest

EVENTS = []


@pytest.fixture(scope="session")
def postgres():
    EVENTS.append("postgres up")
    yield
    EVENTS.append("postgres down")


@pytest.fixture(scope="session")
def prefect_api(postgres):
    EVENTS.append("server up")
    yield "http://127.0.0.1:1/api"
    EVENTS.append("server down")


def test_one(prefect_api):
    EVENTS.append("one")


def test_two(prefect_api):
    EVENTS.append("two")


def test_three():
    EVENTS.append("three")


def test_four():
    assert EVENTS == ["postgres up", "server up", "one", "two", "server down", "postgres down", "three"]
"""


def test_a_server_fixture_stops_after_its_last_user_and_before_the_next_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    with_plugin = pytester.runpytest("-p", "server_lifetime", "-p", "no:cacheprovider", "-p", "no:xdist")
    with_plugin.assert_outcomes(passed=4)
    without = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist")
    without.assert_outcomes(passed=3, failed=1)  # pytest alone keeps both up until the run ends


def test_a_server_whose_last_user_is_deselected_still_stops_after_the_last_user_that_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite=SUITE.replace('"one", "two", ', '"one", '))
    done = pytester.runpytest("-p", "server_lifetime", "-p", "no:cacheprovider", "-p", "no:xdist", "-k", "not two")
    done.assert_outcomes(passed=3, deselected=1)

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


UNITS_CONFTEST = """
import pytest
import xdist_units


def pytest_collection_modifyitems(config, items):
    # As xdist_units leaves it on a worker: test_one and test_two use the server in two units.
    config.stash[xdist_units.UNITS] = {item.nodeid: item.name.replace("test_", "unit-") for item in items}
"""

UNITS_SUITE = """
import pytest

EVENTS = []


@pytest.fixture(scope="session")
def prefect_api():
    EVENTS.append("server up")
    yield "http://127.0.0.1:1/api"
    EVENTS.append("server down")


def test_one(prefect_api):
    EVENTS.append("one")


def test_three():
    EVENTS.append("three")


def test_two(prefect_api):
    EVENTS.append("two")


def test_four():
    assert EVENTS == ["server up", "one", "server down", "three", "server up", "two", "server down"]
"""


def test_under_xdist_a_server_stops_after_the_last_user_of_its_unit(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(UNITS_CONFTEST)
    pytester.makepyfile(test_suite=UNITS_SUITE)
    done = pytester.runpytest("-p", "server_lifetime", "-p", "no:cacheprovider", "-p", "no:xdist")
    done.assert_outcomes(passed=4)

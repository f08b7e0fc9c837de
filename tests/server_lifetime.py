"""A Prefect server configuration stops after the last test that uses it, not at the end of the run.

The servers are session fixtures (``prefect_api``; in ``tests/deployments`` the PostgreSQL cluster,
its database, a server on it and a process worker). Left to pytest, a session fixture lives until
the process ends, so a worker that finished the server unit early (``xdist_units`` hands the server
units out first) would keep a Prefect server, its background services and a polling process worker
running beside every test it runs afterwards, on a machine of two cores. So after each test the
tracked fixtures that no later test of the collection uses are finished there, with pytest's own
finaliser (the fixture's teardown and that of every fixture built on it, dependants first): the
server stops at the end of its last test, and a failure to stop is that test's teardown error.

"No later test uses it" is read from the collection in the order this process runs it (after
``xdist_units`` has ordered it), within the test's xdist unit: under ``--dist loadscope`` a worker
runs whole units, and the tests of a server configuration are one unit, or (split over two
servers) two units on two workers, so the last user in the test's own unit is the last one its
worker runs. A fixture finished too early is not wrong, only slow: a later test asking for it sets
it up again.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
import xdist_units

__all__ = ["TRACKED", "pytest_collection_finish", "pytest_runtest_teardown"]

# The server fixtures, dependants first (finishing a fixture finishes what is built on it as well).
TRACKED = ("prefect_api", "pg_url", "postgres")
# (id(fixturedef), the xdist unit or None outside xdist) -> index of the unit's last item that uses it
_LAST = pytest.StashKey[dict[tuple[int, str | None], int]]()
_INDEX = pytest.StashKey[dict[str, int]]()  # nodeid -> index in the collection


def _used(item: pytest.Item, names: Iterable[str]) -> list[pytest.FixtureDef[object]]:
    """The fixture definitions of ``names`` that ``item`` uses (the overriding one where overridden)."""
    closure = getattr(item, "_fixtureinfo", None)
    defs = closure.name2fixturedefs if closure is not None else {}
    return [defs[name][-1] for name in names if name in defs]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Record, for each tracked fixture definition and unit, the index of the last item that uses it."""
    units = session.config.stash.get(xdist_units.UNITS, {})
    last: dict[tuple[int, str | None], int] = {}
    for index, item in enumerate(session.items):  # final: ordered, deselection done
        for fixturedef in _used(item, TRACKED):
            last[id(fixturedef), units.get(item.nodeid)] = index
    session.config.stash[_LAST] = last
    session.config.stash[_INDEX] = {item.nodeid: index for index, item in enumerate(session.items)}


@pytest.hookimpl(trylast=True)  # after pytest's own teardown of the item
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After ``item``'s teardown: finish each tracked fixture it used that no item after it uses."""
    if nextitem is None:  # the end of the process: pytest's session teardown follows at once
        return
    last = item.config.stash.get(_LAST, {})
    following = item.config.stash.get(_INDEX, {}).get(nextitem.nodeid)
    if following is None:
        return
    unit = item.config.stash.get(xdist_units.UNITS, {}).get(item.nodeid)
    request = item._request  # type: ignore[attr-defined]
    for fixturedef in _used(item, TRACKED):
        if fixturedef.cached_result is not None and last.get((id(fixturedef), unit), following) < following:
            fixturedef.finish(request)

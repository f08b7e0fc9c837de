"""Which collected tests start a server, a subprocess transport or a browser (they must be ``integration``).

A test *starts* one when the code it runs reaches a starter: the Prefect server fixtures, the
managed server's ``start`` / ``ensure_server``, the MCP launcher scripts, the MCP server module run
by name (``python -m contextmesh.mcp.server``), the SDK's stdio transport, the test helpers that
wrap a server or a transport process (``ServerProcess``, ``ServeProcess``), the MCP Inspector, or a
browser (``chromium``, selenium's webdriver). "Reaches" is read from the code itself: the names a
test function uses, the fixtures in its closure, and, recursively, every function and class of
``tests/`` those names lead to (the helpers are where servers are started). What the audit cannot
see (a server started from a string of shell) is left to review.

The root ``conftest.py`` runs :func:`audit` on every collection and refuses to run a suite in which
a starting test is not marked ``integration``; ``tests/test_markers.py`` checks that the audit sees
the suite's known starters, so it cannot pass by seeing nothing.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["AUDIT", "AUDIT_ENV", "ENTRY_POINTS", "FIXTURES", "TESTS_DIR", "audit", "reaches_a_starter", "starters"]

TESTS_DIR = Path(__file__).resolve().parent
# Set to a file name, the root conftest writes the collection's audit there as JSON.
AUDIT_ENV = "CONTEXTMESH_MARKER_AUDIT"
# Where the root conftest keeps the audit of this run's collection: (collected, starting, unmarked).
AUDIT = pytest.StashKey[tuple[list[str], list[str], list[str]]]()

# Fixtures that are a running server or stand for one (the Prefect servers, the process worker).
FIXTURES = frozenset({"prefect_api", "pg_url", "deployed", "worker"})

# Server entry points run as a process by name (``python -m contextmesh.mcp.server``).
ENTRY_POINTS = frozenset({"contextmesh.mcp.server"})

# Objects that start a server, a transport process or a browser, by module and attribute. Only
# modules already imported count: a collected test reaches an object only through a module that was
# imported when the test was (the core-only venv, which has neither the MCP SDK nor selenium, and a
# run of one folder import fewer), and the audit itself imports nothing.
_STARTERS = (
    ("contextmesh.orchestration.local_server", "start"),
    ("contextmesh.orchestration.local_server", "ensure_server"),
    ("mcp", "StdioServerParameters"),
    ("mcp.client.stdio", "stdio_client"),
    ("selenium.webdriver", "Chrome"),
    ("mcp_helpers", "LAUNCHER"),
    ("mcp_helpers", "ServerProcess"),
    ("served_helpers", "SERVE"),
    ("served_helpers", "ServeProcess"),
    ("test_mcp_inspector", "inspector"),
    ("dashboard_browser", "chromium"),
)


def starters() -> list[Any]:
    """The starter objects of the modules imported so far."""
    return [getattr(sys.modules[m], a) for m, a in _STARTERS if m in sys.modules]


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _in_tests(obj: Any) -> bool:
    try:
        return Path(inspect.getfile(obj)).resolve().is_relative_to(TESTS_DIR)
    except TypeError:  # built-ins and C types have no file
        return False


def _functions(obj: Any) -> Iterator[types.FunctionType]:
    """The plain functions behind ``obj``: itself, its wrapped original, or a class's methods."""
    if isinstance(obj, type):
        for value in vars(obj).values():
            yield from _functions(value.__func__ if isinstance(value, (staticmethod, classmethod)) else value)
        return
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if isinstance(obj, types.FunctionType):
        yield obj
    elif isinstance(obj, property):
        yield from (f for f in (obj.fget, obj.fset) if isinstance(f, types.FunctionType))


class _Reach:
    """Memoised "does this function's code reach a starter" over the tests' own helpers."""

    def __init__(self, found: Iterable[Any]) -> None:
        self.starters = {id(s) for s in found}
        self.memo: dict[int, bool] = {}

    def function(self, func: types.FunctionType) -> bool:
        key = id(func)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = False  # a cycle through helpers adds nothing
        codes = list(_code_objects(func.__code__))
        if any(isinstance(c, str) and c in ENTRY_POINTS for code in codes for c in code.co_consts):
            self.memo[key] = True
            return True
        names = {n for code in codes for n in code.co_names}
        for value in [*(func.__globals__[n] for n in names if n in func.__globals__), *_closure(func)]:
            if self._value(value, names):
                self.memo[key] = True
                break
        return self.memo[key]

    def _value(self, value: Any, names: set[str]) -> bool:
        if id(value) in self.starters:
            return True
        if isinstance(value, types.ModuleType):  # ``server.start``: an attribute the code names
            return any(id(getattr(value, n, None)) in self.starters for n in names)
        if _in_tests(value):
            return any(self.function(f) for f in _functions(value))
        return False


def _closure(func: types.FunctionType) -> list[Any]:
    cells = func.__closure__ or ()
    values = []
    for cell in cells:
        try:
            values.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    return values


def reaches_a_starter(func: Any, found: Iterable[Any] | None = None) -> bool:
    """Whether ``func`` (a test function, fixture function or helper) reaches a starter."""
    reach = _Reach(starters() if found is None else found)
    return any(reach.function(f) for f in _functions(func))


def audit(items: Iterable[pytest.Item]) -> tuple[list[str], list[str]]:
    """``(starting, unmarked)``: the node ids of tests that start something, and those not marked integration."""
    reach = _Reach(starters())
    starting: list[str] = []
    unmarked: list[str] = []
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        closure = item._fixtureinfo.name2fixturedefs  # every fixture the test needs, transitively
        funcs = [item.function, *(d.func for defs in closure.values() for d in defs)]
        if not FIXTURES & set(closure) and not any(reach.function(f) for fn in funcs for f in _functions(fn)):
            continue
        starting.append(item.nodeid)
        if item.get_closest_marker("integration") is None:
            unmarked.append(item.nodeid)
    return starting, unmarked

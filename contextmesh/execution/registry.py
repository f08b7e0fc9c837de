"""TaskRegistry: the deployment-owned table from a key to the code it means.

A key is text with no whitespace and no control characters (:func:`contextmesh.ids.key_problem`).
Workers and auditors live in separate namespaces because they carry different authority: an
auditor may disprove an assumption, a worker may not. The route from a key to a callable is this
table and nothing else — no module path, no qualified name, no import, no similar-key fallback.

Invariants (``tests/test_registry.py``; an AST test checks the last one):

1. A key is registered once per namespace for the life of the registry, even with the same callable.
2. A key looked up in the wrong namespace says which namespace it is in.
3. An absent key names itself and may suggest near misses; it never resolves to one.
4. ``describe()`` returns keys only.
5. This module imports no loader and calls nothing that turns text into code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from contextmesh.errors import ExecutionError
from contextmesh.ids import key_problem

__all__ = ["Registration", "RegistryError", "TaskRegistry"]


class RegistryError(ExecutionError):
    """A key is malformed, registered twice, absent, or in the other namespace."""


@dataclass(frozen=True)
class Registration:
    """One key's callable and how to run it: a timeout in seconds (or none) and a retry count."""

    key: str
    fn: Callable[..., Any]
    timeout: float | None = None
    retries: int = 0


class TaskRegistry:
    """Two namespaces of keys: workers (do the work) and auditors (judge it and its ground)."""

    def __init__(self) -> None:
        self._spaces: dict[str, dict[str, Registration]] = {"worker": {}, "auditor": {}}

    def register_worker(
        self, key: str, fn: Callable[..., Any], *, timeout: float | None = None, retries: int = 0
    ) -> None:
        """Register the worker behind ``key``."""
        self._register("worker", key, fn, timeout, retries)

    def register_auditor(
        self, key: str, fn: Callable[..., Any], *, timeout: float | None = None, retries: int = 0
    ) -> None:
        """Register the auditor behind ``key``."""
        self._register("auditor", key, fn, timeout, retries)

    def _register(self, space: str, key: str, fn: Callable[..., Any], timeout: float | None, retries: int) -> None:
        problem = key_problem(key)
        if problem is not None:
            raise RegistryError(f"cannot register {key!r}: {problem}")
        if not callable(fn):
            raise RegistryError(f"cannot register {space} '{key}': {type(fn).__name__} is not callable")
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise RegistryError(f"{space} '{key}': a timeout is a positive number of seconds, not {timeout!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise RegistryError(f"{space} '{key}': retries is a whole number from 0, not {retries!r}")
        if key in self._spaces[space]:
            raise RegistryError(
                f"{space} '{key}' is already registered; a key names one implementation for the life of the "
                "process (register a new key to run different code)"
            )
        self._spaces[space][key] = Registration(key, fn, None if timeout is None else float(timeout), retries)

    def worker(self, key: str) -> Registration:
        """The registration of a worker key."""
        return self._lookup("worker", key)

    def auditor(self, key: str) -> Registration:
        """The registration of an auditor key."""
        return self._lookup("auditor", key)

    def _lookup(self, space: str, key: str) -> Registration:
        found = self._spaces[space].get(key)
        if found is not None:
            return found
        other = "auditor" if space == "worker" else "worker"
        if key in self._spaces[other]:
            raise RegistryError(
                f"'{key}' is registered as an {other}, not a {space}"
                if other == "auditor"
                else f"'{key}' is registered as a {other}, not an {space}"
            )
        near = get_close_matches(key, list(self._spaces[space]), n=3, cutoff=0.75) if isinstance(key, str) else []
        hint = f"; registered {space}s that look close: {', '.join(near)}" if near else ""
        raise RegistryError(f"no {space} is registered under '{key}' in this deployment's registry{hint}")

    def has_worker(self, key: str) -> bool:
        """True when ``key`` is a registered worker."""
        return key in self._spaces["worker"]

    def has_auditor(self, key: str) -> bool:
        """True when ``key`` is a registered auditor."""
        return key in self._spaces["auditor"]

    def describe(self) -> dict[str, list[str]]:
        """The registered keys, sorted, and nothing else."""
        return {f"{space}s": sorted(table) for space, table in self._spaces.items()}

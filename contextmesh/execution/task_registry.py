"""TaskRegistry: the deployment-owned table from a key to the code it means.

A key is text with no whitespace and no control characters (:func:`contextmesh.core.ids.key_problem`).
Workers and auditors live in separate namespaces because they carry different authority: an
auditor may disprove an assumption, a worker may not. The route from a key to a callable is this
table and nothing else — no module path, no qualified name, no import, no similar-key fallback.

A key is registered with ``register_worker(key, fn)`` or, above the function, the decorator
``@registry.worker(key)`` (auditors alike); the engine looks it up with ``lookup_worker(key)``.
A third namespace holds **fact sources** (``register_fact(key, fn)`` / ``@registry.fact(key)``):
``fn(name)`` returns one named world fact as plain data, which a worker reads through
``ctx.read(key, name)`` and the engine re-reads to notice a change (ADR 0018).
An auditor may declare what it watches (ADR 0019): ``watches=fingerprint`` — a function of a
:class:`~contextmesh.execution.watch.WatchContext` returning text, a cheap fingerprint of the slice
of the world it reads — and ``reads=("kind", …)``, the evidence kinds it reads. A recheck runs it
only when one of them changed; an auditor that declares neither runs at every recheck.

A table is process-local. It reaches another process (a Dask or Ray worker running one task of a
wide layer) only by being **rebuilt there from deployment code**: a registry made with
``TaskRegistry(recipe=(build, args))`` pickles as "call ``build(*args)``", where ``build`` is a
module-level function of the deployment (``registry/``'s ``build_registry``) that pickle stores by
reference, so the receiving process imports the deployment's own module and registers the same
keys again. No callable of the table travels, and no key is ever turned into an import.

Invariants (``tests/test_registry.py``, ``tests/test_registry_pickle.py``; an AST test checks 5):

1. A key is registered once per namespace for the life of the registry, even with the same callable.
2. A key looked up in the wrong namespace says which namespace it is in.
3. An absent key names itself and may suggest near misses; it never resolves to one.
4. ``describe()`` returns keys only.
5. This module imports no loader and calls nothing that turns text into code.
6. A registry pickles only as its recipe: one without a recipe refuses to pickle (and to copy)
   with a :class:`RegistryError` that says how to give it one. A recipe's ``build`` is a plain
   module-level function outside ``__main__`` (so pickle names it, never ships its code) and its
   ``args`` a tuple of plain data (compared by equality on arrival).
7. The receiving process accepts the rebuilt table only if ``build(*args)`` returned a
   ``TaskRegistry`` with the same recipe and the same keys as the sender's; otherwise unpickling
   raises :class:`RegistryError` naming the difference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from difflib import get_close_matches
from types import FunctionType
from typing import Any, TypeVar

from contextmesh.core.errors import ExecutionError
from contextmesh.core.ids import key_problem

__all__ = ["Recipe", "Registration", "RegistryError", "TaskRegistry"]


class RegistryError(ExecutionError):
    """A key is malformed, registered twice, absent, or in the other namespace."""


@dataclass(frozen=True)
class Registration:
    """One key's callable and how to run it: a timeout in seconds (or none) and a retry count."""

    key: str
    fn: Callable[..., Any]
    timeout: float | None = None
    retries: int = 0
    watches: Callable[..., Any] | None = None
    reads: tuple[str, ...] = ()

    @property
    def declares(self) -> bool:
        """True when the auditor declared what it watches (a fingerprint, evidence kinds, or both)."""
        return self.watches is not None or bool(self.reads)


F = TypeVar("F", bound=Callable[..., Any])

Recipe = tuple[Callable[..., "TaskRegistry"], tuple[Any, ...]]
"""How another process rebuilds a registry: a module-level ``build`` function and its ``args``."""

_HOW = (
    "build it with TaskRegistry(recipe=(build, args)) inside a module-level function build(*args) of "
    "your deployment that returns it (registry/__init__.py's build_registry does): the other process "
    "imports that function and calls it, so the table is rebuilt from deployment code and no callable travels"
)


def _checked_recipe(recipe: Any) -> Recipe:
    if not isinstance(recipe, tuple) or len(recipe) != 2:
        raise RegistryError(f"a registry recipe is a pair (build, args), not {type(recipe).__name__}; {_HOW}")
    build, args = recipe
    if not isinstance(args, tuple):
        raise RegistryError(f"a registry recipe's args are a tuple, not {type(args).__name__}")
    if not isinstance(build, FunctionType):
        raise RegistryError(f"a registry recipe's build is a plain function, not {type(build).__name__}; {_HOW}")
    where = f"{build.__module__}.{build.__qualname__}"
    if build.__qualname__ != build.__name__ or build.__name__ == "<lambda>":
        raise RegistryError(
            f"a registry recipe's build must be a module-level function, not {where} (a lambda, nested "
            f"function or method is pickled by value, if at all); {_HOW}"
        )
    if build.__module__ == "__main__":
        raise RegistryError(
            f"a registry recipe's build must live in an importable module, not {where}: another process "
            f"cannot import a script's __main__; {_HOW}"
        )
    return build, args


def _rebuilt(build: Callable[..., TaskRegistry], args: tuple[Any, ...], keys: dict[str, list[str]]) -> TaskRegistry:
    """Unpickling a registry: ``build(*args)`` in this process, checked against the sender's keys."""
    where = f"{build.__module__}.{build.__qualname__}"
    registry = build(*args)
    if not isinstance(registry, TaskRegistry):
        raise RegistryError(
            f"rebuilding a registry: {where}(*args) returned {type(registry).__name__}, not a TaskRegistry"
        )
    if registry.recipe != (build, args):
        raise RegistryError(f"rebuilding a registry: {where}(*args) returned a registry without that same recipe")
    found = registry.describe()
    if found != keys:
        differ = sorted(
            f"{space[:-1]} '{key}' {'only here' if key in found.get(space, []) else 'missing here'}"
            for space in sorted(set(found) | set(keys))
            for key in sorted(set(found.get(space, [])) ^ set(keys.get(space, [])))
        )
        raise RegistryError(
            f"rebuilding a registry: {where}(*args) registered other keys in this process than the sender "
            f"held ({'; '.join(differ)}); register every key inside build, the same way in every process"
        )
    return registry


def _kinds(key: str, reads: Iterable[str]) -> tuple[str, ...]:
    """The evidence kinds an auditor reads: distinct non-empty text, sorted (a plain string is refused)."""
    if isinstance(reads, str) or not isinstance(reads, Iterable):
        raise RegistryError(
            f"auditor '{key}': reads= is a list of evidence kinds, not {reads!r} (write reads=({reads!r},))"
        )
    kinds = tuple(reads)
    for kind in kinds:
        if not isinstance(kind, str) or not kind.strip():
            raise RegistryError(f"auditor '{key}': an evidence kind in reads= is non-empty text, not {kind!r}")
    return tuple(sorted(set(kinds)))


class TaskRegistry:
    """Two namespaces of keys: workers (do the work) and auditors (judge it and its ground).

    ``recipe=(build, args)`` lets the registry cross a process boundary by being rebuilt: see the
    module docstring and invariants 6 and 7.
    """

    def __init__(self, *, recipe: Recipe | None = None) -> None:
        self._spaces: dict[str, dict[str, Registration]] = {"worker": {}, "auditor": {}, "fact": {}}
        self._recipe: Recipe | None = None if recipe is None else _checked_recipe(recipe)

    @property
    def recipe(self) -> Recipe | None:
        """How another process rebuilds this registry, or None (it stays in this process)."""
        return self._recipe

    def __reduce__(self) -> tuple[Callable[..., TaskRegistry], tuple[Any, ...]]:
        """Pickle as "rebuild from the recipe" (never the table's callables); refuse without one."""
        if self._recipe is None:
            raise RegistryError(
                f"this TaskRegistry has no recipe, so it cannot cross a process boundary (a Dask or Ray task "
                f"runner, a pickle, a copy): {_HOW}"
            )
        build, args = self._recipe
        return _rebuilt, (build, args, self.describe())

    def register_worker(
        self, key: str, fn: Callable[..., Any], *, timeout: float | None = None, retries: int = 0
    ) -> None:
        """Register the worker behind ``key``."""
        self._register("worker", key, fn, timeout, retries)

    def register_auditor(
        self,
        key: str,
        fn: Callable[..., Any],
        *,
        timeout: float | None = None,
        retries: int = 0,
        watches: Callable[..., Any] | None = None,
        reads: Iterable[str] = (),
    ) -> None:
        """Register the auditor behind ``key``, with what it watches (``watches``, ``reads``) if it says."""
        if watches is not None and not callable(watches):
            raise RegistryError(f"auditor '{key}': watches= is a fingerprint function, not {type(watches).__name__}")
        kinds = _kinds(key, reads)
        self._register("auditor", key, fn, timeout, retries)
        if watches is not None or kinds:
            held = self._spaces["auditor"][key]
            self._spaces["auditor"][key] = Registration(key, fn, held.timeout, held.retries, watches, kinds)

    def register_fact(self, key: str, fn: Callable[[str], Any]) -> None:
        """Register the fact source behind ``key``: ``fn(name)`` returns the fact ``name`` (plain data)."""
        self._register("fact", key, fn, None, 0)

    def fact(self, key: str) -> Callable[[F], F]:
        """Decorator: register the function below as the fact source behind ``key``; it is returned unchanged."""

        def register(fn: F) -> F:
            self.register_fact(key, fn)
            return fn

        return register

    def lookup_fact(self, key: str) -> Registration:
        """The registration of a fact source key."""
        found = self._spaces["fact"].get(key)
        if found is None:
            raise RegistryError(f"no fact source is registered under '{key}' in this deployment's registry")
        return found

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

    def worker(self, key: str, *, timeout: float | None = None, retries: int = 0) -> Callable[[F], F]:
        """Decorator: register the function below as the worker behind ``key``; it is returned unchanged.

        ``@registry.worker("billing.invoice.v1")`` is :meth:`register_worker` written above the function;
        the same checks run, when the decorator is applied.
        """

        def register(fn: F) -> F:
            self.register_worker(key, fn, timeout=timeout, retries=retries)
            return fn

        return register

    def auditor(
        self,
        key: str,
        *,
        timeout: float | None = None,
        retries: int = 0,
        watches: Callable[..., Any] | None = None,
        reads: Iterable[str] = (),
    ) -> Callable[[F], F]:
        """Decorator: register the function below as the auditor behind ``key``; it is returned unchanged.

        ``watches=fingerprint`` and ``reads=("kind", …)`` say what it watches (see :meth:`register_auditor`).
        """

        def register(fn: F) -> F:
            self.register_auditor(key, fn, timeout=timeout, retries=retries, watches=watches, reads=reads)
            return fn

        return register

    def lookup_worker(self, key: str) -> Registration:
        """The registration of a worker key."""
        return self._lookup("worker", key)

    def lookup_auditor(self, key: str) -> Registration:
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
        """The registered keys, sorted, and nothing else (``facts`` only when a fact source is registered)."""
        return {f"{space}s": sorted(table) for space, table in self._spaces.items() if table or space != "fact"}

"""A TaskRegistry crosses a process boundary only by being rebuilt from deployment code (its recipe).

``contextmesh/execution/task_registry.py`` invariants 6 and 7: a registry pickles as "call ``build(*args)``"
with ``build`` stored by reference; without a recipe it refuses with a message that says how to give
it one; the receiving side checks that the rebuilt table holds the sender's keys.
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from contextmesh.execution.task_registry import RegistryError, TaskRegistry

TESTS_DIR = (
    Path(__file__).resolve().parent
)  # this module's folder: the probe imports it by name, away from the checkout
BUILDS: list[tuple[Any, ...]] = []  # every call of build_small in this process, with its args


def hashing_worker(ctx: Any) -> dict[str, str]:
    return {"algorithm": "argon2id"}


def schema_worker(ctx: Any) -> dict[str, str]:
    return {"tables": "users"}


def advisory_auditor(ctx: Any) -> Any:
    return ctx.ok("no advisory")


def build_small(flavour: str, timeout: float | None = None) -> TaskRegistry:
    """A deployment's build function: module-level, so pickle stores it by reference."""
    BUILDS.append((flavour, timeout))
    registry = TaskRegistry(recipe=(build_small, (flavour, timeout)))
    registry.register_worker(f"{flavour}.hash.v1", hashing_worker, timeout=timeout, retries=1)
    registry.register_worker(f"{flavour}.schema.v1", schema_worker)
    registry.register_auditor(f"{flavour}.audit.v1", advisory_auditor)
    return registry


def build_without_recipe(flavour: str) -> TaskRegistry:
    registry = TaskRegistry()
    registry.register_worker(f"{flavour}.hash.v1", hashing_worker)
    return registry


def build_under_other_args(flavour: str) -> TaskRegistry:
    return TaskRegistry(recipe=(build_under_other_args, (flavour + "-other",)))


def build_nothing(flavour: str) -> Any:
    return {"worker": flavour}


# -- the round trip -----------------------------------------------------------------------------


def test_a_pickled_registry_is_rebuilt_by_calling_its_recipe() -> None:
    sent = build_small("auth", 5.0)
    BUILDS.clear()
    received = pickle.loads(pickle.dumps(sent))
    assert BUILDS == [("auth", 5.0)], "unpickling called the recipe once, with its args"
    assert received is not sent
    assert received.describe() == sent.describe()
    assert received.recipe == (build_small, ("auth", 5.0))
    # The same module-level callables, found by the rebuild (not shipped), with the key's options.
    hashing = received.lookup_worker("auth.hash.v1")
    assert hashing.fn is hashing_worker
    assert (hashing.timeout, hashing.retries) == (5.0, 1)
    assert received.lookup_auditor("auth.audit.v1").fn is advisory_auditor


def test_a_pickled_registry_carries_its_recipe_and_keys_but_no_callable_of_its_table() -> None:
    data = pickle.dumps(build_small("auth"))
    assert b"build_small" in data
    for name in (b"hashing_worker", b"schema_worker", b"advisory_auditor"):
        assert name not in data


def test_copying_a_registry_rebuilds_it_from_its_recipe_too() -> None:
    sent = build_small("auth")
    assert copy.deepcopy(sent).describe() == sent.describe()
    assert copy.copy(sent).describe() == sent.describe()


def test_another_process_rebuilds_the_table_by_importing_the_build_function() -> None:
    data = pickle.dumps(build_small("auth", 2.5))
    probe = (
        f"import pickle, sys\nsys.path.insert(0, {str(TESTS_DIR)!r})\n"
        "registry = pickle.loads(sys.stdin.buffer.read())\n"
        "import test_registry_pickle as here\n"
        "assert here.BUILDS == [('auth', 2.5)], here.BUILDS\n"
        "assert registry.lookup_worker('auth.hash.v1').fn is here.hashing_worker\n"
        "print(sorted(registry.describe()['workers']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], input=data, capture_output=True, timeout=60, check=False, cwd=TESTS_DIR
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "['auth.hash.v1', 'auth.schema.v1']"


# -- refusals -----------------------------------------------------------------------------------


def test_a_registry_without_a_recipe_refuses_to_pickle_and_says_how_to_fix_it() -> None:
    registry = build_without_recipe("auth")
    with pytest.raises(RegistryError) as caught:
        pickle.dumps(registry)
    message = str(caught.value)
    assert "has no recipe" in message
    assert "TaskRegistry(recipe=(build, args))" in message
    assert "build_registry" in message
    with pytest.raises(RegistryError, match="has no recipe"):
        copy.deepcopy(registry)


def _nested_build() -> Any:
    def build(flavour: str) -> TaskRegistry:
        return TaskRegistry()

    return build


def _main_build() -> Any:
    fn = types.FunctionType(build_small.__code__, {}, "build_in_a_script")
    fn.__module__, fn.__qualname__ = "__main__", "build_in_a_script"
    return fn


class _Builder:
    @staticmethod
    def build(flavour: str) -> TaskRegistry:
        return TaskRegistry()


@pytest.mark.parametrize(
    ("recipe", "expected"),
    [
        ((lambda flavour: TaskRegistry(), ("auth",)), "module-level function"),
        ((_nested_build(), ("auth",)), "module-level function"),
        ((_Builder.build, ("auth",)), "module-level function"),
        ((_main_build(), ("auth",)), "cannot import a script's __main__"),
        ((print, ("auth",)), "plain function, not builtin_function_or_method"),
        ((build_small, ["auth"]), "args are a tuple, not list"),
        ((build_small,), "pair \\(build, args\\), not tuple"),
        ([build_small, ("auth",)], "pair \\(build, args\\), not list"),
    ],
    ids=["lambda", "nested", "method", "main", "builtin", "list-args", "no-args", "list-recipe"],
)
def test_a_recipe_that_pickle_could_not_name_is_refused_when_the_registry_is_made(recipe: Any, expected: str) -> None:
    with pytest.raises(RegistryError, match=expected):
        TaskRegistry(recipe=recipe)


def test_keys_registered_outside_the_build_function_are_caught_when_the_table_is_rebuilt() -> None:
    sent = build_small("auth")
    sent.register_worker("auth.extra.v1", schema_worker)  # the receiving process would not have it
    data = pickle.dumps(sent)
    with pytest.raises(RegistryError, match=r"other keys .*worker 'auth\.extra\.v1' missing here"):
        pickle.loads(data)


def test_a_build_function_that_returns_no_registry_or_another_recipe_is_refused_on_arrival() -> None:
    # Unpickling calls the build function the recipe names; both checks happen in the receiver.
    odd = TaskRegistry(recipe=(build_nothing, ("auth",)))
    with pytest.raises(RegistryError, match="returned dict, not a TaskRegistry"):
        pickle.loads(pickle.dumps(odd))
    other = TaskRegistry(recipe=(build_under_other_args, ("auth",)))
    with pytest.raises(RegistryError, match="without that same recipe"):
        pickle.loads(pickle.dumps(other))

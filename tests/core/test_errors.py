"""One error tree: every class under ContextMeshError, documented, and drawn in the module docstring."""

from __future__ import annotations

import inspect
import re

import pytest

from contextmesh.core import errors
from contextmesh.core.errors import CanonicalError, ContextMeshError, InputError, NotFoundError, SnapshotError

CLASSES = sorted(
    (obj for _, obj in inspect.getmembers(errors, inspect.isclass) if obj.__module__ == errors.__name__),
    key=lambda cls: cls.__name__,
)
_TREE_LINE = re.compile(r"^(?P<indent>(?:│   |    )*)(?:[├└]── )?(?P<name>[A-Z]\w*Error)\b")


def drawn_tree() -> dict[str, str | None]:
    """Class name -> the parent drawn above it in the docstring (None for the root)."""
    doc = errors.__doc__ or ""
    block = doc.split("::", 1)[1]
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for raw in block.splitlines():
        line = raw[4:] if raw.startswith("    ") else raw
        match = _TREE_LINE.match(line)
        if match is None:
            continue
        depth = len(match["indent"]) // 4 + (1 if line[len(match["indent"]) :].startswith(("├", "└")) else 0)
        del stack[depth:]
        name = match["name"]
        assert name not in parents, f"{name} is drawn twice"
        parents[name] = stack[-1] if stack else None
        stack.append(name)
    return parents


def package_parent(cls: type) -> str | None:
    bases = [b for b in cls.__bases__ if b.__module__ == errors.__name__]
    return bases[0].__name__ if bases else None


def test_the_module_defines_the_classes_it_exports() -> None:
    assert {cls.__name__ for cls in CLASSES} == set(errors.__all__)
    assert len(CLASSES) >= 10


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_error_subclasses_contextmesh_error(cls: type) -> None:
    assert issubclass(cls, ContextMeshError)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_error_has_its_own_docstring(cls: type) -> None:
    assert cls.__dict__.get("__doc__"), f"{cls.__name__} has no docstring"


def test_the_docstring_draws_every_class() -> None:
    assert set(drawn_tree()) == {cls.__name__ for cls in CLASSES}


def test_the_drawn_tree_matches_the_class_hierarchy() -> None:
    tree = drawn_tree()
    assert tree["ContextMeshError"] is None
    assert tree["CanonicalError"] == "InputError"
    assert {name: package_parent(getattr(errors, name)) for name in tree} == tree


def test_input_error_carries_path_found_and_rule() -> None:
    error = InputError("nodes[3].invalidated", "the string 'false'", "a boolean is true or false")
    assert (error.path, error.found, error.rule) == (
        "nodes[3].invalidated",
        "the string 'false'",
        "a boolean is true or false",
    )
    message = str(error)
    for part in ("nodes[3].invalidated", "the string 'false'", "a boolean is true or false"):
        assert part in message


@pytest.mark.parametrize("cls", [CanonicalError, SnapshotError], ids=lambda cls: cls.__name__)
def test_untrusted_input_errors_are_input_errors(cls: type[InputError]) -> None:
    error = cls("edges[0].weight", "1", "a float")
    assert isinstance(error, InputError)
    assert error.path == "edges[0].weight"
    assert "edges[0].weight" in str(error)


def test_not_found_is_a_key_error_with_a_readable_message() -> None:
    error = NotFoundError("no node 'x' in this graph")
    assert isinstance(error, KeyError)
    assert str(error) == "no node 'x' in this graph"  # not the quoted repr KeyError would give
    with pytest.raises(KeyError):
        raise error

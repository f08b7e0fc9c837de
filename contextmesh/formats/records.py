"""Shared strictness for every format's loader: exact key sets, headers and record validation.

Every loader treats its input as untrusted. These helpers turn each way a file can be wrong into
a :class:`SnapshotError` with a path (``edges[4].weight``), what was found and the rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from contextmesh.core.errors import SnapshotError
from contextmesh.core.model import first_problem

__all__ = ["check_header", "exact_keys", "expect_dict", "expect_list", "field_path", "validate_record"]

RecordT = TypeVar("RecordT", bound=BaseModel)


def _describe(value: Any) -> str:
    kind = "null" if value is None else type(value).__name__
    text = repr(value)
    return f"{kind} {text[:60]}" if value is not None else "null"


def expect_dict(value: Any, path: str) -> dict[str, Any]:
    """``value`` as an object, or a refusal naming ``path``."""
    if type(value) is not dict:
        raise SnapshotError(path, f"{_describe(value)}", "an object is required here")
    return value


def expect_list(value: Any, path: str) -> list[Any]:
    """``value`` as a list, or a refusal naming ``path``."""
    if type(value) is not list:
        raise SnapshotError(path, f"{_describe(value)}", "a list is required here")
    return value


def field_path(path: str, name: str) -> str:
    """``nodes[3]`` + ``walks`` → ``nodes[3].walks``; at the document root just ``walks``."""
    return name if path in {"", "$"} else f"{path}.{name}"


def exact_keys(value: dict[str, Any], fields: Iterable[str], path: str) -> None:
    """Refuse a missing field or an unknown one: every field is required, nothing else allowed."""
    wanted = tuple(fields)
    for name in wanted:
        if name not in value:
            raise SnapshotError(field_path(path, name), "nothing", f"the field {name!r} is required")
    for name in value:
        if name not in wanted:
            raise SnapshotError(
                field_path(path, name), f"an unknown field {name!r}", "the format lists every field it allows"
            )


def check_header(
    data: dict[str, Any],
    schema: str,
    version: int,
    original_versions: Iterable[int],
    upgraded_versions: Iterable[int] = (),
) -> None:
    """Refuse a wrong schema, a version of the original project, or any version this loader does not
    read; the refusal says what it reads (``upgraded_versions``: older ones it upgrades on load)."""
    found_schema = data.get("schema")
    if found_schema != schema:
        raise SnapshotError("schema", _describe(found_schema), f"this loader reads {schema!r} files")
    found = data.get("version")
    if type(found) is not int:
        raise SnapshotError("version", _describe(found), "the version is an integer")
    older = sorted(upgraded_versions)
    reads = f"v{version}" + (f" (and {', '.join(f'v{v}' for v in older)}, upgraded on load)" if older else "")
    if found in tuple(original_versions):
        raise SnapshotError(
            "version",
            f"{schema} v{found}, a file of the original ContextMesh project",
            f"this ContextMesh reads only {schema} {reads}; files of the original project are not supported",
        )
    if found != version:
        raise SnapshotError("version", f"{schema} v{found}", f"this ContextMesh reads only {reads}")


def validate_record(model: type[RecordT], value: Any, path: str) -> RecordT:
    """Validate one record strictly, turning the first problem into a :class:`SnapshotError`."""
    record = expect_dict(value, path)
    exact_keys(record, model.model_fields, path)
    try:
        return model.model_validate(record)
    except ValidationError as exc:
        where, found, rule = first_problem(path, exc)
        raise SnapshotError(where, found, rule) from None

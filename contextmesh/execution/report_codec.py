"""A round's report and a recheck's report as plain data, and back: the one codec of both.

:func:`to_dict` writes a :class:`~contextmesh.execution.reports.RoundReport` or
:class:`~contextmesh.execution.reports.RecheckReport` as JSON-ready data — every field, each
invalidation with its whole preserved list, so reading it back gives an equal report. A flow run
returns this form and publishes it as its report artifact (ADR 0008); whoever reads a report back
(the MCP dispatcher, the walkthrough) reads it with :func:`round_report_from_dict` or
:func:`recheck_report_from_dict`.

The readers are strict, because what they read was persisted by another process: every field is
required and nothing else is allowed, each value has exactly its type (a ``round`` of ``true`` or
``1.0`` is refused), and a refusal is a :class:`~contextmesh.core.errors.SnapshotError` whose path
names the place (``report.invalidations[0].preserved_ids[3]``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from contextmesh.belief.invalidation import InvalidationReport
from contextmesh.core.errors import SnapshotError
from contextmesh.execution.reports import RecheckReport, RoundReport
from contextmesh.formats.records import exact_keys, expect_dict, expect_list, field_path

__all__ = ["RECHECK_FIELDS", "ROUND_FIELDS", "recheck_report_from_dict", "round_report_from_dict", "to_dict"]

_INVALIDATION_FIELDS = (
    "assumption_id",
    "statement",
    "invalidated",
    "invalidated_edges",
    "preserved_ids",
    "replacement_id",
    "evidence_id",
)
_RUN_FIELDS_RULE = "a run reference is null or an object of text (or null) values"


# -- writing -----------------------------------------------------------------------------------------


def to_dict(report: RoundReport | RecheckReport) -> dict[str, Any]:
    """Every field of ``report`` as plain data, in declaration order (fresh lists and objects: nothing
    aliases the report). The readers below list the same fields; the round-trip test holds the two
    together, so a field added to a report without its reader fails there, not in a flow run."""
    return dataclasses.asdict(report)


# -- reading -----------------------------------------------------------------------------------------


def _index_path(path: str, index: int) -> str:
    return f"{path}[{index}]"


def _describe(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {repr(value)[:60]}"


def _text(value: Any, path: str, *, nullable: bool = False) -> Any:
    if (value is None and nullable) or type(value) is str:
        return value
    raise SnapshotError(
        path, _describe(value), "text or null is required here" if nullable else "text is required here"
    )


def _whole(value: Any, path: str) -> int:
    if type(value) is not int or value < 0:
        raise SnapshotError(path, _describe(value), "a whole number (0 or more) is required here")
    return value


def _texts(value: Any, path: str) -> list[str]:
    return [_text(item, _index_path(path, i)) for i, item in enumerate(expect_list(value, path))]


def _text_map(value: Any, path: str) -> dict[str, str]:
    return {key: _text(item, field_path(path, key)) for key, item in expect_dict(value, path).items()}


def _invalidation(value: Any, path: str) -> InvalidationReport:
    data = expect_dict(value, path)
    exact_keys(data, _INVALIDATION_FIELDS, path)
    where = field_path(path, "invalidated")
    chains = {
        node: _texts(chain, field_path(where, node)) for node, chain in expect_dict(data["invalidated"], where).items()
    }
    return InvalidationReport(
        assumption_id=_text(data["assumption_id"], field_path(path, "assumption_id")),
        statement=_text(data["statement"], field_path(path, "statement")),
        invalidated=chains,
        invalidated_edges=_texts(data["invalidated_edges"], field_path(path, "invalidated_edges")),
        preserved_ids=_texts(data["preserved_ids"], field_path(path, "preserved_ids")),
        replacement_id=_text(data["replacement_id"], field_path(path, "replacement_id"), nullable=True),
        evidence_id=_text(data["evidence_id"], field_path(path, "evidence_id"), nullable=True),
    )


def _invalidations(value: Any, path: str) -> list[InvalidationReport]:
    return [_invalidation(item, _index_path(path, i)) for i, item in enumerate(expect_list(value, path))]


def _run_ref(value: Any, path: str) -> dict[str, str | None] | None:
    if value is None:
        return None
    if type(value) is not dict:
        raise SnapshotError(path, _describe(value), _RUN_FIELDS_RULE)
    return {key: _text(item, field_path(path, key), nullable=True) for key, item in value.items()}


def _layers(value: Any, path: str) -> list[list[str]]:
    return [_texts(layer, _index_path(path, i)) for i, layer in enumerate(expect_list(value, path))]


def _runs(value: Any, path: str) -> dict[str, dict[str, str | None] | None]:
    return {task: _run_ref(ref, field_path(path, task)) for task, ref in expect_dict(value, path).items()}


# Each report's fields, in the order to_dict writes them, with the reader of each.
_ROUND_READERS: dict[str, Callable[[Any, str], Any]] = {
    "round": _whole,
    "layers": _layers,
    "executed": _texts,
    "cached": _texts,
    "blocked": _text_map,
    "failed": _text_map,
    "stale": _texts,
    "invalidations": _invalidations,
    "runs": _runs,
    "revalidated": _text_map,
}
# Fields a report written before they existed does not hold, with the value they then mean.
_ROUND_OPTIONAL: dict[str, Callable[[], Any]] = {"revalidated": dict}
_RECHECK_READERS: dict[str, Callable[[Any, str], Any]] = {
    "round": _whole,
    "audited": _texts,
    "audit_errors": _text_map,
    "failed": _text_map,
    "invalidations": _invalidations,
    "stale": _texts,
    "skipped": _texts,
}


def _read(
    data: Any,
    readers: dict[str, Callable[[Any, str], Any]],
    path: str,
    optional: dict[str, Callable[[], Any]] | None = None,
) -> dict[str, Any]:
    found = expect_dict(data, path)
    absent = {name: make() for name, make in (optional or {}).items() if name not in found}
    exact_keys({**found, **absent}, readers, path)
    return {
        name: absent[name] if name in absent else read(found[name], field_path(path, name))
        for name, read in readers.items()
    }


def round_report_from_dict(data: Any, path: str = "report") -> RoundReport:
    """A :class:`RoundReport` from what :func:`to_dict` wrote (a report from before early cutoff, without
    ``revalidated``, too); anything else is refused, naming the place."""
    return RoundReport(**_read(data, _ROUND_READERS, path, _ROUND_OPTIONAL))


def recheck_report_from_dict(data: Any, path: str = "report") -> RecheckReport:
    """A :class:`RecheckReport` from what :func:`to_dict` wrote; anything else is refused, naming the place."""
    return RecheckReport(**_read(data, _RECHECK_READERS, path))


ROUND_FIELDS = tuple(_ROUND_READERS)
RECHECK_FIELDS = tuple(_RECHECK_READERS)

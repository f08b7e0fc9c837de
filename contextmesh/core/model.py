"""Strict records: nodes, edges, provenance and assumptions. No I/O, no coercion.

Every record is a pydantic v2 model in strict mode with unknown fields forbidden. Four traps of
this stack are closed here on purpose, and ``tests/test_model.py`` pins each:

1. Strict mode still accepts an ``int`` for a ``float`` field and turns ``1`` into ``1.0``; a file
   that said ``1`` would then not round-trip byte for byte. Float fields here accept floats only.
2. Floats accept NaN and the infinities unless told otherwise; ``allow_inf_nan=False`` is set.
3. In Python mode a strict tuple field refuses a JSON list (JSON mode accepts it). Our loaders
   validate in Python mode after the strict parser, so tuple fields accept a list as the
   container and stay strict about every element.
4. ``model_validate_json`` keeps the last of two duplicate keys. Untrusted bytes therefore never
   reach pydantic directly: :func:`contextmesh.core.canonical.loads` refuses duplicates first.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    Strict,
    StrictInt,
    StrictStr,
    ValidationError,
)

__all__ = [
    "AssumptionRecord",
    "AssumptionStatus",
    "EdgeRecord",
    "NodeRecord",
    "Provenance",
    "construct_record",
    "error_path",
    "first_problem",
]

AssumptionStatus = Literal["active", "rejected", "superseded"]


def _float_only(value: Any) -> Any:
    # Trap 1: refuse ints (and bools, which are ints) where the format promises a float.
    if type(value) is not float:
        raise ValueError(f"expected a JSON float such as 1.0, found {type(value).__name__} {value!r}")
    return value


StrictFloatValue = Annotated[float, BeforeValidator(_float_only)]
Count = Annotated[StrictInt, Field(ge=0)]
Text = Annotated[StrictStr, Field(min_length=1)]
TextTuple = Annotated[tuple[StrictStr, ...], Strict(False)]
Span = Annotated[tuple[Annotated[StrictInt, Field(ge=0)], Annotated[StrictInt, Field(ge=0)]], Strict(False)]

_STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=False)


class Provenance(BaseModel):
    """Where a node's content came from: a source, an optional character span, who extracted it."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)

    source_id: Text
    span: Span | None = None
    extractor: StrictStr = "manual"
    checks: TextTuple = ()
    recorded_at_build: Count = 0


class NodeRecord(BaseModel):
    """One node. ``walks`` is telemetry; ``pruned`` and ``invalidated`` take it out of walks."""

    model_config = _STRICT

    id: Text
    type: Text
    label: StrictStr
    attrs: dict[str, JsonValue]
    provenance: Provenance | None
    embedding: StrictStr | None
    build: Count
    walks: Count
    pruned: bool
    invalidated: bool

    @property
    def live(self) -> bool:
        """Walkable and counted: neither pruned nor invalidated."""
        return not (self.pruned or self.invalidated)


class EdgeRecord(BaseModel):
    """One typed edge. ``assumption_id`` binds it to an assumption (edge-level justification)."""

    model_config = _STRICT

    id: Text
    src: Text
    dst: Text
    type: Text
    evidence_ids: TextTuple
    weight: Annotated[StrictFloatValue, Field(gt=0.0)]
    build: Count
    assumption_id: Text | None
    traversals: Count
    invalidated: bool

    @property
    def live(self) -> bool:
        """Not invalidated (its endpoints are checked by the graph)."""
        return not self.invalidated


class AssumptionRecord(BaseModel):
    """The versioned record behind an ``assumption`` node; the node mirrors status and version."""

    model_config = _STRICT

    id: Text
    statement: Text
    status: AssumptionStatus
    version: Annotated[StrictInt, Field(ge=1)]
    created_by: Text
    created_at_build: Count
    evidence_ids: TextTuple
    supersedes: Text | None
    superseded_by: Text | None
    rejected_at_build: Count | None


_UNION_TAGS = frozenset({"list", "dict", "str", "int", "float", "bool", "none"})


_RecordT = TypeVar("_RecordT", bound=BaseModel)
# Per model: its field names in declaration order when construct_record may build it directly
# (no private attributes, no post-init hook, extras not allowed), else None.
_DIRECT: dict[type[BaseModel], tuple[str, ...] | None] = {}
_set = object.__setattr__


def construct_record(cls: type[_RecordT], **fields: Any) -> _RecordT:
    """``cls.model_construct(**fields)``, without validation and several times faster.

    For the graph's hot paths (one call per stored node or edge): ``model_construct`` does generic
    per-field work (aliases, defaults, a set insertion per field) that dominated a 500,000-edge
    build. When every field is given, in declaration order, and the model has no extras, private
    attributes or post-init hook, this fills the same four slots with the same values directly;
    otherwise it calls ``model_construct``. The caller has checked the values, exactly as
    ``model_construct`` requires.
    """
    if cls not in _DIRECT:
        plain = not cls.__private_attributes__ and cls.__pydantic_post_init__ is None
        plain = plain and cls.model_config.get("extra") != "allow"
        _DIRECT[cls] = tuple(cls.__pydantic_fields__) if plain else None
    names = _DIRECT[cls]
    if names is None or tuple(fields) != names:
        return cls.model_construct(**fields)
    record = cls.__new__(cls)
    _set(record, "__dict__", fields)  # a fresh dict of this call, in field order
    _set(record, "__pydantic_fields_set__", set(names))
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


def error_path(prefix: str, loc: tuple[int | str, ...]) -> str:
    """Render a pydantic error location under ``prefix``: ``nodes[3]`` + ``('attrs', 'x')``."""
    path = prefix
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def first_problem(prefix: str, error: ValidationError) -> tuple[str, str, str]:
    """The first validation problem as (path, what was found, what the rule wants)."""
    detail = error.errors(include_url=False)[0]
    # pydantic puts union-member tags ("list", "function-before[...]") into locations; they are not
    # part of the document's path. (An attrs key literally named "list" would be dropped from the
    # rendered path too; the message still names the problem.)
    loc = tuple(
        part
        for part in detail["loc"]
        if isinstance(part, int) or not (part in _UNION_TAGS or "[" in part or "(" in part)
    )
    found = "nothing" if detail["type"] == "missing" else f"{detail.get('input')!r}"
    rule = detail["msg"]
    if detail["type"] == "extra_forbidden":
        found, rule = f"an unknown field {loc[-1]!r}", "the format lists every field it allows"
    return error_path(prefix, loc), found, rule

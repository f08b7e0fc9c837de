"""Strict records: nodes, edges, provenance and assumptions. No I/O, no coercion.

Every record is checked by a pydantic v2 model in strict mode with unknown fields forbidden:
``Provenance`` and ``AssumptionRecord`` are such models; ``NodeRecord`` and ``EdgeRecord``, of which
a graph holds millions, are slotted classes checked by their schemas ``NodeSchema`` and
``EdgeSchema`` (ADR 0015). Four traps of this stack are closed here on purpose, and
``tests/core/test_model.py`` pins each:

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

import copy
from collections.abc import Collection, Mapping
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar

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
from pydantic.fields import FieldInfo

from contextmesh.core.vectors import VectorStore

__all__ = [
    "AssumptionRecord",
    "AssumptionStatus",
    "EdgeRecord",
    "EdgeSchema",
    "NodeRecord",
    "NodeSchema",
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


class NodeSchema(BaseModel):
    """What a stored node must be: the strict validator behind :meth:`NodeRecord.model_validate`."""

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


class EdgeSchema(BaseModel):
    """What a stored edge must be: the strict validator behind :meth:`EdgeRecord.model_validate`."""

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


_MISSING: Any = object()


class _SlottedRecord:
    """What NodeRecord and EdgeRecord share: fields in ``__slots__``, a pydantic-shaped surface.

    A stored record is one small object: no ``__dict__`` and no per-instance set of field names
    (a pydantic instance carried both, about 1 KB a record). Validation is the schema's:
    :meth:`model_validate` runs the strict pydantic schema (the same rules and error locations)
    and builds the slotted record from what it checked. Writing a field does not validate, as
    assigning to a pydantic model without ``validate_assignment`` did not.
    """

    __slots__ = ()
    _schema: ClassVar[type[BaseModel]]
    _fields: ClassVar[tuple[str, ...]]
    model_fields: ClassVar[dict[str, FieldInfo]]

    def __init_subclass__(cls, schema: type[BaseModel], **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._schema = schema
        cls._fields = tuple(schema.model_fields)
        cls.model_fields = dict(schema.model_fields)

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        """The record ``data`` describes, checked by the strict schema (raises ``ValidationError``)."""
        checked = cls._schema.model_validate(data)
        return cls(*(getattr(checked, name) for name in cls._fields))

    @classmethod
    def model_construct(cls, **fields: Any) -> Self:
        """A record from already-checked values, without validation; fields not given stay unset."""
        record = cls.__new__(cls)
        record._reset()
        for name, value in fields.items():
            setattr(record, name, value)
        return record

    def _reset(self) -> None:
        """Give the private slots their unstored values."""

    def model_dump(
        self, *, mode: Literal["python", "json"] = "python", exclude: Collection[str] = ()
    ) -> dict[str, Any]:
        """The fields as plain data (a provenance as its own dump; tuples as lists in json mode),
        without the fields named in ``exclude`` — as pydantic's ``model_dump`` takes them."""
        out: dict[str, Any] = {}
        for name in self._fields:
            if name in exclude:
                continue
            value = getattr(self, name)
            if isinstance(value, BaseModel):
                value = value.model_dump(mode=mode)
            elif mode == "json" and type(value) is tuple:
                value = list(value)
            out[name] = value
        return out

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy that belongs to no graph (``deep`` copies mutable field values too)."""
        values = {name: getattr(self, name, _MISSING) for name in self._fields}
        if deep:
            values = copy.deepcopy(values)
        values.update(update or {})
        return type(self).model_construct(**{k: v for k, v in values.items() if v is not _MISSING})

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n, _MISSING) == getattr(other, n, _MISSING) for n in self._fields)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a pydantic model that is not frozen

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n, _MISSING)!r}" for n in self._fields if hasattr(self, n))
        return f"{type(self).__name__}({shown})"


class NodeRecord(_SlottedRecord, schema=NodeSchema):
    """One node. ``walks`` is telemetry; ``pruned`` and ``invalidated`` take it out of walks.

    ``embedding`` reads and writes the stored text; a record stored in a graph keeps the vector's
    bytes in the graph's :class:`~contextmesh.core.vectors.VectorStore` and only a handle here.
    ``_seq``, ``_out``, ``_in`` and ``_part`` are the graph's: the record's insertion number, its
    edges out and in (in insertion order), and the fold, tail and (for a long id) head its id gives
    every edge id it is part of (ADR 0021, ``edge_ids.node_part``), once a write asked for them.
    """

    __slots__ = (
        "_embedding",
        "_in",
        "_out",
        "_part",
        "_seq",
        "_vectors",
        "attrs",
        "build",
        "id",
        "invalidated",
        "label",
        "provenance",
        "pruned",
        "type",
        "walks",
    )
    id: str
    type: str
    label: str
    attrs: dict[str, JsonValue]
    provenance: Provenance | None
    _embedding: str | int | None
    build: int
    walks: int
    pruned: bool
    invalidated: bool
    _vectors: VectorStore | None
    _seq: int
    _out: list[EdgeRecord] | None  # None: not yet gathered from a loaded graph's edge table (ADR 0038)
    _in: list[EdgeRecord] | None
    _part: tuple[str, str, str | None] | None

    def __init__(
        self,
        id: str,
        type: str,
        label: str,
        attrs: dict[str, JsonValue],
        provenance: Provenance | None,
        embedding: str | int | None,
        build: int,
        walks: int,
        pruned: bool,
        invalidated: bool,
        vectors: VectorStore | None = None,
        seq: int = -1,
    ) -> None:
        # ``embedding`` is a handle into ``vectors`` when a loader built the record, else text.
        self.id = id
        self.type = type
        self.label = label
        self.attrs = attrs
        self.provenance = provenance
        self._embedding = embedding
        self.build = build
        self.walks = walks
        self.pruned = pruned
        self.invalidated = invalidated
        self._vectors = vectors
        self._seq = seq
        self._out = []
        self._in = []
        self._part = None

    def _reset(self) -> None:
        self._vectors = None
        self._seq = -1
        self._out = []
        self._in = []
        self._part = None
        if not hasattr(self, "_embedding"):
            self._embedding = None

    @property
    def embedding(self) -> str | None:
        """The stored text of the node's vector, or ``None``."""
        value = self._embedding
        if type(value) is int:
            assert self._vectors is not None  # a handle is only ever set beside its store
            return self._vectors.text(value)
        return value  # type: ignore[return-value]

    @embedding.setter
    def embedding(self, text: str | None) -> None:
        store = self._vectors
        handle = store.add_text(text) if store is not None and type(text) is str else None
        self._embedding = text if handle is None else handle

    @property
    def live(self) -> bool:
        """Walkable and counted: neither pruned nor invalidated."""
        return not (self.pruned or self.invalidated)


class EdgeRecord(_SlottedRecord, schema=EdgeSchema):
    """One typed edge. ``assumption_id`` binds it to an assumption (edge-level justification).

    ``_seq`` is the graph's: the record's insertion number.
    """

    __slots__ = (
        "_seq",
        "assumption_id",
        "build",
        "dst",
        "evidence_ids",
        "id",
        "invalidated",
        "src",
        "traversals",
        "type",
        "weight",
    )
    id: str
    src: str
    dst: str
    type: str
    evidence_ids: tuple[str, ...]
    weight: float
    build: int
    assumption_id: str | None
    traversals: int
    invalidated: bool
    _seq: int

    def __init__(
        self,
        id: str,
        src: str,
        dst: str,
        type: str,
        evidence_ids: tuple[str, ...],
        weight: float,
        build: int,
        assumption_id: str | None,
        traversals: int,
        invalidated: bool,
        seq: int = -1,
    ) -> None:
        self.id = id
        self.src = src
        self.dst = dst
        self.type = type
        self.evidence_ids = evidence_ids
        self.weight = weight
        self.build = build
        self.assumption_id = assumption_id
        self.traversals = traversals
        self.invalidated = invalidated
        self._seq = seq

    def _reset(self) -> None:
        self._seq = -1

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


_ModelT = TypeVar("_ModelT", bound=BaseModel)
# Per model: its field names in declaration order, and one set of them that every directly built
# instance shares (pydantic only ever adds a name already in it, and a frozen model adds none).
_DIRECT: dict[type[BaseModel], tuple[tuple[str, ...], set[str]] | None] = {}
_set = object.__setattr__


def construct_record(cls: type[_ModelT], **fields: Any) -> _ModelT:
    """``cls.model_construct(**fields)`` for a pydantic model, without validation and several times faster.

    For hot paths (one call per stored provenance or assumption): ``model_construct`` does generic
    per-field work (aliases, defaults, a set insertion per field) and gives every instance its own
    set of field names (about 200 bytes each). When every field is given, in declaration order,
    and the model has no extras, private attributes or post-init hook, this fills the same four
    slots with the same values directly, sharing one set of names; otherwise it calls
    ``model_construct``. The caller has checked the values, exactly as ``model_construct`` requires.
    """
    if cls not in _DIRECT:
        plain = not cls.__private_attributes__ and cls.__pydantic_post_init__ is None
        plain = plain and cls.model_config.get("extra") != "allow"
        names = tuple(cls.__pydantic_fields__)
        _DIRECT[cls] = (names, set(names)) if plain else None
    direct = _DIRECT[cls]
    if direct is None or tuple(fields) != direct[0]:
        return cls.model_construct(**fields)
    record = cls.__new__(cls)
    _set(record, "__dict__", fields)  # a fresh dict of this call, in field order
    _set(record, "__pydantic_fields_set__", direct[1])
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

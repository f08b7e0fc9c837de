"""The entities file a person edits: canonical names, their aliases, and surfaces that are no entity.

::

    {"entities": [{"name": "Kiruna Ground Station", "aliases": ["KGS", "the Kiruna station"]}],
     "ignore": ["Action Items"]}

``entities`` (required) lists canonical names with registered aliases (``aliases`` may be left
out); ``ignore`` (optional) lists surface forms candidate discovery must never turn into an
entity — the way to take back a wrong suggestion, since discovery runs again on every read.

:func:`parse_entities` is strict, as every loader of untrusted input here: strict JSON (no
duplicate keys), no unknown field, non-empty text, at most :data:`MAX_ENTITIES_BYTES` bytes, and no
surface form — compared as the resolver compares them, by :func:`contextmesh.knowledge.text.normalize` —
that means two entities, or that is both an entity's and ignored. A surface with no words
(``"—"``) is refused, because the resolver could never match it.

:func:`entities_file_bytes` writes the same format one entity to a line, so a person can edit it
and a diff of it reads line by line; every value in it is serialised by :mod:`contextmesh.core.canonical`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.knowledge.corpus import EntitySpec
from contextmesh.knowledge.decoding import DocumentError, read_bounded
from contextmesh.knowledge.text import normalize

__all__ = ["MAX_ENTITIES_BYTES", "EntitiesFile", "entities_file_bytes", "load_entities", "parse_entities"]

MAX_ENTITIES_BYTES = 1024 * 1024
_TOP = ("entities", "ignore")
_ENTITY = ("name", "aliases")


@dataclass(frozen=True)
class EntitiesFile:
    """Registered entities in file order, and the surfaces discovery must not admit."""

    entities: tuple[EntitySpec, ...]
    ignore: tuple[str, ...]

    def surfaces(self) -> dict[str, str]:
        """Every registered surface, normalised, → the canonical name it belongs to."""
        return {normalize(surface): e.name for e in self.entities for surface in (e.name, *e.aliases)}


def _fields(value: Any, where: str, allowed: tuple[str, ...], required: tuple[str, ...]) -> dict[str, Any]:
    if type(value) is not dict:
        raise DocumentError(where, f"a {type(value).__name__}", "an object is required")
    for key in value:
        if key not in allowed:
            raise DocumentError(f"{where}.{key}", f"an unknown field {key!r}", f"allowed fields are {list(allowed)}")
    for key in required:
        if key not in value:
            raise DocumentError(f"{where}.{key}", "nothing", f"the field {key!r} is required")
    return value


def _surface(value: Any, where: str) -> str:
    if type(value) is not str or not value.strip():
        raise DocumentError(where, repr(value), "non-empty text is required")
    if not normalize(value):
        raise DocumentError(where, repr(value), "a name or alias has at least one word (a letter or digit)")
    return value


def _surfaces(value: Any, where: str) -> tuple[str, ...]:
    if type(value) is not list:
        raise DocumentError(where, f"a {type(value).__name__}", "a list of text is required")
    return tuple(_surface(item, f"{where}[{i}]") for i, item in enumerate(value))


def parse_entities(name: str, data: bytes) -> EntitiesFile:
    """The entities file ``name`` from its bytes, or a :class:`DocumentError` naming the place."""
    if len(data) > MAX_ENTITIES_BYTES:
        raise DocumentError(name, f"more than {MAX_ENTITIES_BYTES} bytes", "an entities file is at most 1 MiB")
    top = _fields(loads(data, name), name, _TOP, ("entities",))
    if type(top["entities"]) is not list:
        raise DocumentError(f"{name}: entities", f"a {type(top['entities']).__name__}", "a list is required")
    owners: dict[str, tuple[str, str]] = {}  # normalised surface → (canonical name, where)
    entities: list[EntitySpec] = []
    names: set[str] = set()
    for i, raw in enumerate(top["entities"]):
        at = f"{name}: entities[{i}]"
        item = _fields(raw, at, _ENTITY, ("name",))
        entity = EntitySpec(_surface(item["name"], f"{at}.name"), _surfaces(item.get("aliases", []), f"{at}.aliases"))
        if entity.name in names:
            raise DocumentError(f"{at}.name", f"the name {entity.name!r} a second time", "each entity is listed once")
        names.add(entity.name)
        places = [f"{at}.name", *(f"{at}.aliases[{k}]" for k in range(len(entity.aliases)))]
        for surface, place in zip((entity.name, *entity.aliases), places, strict=True):
            owner = owners.setdefault(normalize(surface), (entity.name, place))
            if owner[0] != entity.name:
                raise DocumentError(
                    place,
                    f"the surface {surface!r}, which {owner[1]} already gives to {owner[0]!r}",
                    "a name or alias means one entity",
                )
        entities.append(entity)
    ignore = _surfaces(top.get("ignore", []), f"{name}: ignore")
    for k, surface in enumerate(ignore):
        taken = owners.get(normalize(surface))
        if taken is not None:
            raise DocumentError(
                f"{name}: ignore[{k}]",
                f"{surface!r}, a surface of the entity {taken[0]!r}",
                "an ignored surface is no entity's",
            )
    return EntitiesFile(tuple(entities), ignore)


def load_entities(path: Path, name: str | None = None) -> EntitiesFile:
    """Read and check the entities file at ``path``."""
    label = name or str(path)
    return parse_entities(label, read_bounded(path, label, MAX_ENTITIES_BYTES))


def _value(value: Any) -> bytes:
    return file_bytes(value).rstrip(b"\n")


def entities_file_bytes(entities: Sequence[EntitySpec], ignore: Sequence[str] = ()) -> bytes:
    """The entities file for ``entities`` and ``ignore``: one entity per line, ``name`` first."""
    lines = [b'{"name": ' + _value(e.name) + b', "aliases": ' + _value(list(e.aliases)) + b"}" for e in entities]
    listed = b"[\n  " + b",\n  ".join(lines) + b"\n]" if lines else b"[]"
    return b'{"entities": ' + listed + b',\n "ignore": ' + _value(list(ignore)) + b"}\n"

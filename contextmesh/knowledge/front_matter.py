"""The strict ``---`` header at the top of a document: ``title``, ``origin`` and ``date``.

A document has front matter exactly when its first line is ``---``; the header runs to the next
line that is ``---``. It is not YAML: every line in it is blank or ``key: value``, the value being
the rest of the line, optionally inside one pair of matching quotes. Only three keys exist:

* ``title`` — the document's title (non-empty);
* ``origin`` — where the document lives in the team's world: a wiki path, a URL, a ticket id;
* ``date`` — the ISO calendar date ``YYYY-MM-DD`` it was written or retrieved.

Refused, each with one line naming the file and line: a header that is never closed, a line that
is not ``key: value``, an unknown key, a key given twice, an empty value, a value that opens a
quote it does not close, a YAML block, list or map value (``|``, ``>``, ``[``, ``{`` …; quote it to
mean the character), and a date that is not a real ISO date. Refusing YAML rather than half-parsing
it means a header written for another tool fails loudly instead of becoming a wrong title.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contextmesh.knowledge.corpus import CorpusError, parse_date
from contextmesh.knowledge.decoding import DocumentError

__all__ = ["FRONT_MATTER_KEYS", "FrontMatter", "parse_front_matter"]

FRONT_MATTER_KEYS = ("title", "origin", "date")
_FENCE = "---"
_ENTRY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(.*))?")
_YAML_INDICATORS = tuple("|>[]{}&*!%@`")


@dataclass(frozen=True)
class FrontMatter:
    """The header's values (``None`` where absent) and the index of the first line after it."""

    title: str | None
    origin: str | None
    date: str | None
    body_start: int


def _value(raw: str, where: str, key: str) -> str:
    value = raw.strip()
    if not value:
        raise DocumentError(where, f"the key {key!r} with no value", "a front-matter key has a value on its line")
    if value[0] in "\"'":
        if len(value) < 2 or value[-1] != value[0]:
            raise DocumentError(where, f"the value {value!r}", "a quoted value ends with the quote it opens with")
        value = value[1:-1].strip()
        if not value:
            raise DocumentError(where, f"the key {key!r} with an empty value", "a front-matter value is not empty")
        return value
    if value.startswith(_YAML_INDICATORS):
        raise DocumentError(
            where,
            f"the value {value!r}",
            "front-matter values are plain text on one line; quote a value that starts with "
            + " ".join(_YAML_INDICATORS),
        )
    return value


def parse_front_matter(name: str, lines: list[str]) -> FrontMatter:
    """The front matter of the document ``name`` split into ``lines``, or a :class:`DocumentError`."""
    if not lines or lines[0].rstrip() != _FENCE:
        return FrontMatter(None, None, None, 0)
    # Find the close first: a header never closed is reported as that, not as its first odd line.
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == _FENCE), None)
    if close is None:
        raise DocumentError(
            f"{name}:1", "front matter that is never closed", "a '---' line opens front matter and another closes it"
        )
    values: dict[str, tuple[str, int]] = {}
    for index in range(1, close):
        line = lines[index]
        number = index + 1
        where = f"{name}:{number}"
        if not line.strip():
            continue
        match = _ENTRY.fullmatch(line.rstrip())
        if match is None:
            raise DocumentError(where, f"the line {line.strip()[:60]!r}", "front-matter lines are 'key: value'")
        key = match.group(1)
        if key not in FRONT_MATTER_KEYS:
            raise DocumentError(
                where, f"an unknown front-matter key {key!r}", f"allowed keys are {', '.join(FRONT_MATTER_KEYS)}"
            )
        if key in values:
            raise DocumentError(
                where,
                f"the key {key!r} a second time (first on line {values[key][1]})",
                "a front-matter key is given once",
            )
        values[key] = (_value(match.group(2) or "", where, key), number)
    date = values.get("date")
    if date is not None:
        try:
            parse_date(date[0], "date")
        except CorpusError as exc:
            raise DocumentError(f"{name}:{date[1]}", f"the date {date[0]!r}", exc.rule) from None

    def get(key: str) -> str | None:
        return values[key][0] if key in values else None

    return FrontMatter(get("title"), get("origin"), get("date"), close + 1)

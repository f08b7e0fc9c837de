"""How an MCP error shows a client's value: a short prefix and the length, never the whole value.

Every message this server sends about a value it refused — a tool argument, a pydantic error, an
unknown tool, method, resource or prompt, an id that is not in the graph — quotes it through
:func:`quote`; a message assembled elsewhere (the SDK's own texts) passes through :func:`clip`
before it reaches the wire or the log. A 10-million-character string therefore costs a line of
about a hundred characters, not 20 MB, and a value with line breaks or control characters stays
on one line (``repr`` escapes them).
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

__all__ = [
    "MESSAGE_CHARS",
    "QUOTE_CHARS",
    "argument_refusal",
    "clip",
    "long_strings",
    "quote",
    "scrub",
    "scrub_data",
    "unknown_arguments",
    "unknown_tool",
]

QUOTE_CHARS = 60
"""The longest prefix of a value an error message quotes."""
MESSAGE_CHARS = 1000
"""The longest error message (or log line) this server emits about one refusal."""

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = QUOTE_CHARS
_REPR.maxother = QUOTE_CHARS
_REPR.maxlong = QUOTE_CHARS
for _name in ("maxdict", "maxlist", "maxtuple", "maxset", "maxfrozenset", "maxdeque", "maxarray"):
    setattr(_REPR, _name, 4)


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """``value`` as an error message shows it: its ``repr`` up to ``limit`` characters, then its size.

    >>> quote("short")
    "'short'"
    >>> quote("x" * 100, limit=4)
    "'xxxx'… (100 characters)"
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value)} characters)"
    if isinstance(value, (dict, list, tuple)):
        shown = _REPR.repr(value)
        if len(shown) > limit:
            shown = shown[:limit] + "…"
        kind = "entr" + ("y" if len(value) == 1 else "ies") if isinstance(value, dict) else "item"
        plural = "s" if len(value) != 1 and not isinstance(value, dict) else ""
        return f"{shown} (a {type(value).__name__} of {len(value)} {kind}{plural})"
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            digits = str(value)
        except ValueError:  # beyond Python's digit limit for str()
            return "<an integer too long to show>"
        return digits if len(digits) <= limit else f"{digits[:limit]}… ({len(digits)} digits)"
    shown = _REPR.repr(value)
    return shown if len(shown) <= limit else shown[:limit] + "…"


def clip(text: str, limit: int = MESSAGE_CHARS) -> str:
    """A message on one line and at most ``limit`` characters of it (then how long it was)."""
    shown = text[:limit]
    if any(c in shown for c in "\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029"):
        shown = " ".join(shown.split())
    return shown if len(text) <= limit else f"{shown}… ({len(text)} characters)"


# -- messages about a request's own values ------------------------------------------------------------

_SCAN_LIMIT = 2000  # values looked at per request: enough for any honest call, bounded for a hostile one
_SHOWN_ERRORS = 3


def long_strings(*roots: Any) -> list[str]:
    """Every string (value or key) longer than :data:`QUOTE_CHARS` in ``roots``, longest first.

    These are what a message assembled elsewhere might embed whole; :func:`scrub` replaces them.
    """
    found: set[str] = set()
    stack = list(roots)
    seen = 0
    while stack and seen < _SCAN_LIMIT:
        item = stack.pop()
        seen += 1
        if isinstance(item, str):
            if len(item) > QUOTE_CHARS:
                found.add(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return sorted(found, key=len, reverse=True)


def scrub(text: str, values: Iterable[str] = ()) -> str:
    """``text`` with each of ``values`` replaced by its :func:`quote`, then :func:`clip` ped."""
    for value in values:
        if value in text:
            text = text.replace(value, quote(value))
    return clip(text)


def scrub_data(data: Any, values: Iterable[str] = (), depth: int = 4) -> Any:
    """An error's ``data`` with every string in it scrubbed (and nothing nested deeper than ``depth``)."""
    values = list(values)
    if isinstance(data, str):
        return scrub(data, values)
    if depth == 0:
        return None
    if isinstance(data, dict):
        items = list(data.items())[: _SHOWN_ERRORS * 4]
        return {scrub(str(k), values): scrub_data(v, values, depth - 1) for k, v in items}
    if isinstance(data, list):
        return [scrub_data(v, values, depth - 1) for v in data[: _SHOWN_ERRORS * 4]]
    return data


def _where(location: tuple[Any, ...]) -> str:
    return ".".join(str(part) if len(str(part)) <= QUOTE_CHARS else quote(str(part)) for part in location)


def argument_refusal(tool: str, error: ValidationError) -> str:
    """One line for arguments that failed their schema: where, the value (quoted short), the rule."""
    problems = []
    errors = error.errors(include_url=False)
    for item in errors[:_SHOWN_ERRORS]:
        where = _where(item["loc"])
        if item["type"] == "missing":
            problems.append(f"{where} is required")
        else:
            problems.append(f"{where} {quote(item.get('input'))}: {clip(item['msg'], 200)}")
    more = f"; and {len(errors) - _SHOWN_ERRORS} more" if len(errors) > _SHOWN_ERRORS else ""
    return f"{tool} refused its arguments: {'; '.join(problems)}{more}"


def unknown_arguments(tool: str, unknown: list[str], allowed: Iterable[str]) -> str:
    """One line for arguments a tool does not take (the SDK would drop them silently)."""
    shown = ", ".join(quote(name) for name in unknown[:_SHOWN_ERRORS])
    more = f" and {len(unknown) - _SHOWN_ERRORS} more" if len(unknown) > _SHOWN_ERRORS else ""
    return f"{tool} takes no argument {shown}{more}; it takes {sorted(allowed) or 'none'}"


def unknown_tool(name: Any, tools: Iterable[str]) -> str:
    """One line for a tools/call naming no tool of this server."""
    return f"unknown tool {quote(name)}; the tools are {', '.join(sorted(tools))}"

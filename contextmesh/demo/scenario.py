"""The demo's break scenario: the observation that disproves the sizing assumption, loaded strictly.

The file (``break.json``) is the demo's own data, not part of the engine's sidecar format: an
object of exactly ``assumption`` (a key of the sidecar's assumptions), ``evidence_text`` (the
observation, non-empty text) and ``source`` (the key of the corpus source that reported it).
Like every file, it is untrusted: an unknown or missing field, a dangling key or empty text is a
:class:`~contextmesh.CorpusError` whose path starts with ``break``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextmesh import Corpus, CorpusError, Sidecar, parse_json

__all__ = ["BreakScenario", "load_break"]

_FIELDS = ("assumption", "evidence_text", "source")


@dataclass(frozen=True)
class BreakScenario:
    """Which assumption breaks, on what observation, reported by which source."""

    assumption: str
    evidence_text: str
    source: str

    def statement(self, sidecar: Sidecar) -> str:
        """The broken assumption's statement, as the sidecar words it."""
        return next(a.statement for a in sidecar.assumptions if a.key == self.assumption)


def _text(data: dict[str, Any], name: str) -> str:
    value = data[name]
    if type(value) is not str or not value.strip():
        raise CorpusError(f"break.{name}", repr(value), "non-empty text is required")
    return value


def load_break(path: Path, corpus: Corpus, sidecar: Sidecar) -> BreakScenario:
    """Read a break scenario and check its keys against ``corpus`` and ``sidecar``."""
    data = parse_json(path.read_bytes(), "break")
    if type(data) is not dict:
        raise CorpusError("break", type(data).__name__, "an object is required")
    for name in _FIELDS:
        if name not in data:
            raise CorpusError(f"break.{name}", "nothing", f"the field {name!r} is required")
    for name in data:
        if name not in _FIELDS:
            raise CorpusError(f"break.{name}", f"an unknown field {name!r}", f"allowed fields are {list(_FIELDS)}")
    scenario = BreakScenario(*(_text(data, name) for name in _FIELDS))
    if scenario.assumption not in {a.key for a in sidecar.assumptions}:
        raise CorpusError("break.assumption", repr(scenario.assumption), "it must name an assumption key")
    if scenario.source not in {s.key for s in corpus.sources}:
        raise CorpusError("break.source", repr(scenario.source), "it must name a source key")
    return scenario

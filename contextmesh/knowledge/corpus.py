"""A corpus of sources to build a graph from, and its decision/assumption sidecar, loaded strictly.

A corpus file is JSON: ``entities`` (canonical names with registered aliases) and ``sources``
(title, origin, ISO retrieval date or null, spans with a headline ``text``, a ``body`` and explicit
``relations`` to other spans). The sidecar lists the corpus's assumptions and decisions, and
nothing else (a scenario that breaks one of them is its user's own data, kept in a file of their
own); ``load_sidecar`` checks every reference against the corpus.
Both loaders treat their files as untrusted: unknown fields, duplicate keys, bad dates and dangling
references are refused with a path.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextmesh.core.canonical import loads
from contextmesh.core.errors import InputError

__all__ = [
    "AssumptionSpec",
    "Corpus",
    "CorpusError",
    "DecisionSpec",
    "EntitySpec",
    "Relation",
    "Sidecar",
    "SourceSpec",
    "SpanSpec",
    "load_corpus",
    "load_sidecar",
    "parse_date",
]


_ISO_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


class CorpusError(InputError):
    """A corpus or sidecar file that cannot be used as it is."""


@dataclass(frozen=True)
class EntitySpec:
    """A canonical entity name and its registered aliases."""

    name: str
    aliases: tuple[str, ...]


@dataclass(frozen=True)
class Relation:
    """An explicit claim-to-claim relation the author made (``contradicts``, ``cites``…)."""

    type: str
    target: str


@dataclass(frozen=True)
class SpanSpec:
    """One span: its headline sentence (the candidate claim), the rest of its paragraph, relations."""

    key: str
    text: str
    body: str
    relations: tuple[Relation, ...]

    @property
    def chunk(self) -> str:
        """The whole paragraph, as flat retrieval would send it."""
        return f"{self.text} {self.body}".strip()


@dataclass(frozen=True)
class SourceSpec:
    """A document: where it came from, when it was retrieved (or ``None``), its spans."""

    key: str
    title: str
    origin: str
    retrieved_at: str | None
    spans: tuple[SpanSpec, ...]


@dataclass(frozen=True)
class Corpus:
    """Entities and sources, in file order."""

    entities: tuple[EntitySpec, ...]
    sources: tuple[SourceSpec, ...]

    def spans(self) -> list[tuple[SourceSpec, SpanSpec]]:
        """Every span with its source, in corpus order."""
        return [(source, span) for source in self.sources for span in source.spans]


@dataclass(frozen=True)
class AssumptionSpec:
    """An assumption the corpus's work took as true."""

    key: str
    statement: str
    source: str
    supported_by_spans: tuple[str, ...]


@dataclass(frozen=True)
class DecisionSpec:
    """A decision with its rationale, the claims it rests on, its assumptions and what it made."""

    key: str
    title: str
    rationale: str
    source: str
    rests_on: tuple[str, ...]
    assumptions: tuple[str, ...]
    needs: tuple[str, ...]
    produces: tuple[str, ...]
    cites: tuple[str, ...]
    supersedes: str | None


@dataclass(frozen=True)
class Sidecar:
    """The corpus's assumptions and decisions."""

    assumptions: tuple[AssumptionSpec, ...]
    decisions: tuple[DecisionSpec, ...]


def parse_date(value: str, where: str = "date") -> dt.date:
    """A strict ISO ``YYYY-MM-DD`` date, or a :class:`CorpusError` naming it."""
    if not isinstance(value, str) or not _ISO_DATE.match(value):
        raise CorpusError(where, repr(value), "dates are ISO calendar dates, YYYY-MM-DD")
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise CorpusError(where, repr(value), "dates are ISO calendar dates, YYYY-MM-DD") from None


def _obj(value: Any, where: str, fields: tuple[str, ...]) -> dict[str, Any]:
    if type(value) is not dict:
        raise CorpusError(where, type(value).__name__, "an object is required")
    for name in fields:
        if name not in value:
            raise CorpusError(f"{where}.{name}", "nothing", f"the field {name!r} is required")
    for name in value:
        if name not in fields:
            raise CorpusError(f"{where}.{name}", f"an unknown field {name!r}", f"allowed fields are {list(fields)}")
    return value


def _text(value: Any, where: str, *, empty: bool = False) -> str:
    if type(value) is not str or (not empty and not value.strip()):
        raise CorpusError(where, repr(value), "non-empty text is required" if not empty else "text is required")
    return value


def _texts(value: Any, where: str) -> tuple[str, ...]:
    if type(value) is not list:
        raise CorpusError(where, type(value).__name__, "a list of text is required")
    return tuple(_text(item, f"{where}[{i}]") for i, item in enumerate(value))


def load_corpus(path: Path) -> Corpus:
    """Read and check a corpus file."""
    data = _obj(loads(path.read_bytes()), "$", ("entities", "sources"))
    entities = []
    for i, raw in enumerate(data["entities"] if type(data["entities"]) is list else []):
        item = _obj(raw, f"entities[{i}]", ("name", "aliases"))
        entities.append(
            EntitySpec(_text(item["name"], f"entities[{i}].name"), _texts(item["aliases"], f"entities[{i}].aliases"))
        )
    if not entities:
        raise CorpusError("entities", "no entities", "a corpus names at least one entity")
    sources = []
    span_keys: set[str] = set()
    source_keys: set[str] = set()
    for i, raw in enumerate(data["sources"] if type(data["sources"]) is list else []):
        where = f"sources[{i}]"
        item = _obj(raw, where, ("key", "title", "origin", "retrieved_at", "spans"))
        key = _text(item["key"], f"{where}.key")
        if key in source_keys:
            raise CorpusError(f"{where}.key", repr(key), "source keys are unique")
        source_keys.add(key)
        retrieved = item["retrieved_at"]
        if retrieved is not None:
            parse_date(retrieved, f"{where}.retrieved_at")
        spans = []
        for j, raw_span in enumerate(item["spans"] if type(item["spans"]) is list else []):
            at = f"{where}.spans[{j}]"
            raw_fields = _obj(raw_span, at, ("key", "text", "body", "relations"))
            span_key = _text(raw_fields["key"], f"{at}.key")
            if span_key in span_keys:
                raise CorpusError(f"{at}.key", repr(span_key), "span keys are unique across the corpus")
            span_keys.add(span_key)
            relations = []
            for k, raw_rel in enumerate(raw_fields["relations"] if type(raw_fields["relations"]) is list else []):
                rel = _obj(raw_rel, f"{at}.relations[{k}]", ("type", "target"))
                relations.append(
                    Relation(
                        _text(rel["type"], f"{at}.relations[{k}].type"),
                        _text(rel["target"], f"{at}.relations[{k}].target"),
                    )
                )
            spans.append(
                SpanSpec(
                    span_key,
                    _text(raw_fields["text"], f"{at}.text"),
                    _text(raw_fields["body"], f"{at}.body", empty=True),
                    tuple(relations),
                )
            )
        sources.append(
            SourceSpec(
                key,
                _text(item["title"], f"{where}.title"),
                _text(item["origin"], f"{where}.origin"),
                retrieved,
                tuple(spans),
            )
        )
    if not sources:
        raise CorpusError("sources", "no sources", "a corpus has at least one source")
    for i, source in enumerate(sources):
        for j, span in enumerate(source.spans):
            for k, relation in enumerate(span.relations):
                if relation.target not in span_keys:
                    raise CorpusError(
                        f"sources[{i}].spans[{j}].relations[{k}].target",
                        repr(relation.target),
                        "a relation targets a span key of this corpus",
                    )
    return Corpus(tuple(entities), tuple(sources))


def load_sidecar(path: Path, corpus: Corpus) -> Sidecar:
    """Read a sidecar and check every reference against ``corpus``."""
    data = _obj(loads(path.read_bytes()), "$", ("assumptions", "decisions"))
    source_keys = {s.key for s in corpus.sources}
    span_keys = {span.key for _, span in corpus.spans()}
    entity_names = {e.name for e in corpus.entities}
    assumptions = []
    for i, raw in enumerate(data["assumptions"] if type(data["assumptions"]) is list else []):
        at = f"assumptions[{i}]"
        item = _obj(raw, at, ("key", "statement", "source", "supported_by_spans"))
        spec = AssumptionSpec(
            _text(item["key"], f"{at}.key"),
            _text(item["statement"], f"{at}.statement"),
            _text(item["source"], f"{at}.source"),
            _texts(item["supported_by_spans"], f"{at}.supported_by_spans"),
        )
        _known(spec.source, source_keys, f"{at}.source", "a source key")
        for k, key in enumerate(spec.supported_by_spans):
            _known(key, span_keys, f"{at}.supported_by_spans[{k}]", "a span key")
        assumptions.append(spec)
    assumption_keys = [a.key for a in assumptions]
    if len(set(assumption_keys)) != len(assumption_keys):
        raise CorpusError("assumptions", "a repeated key", "assumption keys are unique")
    decisions: list[DecisionSpec] = []
    for i, raw in enumerate(data["decisions"] if type(data["decisions"]) is list else []):
        at = f"decisions[{i}]"
        fields = (
            "key",
            "title",
            "rationale",
            "source",
            "rests_on",
            "assumptions",
            "needs",
            "produces",
            "cites",
            "supersedes",
        )
        item = _obj(raw, at, fields)
        supersedes = item["supersedes"]
        decision = DecisionSpec(
            _text(item["key"], f"{at}.key"),
            _text(item["title"], f"{at}.title"),
            _text(item["rationale"], f"{at}.rationale"),
            _text(item["source"], f"{at}.source"),
            _texts(item["rests_on"], f"{at}.rests_on"),
            _texts(item["assumptions"], f"{at}.assumptions"),
            _texts(item["needs"], f"{at}.needs"),
            _texts(item["produces"], f"{at}.produces"),
            _texts(item["cites"], f"{at}.cites"),
            None if supersedes is None else _text(supersedes, f"{at}.supersedes"),
        )
        earlier = {d.key for d in decisions}
        _known(decision.source, source_keys, f"{at}.source", "a source key")
        for name, values, known, what in (
            ("rests_on", decision.rests_on, span_keys, "a span key"),
            ("assumptions", decision.assumptions, set(assumption_keys), "an assumption key"),
            ("needs", decision.needs, earlier, "the key of an earlier decision"),
            ("produces", decision.produces, entity_names, "an entity name of the corpus"),
            ("cites", decision.cites, source_keys, "a source key"),
        ):
            for k, value in enumerate(values):
                _known(value, known, f"{at}.{name}[{k}]", what)
        if decision.supersedes is not None:
            _known(decision.supersedes, earlier, f"{at}.supersedes", "the key of an earlier decision")
        decisions.append(decision)
    return Sidecar(tuple(assumptions), tuple(decisions))


def _known(value: str, known: set[str], where: str, what: str) -> None:
    if value not in known:
        raise CorpusError(where, repr(value), f"it must name {what}")

"""The hand-written entity lists of the test corpora, read, and how much of one an ingested folder resolves.

A list follows the corpora's convention (``tests/data/corpora/README.md``): numbered lines
``N. Canonical — form, form *(note)*``, and a section whose heading holds "never" listing pairs as
``- A and B`` or ``- A ≠ B``. A listed entity is *resolved* when its canonical name, or failing
that one of its listed forms, resolves to a graph entity; a never-merge group is *merged* when two
of its names resolve to the same entity. Used by ``bench/entities.py`` and the acceptance tests.
"""

from __future__ import annotations

import re
from pathlib import Path

from contextmesh.belief.ingestion import ingest
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.resolve import Resolver

__all__ = ["measure", "parse_list"]

_ITEM = re.compile(r"^\d+\.\s+(.*)$")
_NOTE = re.compile(r"\*\([^)]*\)\*|\([^)]*\)")


def _surface(text: str) -> str:
    return _NOTE.sub("", text).replace("`", "").strip(" .")


def parse_list(text: str) -> tuple[list[tuple[str, list[str]]], list[list[str]]]:
    """The listed entities (canonical, forms) and the never-merge groups."""
    entities: list[tuple[str, list[str]]] = []
    groups: list[list[str]] = []
    never = False
    for line in text.splitlines():
        if line.startswith("#"):
            never = "never" in line.lower()
            continue
        found = _ITEM.match(line)
        if found and not never:
            head, _, rest = found.group(1).partition(" — ")
            forms = [_surface(f) for f in rest.split(",")] if rest else []
            entities.append((_surface(head), [f for f in forms if f]))
        elif never and line.startswith("- "):
            body = line[2:].split(" — ")[0]
            for clause in body.split(";"):
                names = re.split(r"\s+≠\s+|,\s+|\s+and\s+", clause)
                groups.append([_surface(n) for n in names if _surface(n)])
    return entities, groups


def resolve(resolver: Resolver, name: str) -> str | None:
    record = resolver.resolve(name, learn=False)
    return record.entity_id if record.resolved else None


def measure(folder: Path, listed: Path) -> tuple[int, int, list[str], list[str]]:
    graph, resolver = ContextGraph(), Resolver()
    ingest(graph, resolver, [folder])
    entities, groups = parse_list(listed.read_text(encoding="utf-8"))
    misses: list[str] = []
    hits = 0
    for name, forms in entities:
        if any(resolve(resolver, s) for s in [name, *forms]):
            hits += 1
        else:
            misses.append(name)
    merges = []
    for group in groups:
        ids = {n: resolve(resolver, n) for n in group}
        seen: dict[str, str] = {}
        for name, entity in ids.items():
            if entity is not None and entity in seen:
                merges.append(f"{seen[entity]} = {name} ({entity})")
            elif entity is not None:
                seen[entity] = name
    return hits, len(entities), misses, merges

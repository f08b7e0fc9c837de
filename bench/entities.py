"""How many of the entities a person listed an ingested folder resolves, and which never-merge pairs it merged.

    .venv/bin/python bench/entities.py FOLDER ENTITIES_MD

``ENTITIES_MD`` is a hand-written list in the corpora's convention (``tests/data/corpora/README.md``):
numbered lines ``N. Canonical — form, form *(note)*``, and a section whose heading holds "never"
listing pairs as ``- A and B`` / ``- A ≠ B``. The folder is ingested into an empty graph
(:func:`contextmesh.belief.ingestion.ingest`, its own ``entities.json`` if it has one); a listed
entity is *resolved* when its canonical name, or failing that one of its listed forms, resolves to
a graph entity. A never-merge pair is *merged* when both sides resolve to the same entity.
Printed: every miss, every merge, the share resolved and the load average.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from contextmesh.belief.ingestion import ingest
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.resolve import Resolver

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


def main() -> None:
    folder, listed = Path(sys.argv[1]), Path(sys.argv[2])
    hits, total, misses, merges = measure(folder, listed)
    for name in misses:
        print(f"unresolved: {name}")
    for line in merges:
        print(f"merged: {line}")
    print(f"resolved {hits}/{total} = {hits / total:.1%}; never-merge pairs merged: {len(merges)}")
    print("load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()

"""Load a generation's graph, telemetry and resolver: the snapshot, with its journal replayed.

A v3 or v4 generation, or a v5 one with an empty journal, is its snapshot: the graph file is
loaded by ``load_graph`` as ever. Otherwise (``session-v5.md`` §8.4, rules S54-S58), in order:
every segment is parsed against its place in the journal (J-rules of ``journal-v1.md``); the
graph's parsed document has every segment's records replayed onto it and then goes through the
graph loader's every rule; the snapshot's telemetry is applied, then each segment's counters
(each naming a node or edge of the replayed graph); the resolver's document has the segments'
aliases and log records appended and goes through the resolver loader's every rule against the
graph. A refusal of a replayed document names the snapshot file followed by ``+journal``
(``graph-<sha256>.json+journal:nodes[7].label``); a refusal of a segment's own content names
the segment.

:class:`Replayed` tells the writer what the journal held (the ids it changed, the aliases and log
records it appended), so the next commit can extend or consolidate it.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextmesh.core.canonical import loads
from contextmesh.core.errors import InputError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.graph_changes import GraphChanges
from contextmesh.formats.graph_file import collector_paused, graph_from_dict, load_graph, release_freed_memory
from contextmesh.formats.graph_parts import graph_document
from contextmesh.formats.graph_upgrade import EdgesAnyVersion
from contextmesh.formats.journal_file import BASE_KINDS, Segment, parse_segment, replay_graph, replay_resolver
from contextmesh.formats.resolver_file import load_resolver, resolver_from_dict
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.files import SessionFileError
from contextmesh.session.layout import Manifest
from contextmesh.session.telemetry import apply_telemetry, check_zeroed

__all__ = ["Replayed", "load_state"]


@dataclass(frozen=True)
class Replayed:
    """What a loaded journal held, for the writer that extends it."""

    since_snapshot: GraphChanges
    snapshot_aliases: int  # the snapshot resolver's alias count
    new_log: int  # log records the journal appended (the live log may have trimmed some)


def _in_file(name: str, exc: InputError) -> SessionFileError:
    return SessionFileError(f"{name}:{exc.path}", exc.found, exc.rule)


def _segments(manifest: Manifest, raw: dict[str, bytes]) -> list[tuple[str, Segment]]:
    base = {kind: manifest.companions()[kind].sha256 for kind in BASE_KINDS}
    found: list[tuple[str, Segment]] = []
    previous: str | None = None
    for index, companion in enumerate(manifest.journal):
        try:
            segment = parse_segment(raw[f"journal[{index}]"], sequence=index, previous=previous, base=base)
        except InputError as exc:
            raise _in_file(companion.name, exc) from None
        found.append((companion.name, segment))
        previous = companion.sha256
    return found


def _counters(graph: ContextGraph, segments: list[tuple[str, Segment]]) -> None:
    """Each segment's counters, in order, after the snapshot's: every id must name a record (S57)."""
    edges = graph.edges if graph.upgraded_from is None else EdgesAnyVersion(graph)  # v2 ids (ADR 0021)
    for name, segment in segments:
        for table, pairs, what in (("nodes", segment.walks, "walks"), ("edges", segment.traversals, "traversals")):
            held = edges if table == "edges" else graph.nodes
            for index, (item_id, _) in enumerate(pairs):
                if item_id not in held:
                    raise SessionFileError(
                        f"{name}:{what}[{index}][0]", repr(item_id)[:60], f"a counter names one of the graph's {table}"
                    )
        for node_id, count in segment.walks:
            graph.nodes[node_id].walks = count
        for edge_id, count in segment.traversals:
            edges[edge_id].traversals = count


def _changed(segments: list[tuple[str, Segment]]) -> GraphChanges:
    changes = GraphChanges()
    for _, segment in segments:
        changes.nodes.update(dict.fromkeys(record["id"] for record in segment.nodes))
        changes.edges.update(dict.fromkeys(record["id"] for record in segment.edges))
        changes.assumptions.update(dict.fromkeys(record["id"] for record in segment.assumptions))
        changes.walks.update(dict.fromkeys(item for item, _ in segment.walks))
        changes.traversals.update(dict.fromkeys(item for item, _ in segment.traversals))
    return changes


def _replayed_graph(manifest: Manifest, raw: bytes, segments: list[tuple[str, Segment]]) -> ContextGraph:
    name = manifest.graph.name
    try:
        with collector_paused():
            document = graph_document(raw)  # one document, or bounded parts (graph-v3.md section 13)
    except InputError as exc:
        raise _in_file(name, exc) from None
    try:
        replay_graph(document, segments)
    except InputError as exc:
        raise SessionFileError(exc.path, exc.found, exc.rule) from None  # the path names the segment
    try:
        graph = graph_from_dict(document)
        del document
        release_freed_memory()
        check_zeroed(graph)
    except InputError as exc:
        raise _in_file(f"{name}+journal", exc) from None
    return graph


def load_state(manifest: Manifest, raw: dict[str, bytes]) -> tuple[ContextGraph, Resolver, Replayed | None]:
    """The generation's graph (counters applied) and resolver, and what its journal held."""
    segments = _segments(manifest, raw)
    if not segments:
        try:
            graph = load_graph(raw["graph"])
            check_zeroed(graph)  # counters live in the telemetry companion, never in the graph file
        except InputError as exc:
            raise _in_file(manifest.graph.name, exc) from None
    else:
        graph = _replayed_graph(manifest, raw["graph"], segments)
    try:
        apply_telemetry(raw["telemetry"], graph)
    except InputError as exc:
        raise _in_file(manifest.telemetry.name, exc) from None
    _counters(graph, segments)
    name = manifest.resolver.name
    if not segments:
        try:
            return graph, load_resolver(raw["resolver"], graph), None
        except InputError as exc:
            raise _in_file(name, exc) from None
    try:
        document = loads(raw["resolver"])
    except InputError as exc:
        raise _in_file(name, exc) from None
    aliases = document.get("aliases") if type(document) is dict else None
    snapshot_aliases = len(aliases) if type(aliases) is list else 0
    try:
        replay_resolver(document, segments)
    except InputError as exc:
        raise SessionFileError(exc.path, exc.found, exc.rule) from None  # the path names the segment
    try:
        resolver = resolver_from_dict(document, graph)
    except InputError as exc:
        raise _in_file(f"{name}+journal", exc) from None
    new_log = sum(len(segment.log) for _, segment in segments)
    return graph, resolver, Replayed(_changed(segments), snapshot_aliases, new_log)

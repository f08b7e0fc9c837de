"""What a commit writes for the graph, telemetry and resolver: a snapshot, or one journal segment.

ADR 0020. A generation names a *snapshot* (the graph, telemetry and resolver companions, whole)
and a journal of segments replayed onto it. A writer keeps a :class:`JournalState` beside the
session: the snapshot and segments of the generation it holds, the ids changed since the snapshot,
and marks of the resolver's tables. :func:`plan_commit` decides, without serialising the graph:

* nothing changed → the three companions and the journal are carried as they are;
* the changes fit → one new segment (the changed records, moved counters, appended aliases and
  log records), the rest carried;
* the journal would pass a bound (S52, S53) → one consolidated segment holding every change since
  the snapshot replaces the journal;
* that would pass the byte bound too, or the resolver changed other than by appending (an entity
  registered, a table replaced), or there is no state for this graph and directory → a new
  snapshot, an empty journal.

The graph's changes come from the :class:`~contextmesh.core.graph_changes.GraphChanges` the
state attaches to the graph; they are taken only once the commit has landed, so a commit that
failed or conflicted leaves them pending for the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from contextmesh.core.graph import ContextGraph
from contextmesh.core.graph_changes import GraphChanges, in_graph_order, track
from contextmesh.formats.journal_file import dump_segment
from contextmesh.formats.resolver_file import dump_resolver
from contextmesh.knowledge.resolve import LOG_LIMIT, ResolutionRecord, Resolver
from contextmesh.session.layout import MAX_SEGMENTS, Companion, Manifest, journal_limit
from contextmesh.session.replay import Replayed
from contextmesh.session.telemetry import dump_structure, dump_telemetry

__all__ = [
    "CommitPlan",
    "JournalState",
    "ResolverMark",
    "Staged",
    "appended",
    "plan_commit",
    "rebased",
    "resolver_mark",
]

Payload = bytes | Companion


@dataclass(frozen=True)
class ResolverMark:
    """Cheap marks of a resolver's tables: enough to tell "only appended to" from anything else."""

    resolver: int
    threshold: float
    canonical: tuple[int, int]  # (identity, length)
    aliases: tuple[int, int]
    blocks: tuple[int, int, int]  # (identity, length, members)
    log: int
    last: ResolutionRecord | None  # the newest log record when marked; None: every record is newer


def resolver_mark(
    resolver: Resolver, *, aliases: int | None = None, last: ResolutionRecord | None = None
) -> ResolverMark:
    """The marks of ``resolver`` now (``aliases`` and ``last`` override the alias count and log mark)."""
    members = sum(map(len, resolver.blocks.values()))
    log_last = resolver.log[-1] if resolver.log else None
    return ResolverMark(
        id(resolver),
        resolver.threshold,
        (id(resolver.canonical), len(resolver.canonical)),
        (id(resolver.aliases), len(resolver.aliases) if aliases is None else aliases),
        (id(resolver.blocks), len(resolver.blocks), members),
        id(resolver.log),
        log_last if aliases is None else last,
    )


def appended(resolver: Resolver, since: ResolverMark) -> tuple[list[tuple[str, str]], list[ResolutionRecord]] | None:
    """The aliases and log records appended since ``since``, or None when anything else changed."""
    now = resolver_mark(resolver)
    if (now.resolver, now.threshold, now.canonical, now.blocks, now.log) != (
        since.resolver,
        since.threshold,
        since.canonical,
        since.blocks,
        since.log,
    ):
        return None
    if now.aliases[0] != since.aliases[0] or now.aliases[1] < since.aliases[1]:
        return None
    new_aliases = list(islice(reversed(resolver.aliases.items()), now.aliases[1] - since.aliases[1]))[::-1]
    log = resolver.log
    if since.last is None:
        return new_aliases, list(log)
    for back in range(len(log) - 1, -1, -1):
        if log[back] is since.last:
            return new_aliases, log[back + 1 :]
    # The marked record was trimmed away: only LOG_LIMIT newer records can have pushed it out.
    return (new_aliases, list(log)) if len(log) == LOG_LIMIT else None


@dataclass
class JournalState:
    """The generation a writer holds, as a snapshot and a journal, and what changed since."""

    directory: Path
    graph: ContextGraph
    resolver: Resolver
    snapshot: dict[str, Companion]  # graph, telemetry, resolver
    segments: list[Companion]
    since_snapshot: GraphChanges
    at_snapshot: ResolverMark
    at_commit: ResolverMark
    tracker: GraphChanges = field(init=False)
    build: int = field(init=False)  # the graph's build clock as last committed (not a record: no hook)

    def __post_init__(self) -> None:
        self.tracker = track(self.graph)
        self.build = self.graph.build

    @classmethod
    def loaded(
        cls,
        directory: Path,
        manifest: Manifest,
        graph: ContextGraph,
        resolver: Resolver,
        replayed: Replayed | None,
    ) -> JournalState:
        """The state of a generation just loaded: its snapshot, its journal and what the journal held."""
        now = resolver_mark(resolver)
        if replayed is None:
            return cls(
                directory, graph, resolver, _snapshot_of(manifest), list(manifest.journal), GraphChanges(), now, now
            )
        log = resolver.log
        boundary = len(log) - min(replayed.new_log, len(log)) - 1  # the newest record the snapshot held
        at_snapshot = resolver_mark(
            resolver, aliases=replayed.snapshot_aliases, last=log[boundary] if boundary >= 0 else None
        )
        return cls(
            directory,
            graph,
            resolver,
            _snapshot_of(manifest),
            list(manifest.journal),
            replayed.since_snapshot,
            at_snapshot,
            now,
        )

    @classmethod
    def of(cls, directory: Path, manifest: Manifest, graph: ContextGraph, resolver: Resolver) -> JournalState:
        """The state of a generation just written as a snapshot with an empty journal."""
        marks = resolver_mark(resolver)
        return cls(directory, graph, resolver, _snapshot_of(manifest), [], GraphChanges(), marks, marks)


def rebased(state: JournalState | None, graph: ContextGraph, resolver: Resolver) -> JournalState | None:
    """``state`` carried onto a lossless copy of its graph and resolver (a controlled write's clone).

    The copy's next commit then journals what changed since the generation (the live session's
    pending changes and the write's own) instead of writing a snapshot. The resolver's marks are
    taken again on the copy's tables, at the same places in them (the copy holds the same aliases
    and log records in the same order); None when the live resolver changed other than by appending
    since the generation or its snapshot (the copy's commit then writes a snapshot, as the live
    one's would).
    """
    if state is None:
        return None
    since_commit = appended(state.resolver, state.at_commit)
    since_snapshot = appended(state.resolver, state.at_snapshot)
    if since_commit is None or since_snapshot is None:
        return None

    def mark_at(delta: tuple[list[tuple[str, str]], list[ResolutionRecord]]) -> ResolverMark:
        kept = len(resolver.log) - len(delta[1])
        return resolver_mark(
            resolver, aliases=len(resolver.aliases) - len(delta[0]), last=resolver.log[kept - 1] if kept > 0 else None
        )

    copy = JournalState(
        state.directory,
        graph,
        resolver,
        dict(state.snapshot),
        list(state.segments),
        state.since_snapshot.copy(),
        mark_at(since_snapshot),
        mark_at(since_commit),
    )
    copy.tracker.absorb(state.tracker)  # the live session's changes not yet committed
    copy.build = state.build
    return copy


def _snapshot_of(manifest: Manifest) -> dict[str, Companion]:
    return {"graph": manifest.graph, "telemetry": manifest.telemetry, "resolver": manifest.resolver}


@dataclass
class CommitPlan:
    """What to hand the commit for the graph, telemetry and resolver, and how to move on after it."""

    kind: str  # "snapshot", "segment", "consolidated" or "unchanged"
    payload: dict[str, Payload]

    def landed(
        self,
        state: JournalState | None,
        manifest: Manifest,
        directory: Path,
        graph: ContextGraph,
        resolver: Resolver,
        staged: Staged,
    ) -> JournalState:
        """The state after the commit published ``manifest``, planned when the graph stood at ``staged``.

        Changes made after the plan (asks answered while a commit was in flight, ADR 0028) are still
        in the graph's tracker: they stay there, for the next commit.
        """
        if self.kind == "snapshot" or state is None:
            later = staged.tracker.take()  # recorded after the plan: not in the snapshot
            fresh = JournalState.of(directory, manifest, graph, resolver)
            fresh.tracker.absorb(later)
            fresh.at_snapshot = fresh.at_commit = staged.mark
            fresh.build = staged.build
            return fresh
        state.since_snapshot.absorb(staged.taken)  # the snapshot did not move
        state.segments = list(manifest.journal)
        state.at_commit = staged.mark
        state.build = staged.build
        return state


@dataclass(frozen=True)
class Staged:
    """Where the graph and resolver stood when a commit was planned: what the commit carries.

    ``taken`` is what the graph's tracker held then, handed to the commit; a commit that does not
    land gives it back (:meth:`give_back`), so the next one carries it.
    """

    tracker: GraphChanges
    taken: GraphChanges
    mark: ResolverMark
    build: int

    @classmethod
    def now(cls, state: JournalState | None, graph: ContextGraph, resolver: Resolver) -> Staged:
        """Take the tracker's changes (attaching one when the writer has no journal state yet)."""
        tracker = state.tracker if state is not None and graph._changes is state.tracker else track(graph)
        return cls(tracker, tracker.take(), resolver_mark(resolver), graph.build)

    def give_back(self) -> None:
        self.tracker.absorb(self.taken)


def _full(graph: ContextGraph, resolver: Resolver) -> CommitPlan:
    return CommitPlan(
        "snapshot",
        {"graph": dump_structure(graph), "telemetry": dump_telemetry(graph), "resolver": dump_resolver(resolver)},
    )


def _segment(
    state: JournalState,
    changes: GraphChanges,
    delta: tuple[list[tuple[str, str]], list[ResolutionRecord]],
    sequence: int,
    previous: str | None,
) -> bytes:
    graph = state.graph
    assumptions = [a for a in changes.assumptions if a in graph.assumptions and a in graph.nodes]
    assumptions.sort(key=lambda a: graph.nodes[a]._seq)
    return dump_segment(
        graph,
        base={kind: companion.sha256 for kind, companion in state.snapshot.items()},
        sequence=sequence,
        previous=previous,
        records=(
            in_graph_order(graph, changes.nodes, "nodes"),
            in_graph_order(graph, changes.edges, "edges"),
            assumptions,
        ),
        counters=(in_graph_order(graph, changes.walks, "nodes"), in_graph_order(graph, changes.traversals, "edges")),
        aliases=delta[0],
        log=delta[1],
    )


def plan_commit(state: JournalState | None, directory: Path, graph: ContextGraph, resolver: Resolver) -> CommitPlan:
    """Decide what the next commit writes for the graph, telemetry and resolver (see the module)."""
    if state is None or state.directory != directory or state.graph is not graph or state.resolver is not resolver:
        return _full(graph, resolver)
    delta = appended(resolver, state.at_commit)
    if delta is None:
        return _full(graph, resolver)
    carried: dict[str, Payload] = dict(state.snapshot)
    changes = state.tracker
    if not changes and not delta[0] and not delta[1] and graph.build == state.build:
        carried.update({f"journal[{i}]": segment for i, segment in enumerate(state.segments)})
        return CommitPlan("unchanged", carried)
    limit = journal_limit(state.snapshot["graph"].bytes)
    previous = state.segments[-1].sha256 if state.segments else None
    data = _segment(state, changes, delta, len(state.segments), previous)
    held = sum(segment.bytes for segment in state.segments)
    if len(state.segments) < MAX_SEGMENTS and held + len(data) <= limit:
        carried.update({f"journal[{i}]": segment for i, segment in enumerate(state.segments)})
        carried[f"journal[{len(state.segments)}]"] = data
        return CommitPlan("segment", carried)
    everything = state.since_snapshot.copy()
    everything.absorb(changes)
    since = appended(resolver, state.at_snapshot)
    if since is None:
        return _full(graph, resolver)
    data = _segment(state, everything, since, 0, None)
    if len(data) > limit:
        return _full(graph, resolver)
    carried["journal[0]"] = data
    return CommitPlan("consolidated", carried)

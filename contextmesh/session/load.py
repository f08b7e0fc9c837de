"""Load a session directory as untrusted input, with every cross-file check.

A reader takes no lock. It reads the newest manifest, then opens every companion that generation
names *before* parsing any of them (through :func:`~contextmesh.session.files.read_regular`: never
blocking on a fifo, never following a symlink, regular files inside the directory only), so a
concurrent sweep cannot pull a file from under it; if a companion has vanished because the
directory moved on meanwhile, it starts again from the newer manifest (a bounded number of times).
A genuinely missing or altered file fails at once with its own message.

The work is bounded by the files' sizes: the manifest is read only up to
:data:`~contextmesh.session.files.MANIFEST_MAX_BYTES`, a companion only up to the size its manifest
records (one byte more tells it differs), every document nests at most
:data:`~contextmesh.core.canonical.MAX_DEPTH` levels (the deepest a commit can write back; the canonical
loader refuses deeper text before any recursive parser sees it), and no integer in any file drives a
loop or an allocation.

Checks, in order: the manifest (a regular file of at most 64 KiB, then schema, version — the
original project's v1/v2 refused by name, v3, v4 and v5 read — fields, generation = file name); each
companion's name, location, kind (a regular file) and then, in manifest order, size and SHA-256;
the graph file (whose walk counters must all be 0) with the v5 journal replayed onto it; the
telemetry file against the graph (its counters then applied, then the journal's); the resolver
(with the journal's aliases and log records) against the graph (:mod:`~contextmesh.session.replay`);
the run ledger against the manifest's head (``expect_head``), its Merkle tree built in the same pass
from the bytes the digest check hashes;
the v4 tree head and checkpoint against the ledger and, for a reader that pins verifier keys
(``trusted_keys``), the checkpoint's signature and the tree against the previous generation's
(:mod:`~contextmesh.session.heads`, rules S43–S51); the plan against the graph and the registry; the
ledger against the plan (every entry's task is in the plan, no entry in a round the plan never
reached) and against the graph (every cited id exists).

A read-only load (``read_only=True``, no registry) applies every check but one: the plan's keys are
not looked up in a registry (rule E16 of the execution format), so the plan comes back with its keys
unresolved — data, never code — and no task of it can run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from contextmesh.core.canonical import loads, sha256_hex
from contextmesh.core.errors import InputError, SessionError, SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.execution.plan import Plan
from contextmesh.execution.snapshot import restore_plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.formats.merkle import MerkleTree
from contextmesh.formats.run_ledger import RunLedger
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.commit import latest_generation
from contextmesh.session.files import MANIFEST_MAX_BYTES, SessionFileError, read_regular
from contextmesh.session.heads import Previous, check_heads, leaf_pass_for, parse_previous, read_previous
from contextmesh.session.layout import Manifest, manifest_name, parse_manifest
from contextmesh.session.ledger_tree import LeafPass, keep
from contextmesh.session.receipts import check_receipt
from contextmesh.session.replay import Replayed, load_state

if TYPE_CHECKING:
    from contextmesh.formats.signed_note import NoteVerifier

__all__ = ["Loaded", "SessionFileError", "load_directory", "read_manifest"]  # SessionFileError lives in files.py

_RETRIES = 4


@dataclass
class Loaded:
    """One whole generation, parsed and cross-checked."""

    manifest: Manifest
    graph: ContextGraph
    resolver: Resolver
    runner: Plan | None
    ledger: RunLedger | None
    raw: dict[str, bytes]
    tree: MerkleTree | None = None  # the ledger's whole tree, when the load was asked to keep it
    journal: Replayed | None = None  # what the v5 journal held (None: the generation is its snapshot)


_Read = tuple[Manifest, dict[str, bytes], tuple[str, bytes] | None]


def _read_generation(directory: Path, generation: int, *, previous: bool) -> _Read:
    name = manifest_name(generation)
    data = read_regular(directory, name, limit=MANIFEST_MAX_BYTES)
    if len(data) > MANIFEST_MAX_BYTES:
        raise SessionFileError(
            name, f"more than {MANIFEST_MAX_BYTES} bytes", f"a manifest is at most {MANIFEST_MAX_BYTES} bytes"
        )
    try:
        manifest = parse_manifest(loads(data), generation)
    except InputError as exc:
        raise SessionFileError(f"{name}:{exc.path}", exc.found, exc.rule) from None
    raw = {"manifest": data}
    for kind, companion in manifest.companions().items():
        try:
            # Every file opened before anything is parsed; one byte past the recorded size is
            # enough to know it differs, so a huge file is never read whole.
            raw[kind] = read_regular(directory, companion.name, limit=companion.bytes)
        except FileNotFoundError as exc:
            exc.filename = companion.name
            raise
    # A reader that pins keys checks this generation against the one before (S50): read it now,
    # with the companions, so a sweep taking it is retried like a sweep taking one of them.
    before = read_previous(directory, generation) if previous else None
    for kind, companion in manifest.companions().items():
        if len(raw[kind]) != companion.bytes or sha256_hex(raw[kind]) != companion.sha256:
            raise SessionFileError(
                f"{name}:{kind}.sha256",
                f"{companion.name} has different content",
                "a companion's bytes hash to the digest its manifest records",
            )
    return manifest, raw, before


def read_manifest(directory: Path, generation: int) -> Manifest:
    """Generation ``generation``'s manifest alone (S3-S18, S41, S42), while the directory keeps it."""
    name = manifest_name(generation)
    try:
        data = read_regular(directory, name, limit=MANIFEST_MAX_BYTES)
    except FileNotFoundError:
        raise SessionError(
            f"{directory} no longer holds generation {generation} ({name}): a directory keeps its newest two "
            "generations, the sweep takes older ones"
        ) from None
    if len(data) > MANIFEST_MAX_BYTES:
        raise SessionFileError(
            name, f"more than {MANIFEST_MAX_BYTES} bytes", f"a manifest is at most {MANIFEST_MAX_BYTES} bytes"
        )
    try:
        return parse_manifest(loads(data), generation)
    except InputError as exc:
        raise SessionFileError(f"{name}:{exc.path}", exc.found, exc.rule) from None


def _missing(directory: Path, generation: int, exc: FileNotFoundError) -> SessionFileError:
    missing = Path(str(exc.filename)).name if exc.filename else "a file"
    if missing == manifest_name(generation - 1):
        return SessionFileError(
            missing,
            "missing",
            f"a reader that pins keys checks generation {generation} of {directory} against generation "
            f"{generation - 1}, whose manifest the writer keeps: it must exist",
        )
    return SessionFileError(
        missing, "missing", f"generation {generation} of {directory} names {missing}, which must exist"
    )


def load_directory(
    directory: Path,
    *,
    registry: TaskRegistry | None = None,
    read_only: bool = False,
    trusted_keys: Sequence[NoteVerifier] = (),
    generation: int | None = None,
    full_tree: bool = False,
) -> Loaded:
    """Load the newest whole generation of ``directory`` (or exactly ``generation``, while it is kept).

    ``read_only`` lets a plan load without a registry, its keys unresolved; ``trusted_keys`` pins
    verifier keys: only a generation signed by one of them, whose tree extends the previous
    generation's, loads; ``full_tree`` keeps the ledger's whole Merkle tree (``Loaded.tree``), built
    in the load's one pass, for a caller that makes proofs.
    """
    if not directory.is_dir():
        raise SessionError(f"{directory} is not a session directory")
    pinned = tuple(trusted_keys)
    for attempt in range(_RETRIES + 1):
        wanted = latest_generation(directory) if generation is None else generation
        if wanted == 0:
            raise SessionError(f"{directory} holds no session manifest (session-NNNNNN.json)")
        try:
            manifest, raw, before = _read_generation(directory, wanted, previous=bool(pinned))
            break
        except FileNotFoundError as exc:
            # Retry only when a sweep took the file because the directory moved on meanwhile.
            if generation is not None or latest_generation(directory) == wanted or attempt == _RETRIES:
                raise _missing(directory, wanted, exc) from None
    previous = parse_previous(before, manifest.generation, manifest.session_id)
    return _parse(directory, manifest, raw, registry, read_only, (previous, pinned, full_tree))


def _in_file(name: str, exc: InputError) -> SessionFileError:
    return SessionFileError(f"{name}:{exc.path}", exc.found, exc.rule)


def _parse(
    directory: Path,
    manifest: Manifest,
    raw: dict[str, bytes],
    registry: TaskRegistry | None,
    read_only: bool,
    pins: tuple[Previous | None, tuple[NoteVerifier, ...], bool],
) -> Loaded:
    graph, resolver, journal = load_state(manifest, raw)
    previous, pinned, full_tree = pins
    runner = ledger = None
    tree: LeafPass | None = None
    if manifest.execution is not None and manifest.runledger is not None:
        tree = leaf_pass_for(previous, full_tree=full_tree)
        try:
            ledger = RunLedger.load(raw["runledger"], expect_head=manifest.ledger_head, entry_bytes=tree)
        except InputError as exc:
            raise _in_file(manifest.runledger.name, exc) from None
    check_heads(manifest, tree, previous, pinned)  # S43-S51, right after the ledger's own rules
    if ledger is not None and tree is not None:
        runner = _load_plan(directory, manifest, raw, graph, ledger, registry, read_only)
        keep(ledger, tree.frontier, tree.last_digest)  # the commit hook extends it: no rehash
    return Loaded(manifest, graph, resolver, runner, ledger, raw, None if tree is None else tree.tree, journal)


def _load_plan(
    directory: Path,
    manifest: Manifest,
    raw: dict[str, bytes],
    graph: ContextGraph,
    ledger: RunLedger,
    registry: TaskRegistry | None,
    read_only: bool,
) -> Plan:
    if registry is None and not read_only:
        raise SessionError(
            f"{directory} holds an execution plan; load it with the deployment's registry (keys are looked up "
            "there, never imported)"
        )
    assert manifest.execution is not None
    try:
        runner = restore_plan(loads(raw["execution"]), graph, registry, ledger=ledger)
    except InputError as exc:
        raise _in_file(manifest.execution.name, exc) from None
    _check_ledger(manifest, runner, ledger, graph)
    return runner


def _check_ledger(manifest: Manifest, runner: Plan, ledger: RunLedger, graph: ContextGraph) -> None:
    name = manifest.runledger.name if manifest.runledger else "runledger"
    for index, entry in enumerate(ledger.entries):
        where = f"{name}:entries[{index}]"
        if entry.task is not None and entry.task not in runner.tasks:
            raise SessionFileError(f"{where}.task", repr(entry.task), "every entry names a task the plan holds")
        if entry.round > runner.round:
            raise SessionFileError(
                f"{where}.round", str(entry.round), f"no entry lies in a round the plan never reached ({runner.round})"
            )
        if entry.decision_id is not None and entry.decision_id not in graph:
            raise SessionFileError(f"{where}.decision_id", repr(entry.decision_id), "a cited id exists in the graph")
        if entry.receipt is not None:  # a receipt cites ids of the graph: every one must exist there
            try:
                check_receipt(entry.receipt, f"entries[{index}].receipt", graph)
            except SnapshotError as exc:
                raise SessionFileError(f"{name}:{exc.path}", exc.found, exc.rule) from None

"""Names in a session directory and the manifest format ``contextmesh.session`` v5 (v3 and v4 still read).

A directory holds:

* ``session-NNNNNN.json`` — the immutable manifest of generation N (six digits): the single
  commit point. It names every companion of that generation with its SHA-256.
* ``session.json`` — a copy of the newest manifest, for people and tools (never trusted on load).
* ``session.lock`` — the writer lock (one inode for its whole life).
* companions, content-addressed: ``graph-<sha256>.json``, ``telemetry-<sha256>.json``,
  ``resolver-<sha256>.json``, ``execution-<sha256>.json``, ``runledger-<sha256>.json`` — an
  unchanged companion keeps its name and is not rewritten. The graph companion carries every walk
  counter as 0; the counters live in the telemetry companion, so a telemetry-only commit leaves the
  graph file alone.

Every name a loader follows must be plain (no directory part) and match these patterns.

v4 adds two manifest fields after ``ledger_head``: ``ledger_tree`` (the RFC 9162 tree head of the
ledger, ``{"size", "root"}``) and ``checkpoint`` (that head as a C2SP signed note, or null for a
writer without a key). A v3 manifest is read with neither; the writer writes v4 only
(``docs/formats/session-v4.md``, ADR 0012).

v5 adds one field after ``checkpoint``: ``journal``, the ordered list of journal segments
(``journal-<sha256>.json``, ``contextmesh.journal`` v1) a reader replays onto the graph, telemetry
and resolver companions, which are then the generation's *snapshot* (``docs/formats/session-v5.md``,
ADR 0020). A v3 or v4 manifest is read with an empty journal; the writer writes v5 only.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from contextmesh.core.errors import SnapshotError
from contextmesh.formats.merkle import TreeHead
from contextmesh.formats.records import check_header, exact_keys, expect_dict
from contextmesh.knowledge.traverse import DEFAULT_POLICY, WalkerSettings

__all__ = [
    "COMPANIONS",
    "COMPANION_NAME",
    "LOCK_NAME",
    "MANIFEST",
    "MAX_CORPUS_LABEL",
    "MAX_SEGMENTS",
    "POINTER_NAME",
    "READ_VERSIONS",
    "SESSION_SCHEMA",
    "SESSION_VERSION",
    "Companion",
    "Manifest",
    "companion_name",
    "corpus_label_problem",
    "journal_limit",
    "manifest_name",
    "parse_manifest",
]

SESSION_SCHEMA = "contextmesh.session"
SESSION_VERSION = 5  # what the writer writes
READ_VERSIONS = (3, 4, 5)  # what the reader reads
POINTER_NAME = "session.json"
LOCK_NAME = "session.lock"
MANIFEST = re.compile(r"^session-([0-9]{6})\.json$")
COMPANIONS = ("graph", "telemetry", "resolver", "execution", "runledger")
COMPANION_NAME = re.compile(r"^(graph|telemetry|resolver|execution|runledger|journal)-([0-9a-f]{64})\.json$")
# A journal's bounds (S52, S53): few enough segments that a manifest stays far below its 64 KiB, and
# few enough bytes that replaying them costs a fraction of parsing the snapshot.
MAX_SEGMENTS = 64
JOURNAL_FLOOR_BYTES = 1 << 20
_HEX = re.compile(r"^[0-9a-f]{64}$")
MAX_CORPUS_LABEL = 200  # characters; a label names a corpus, it does not describe one
CORPUS_RULE = (
    f"null or a corpus label: 1 to {MAX_CORPUS_LABEL} printable characters (no control, format or separator "
    "character but the space), no space at either end"
)
_V3_FIELDS = (
    "schema",
    "version",
    "session_id",
    "generation",
    "rounds",
    "walker",
    "corpus",
    "graph",
    "telemetry",
    "resolver",
    "execution",
    "runledger",
    "ledger_head",
)
_V4_FIELDS = (*_V3_FIELDS, "ledger_tree", "checkpoint")
_FIELDS = (*_V4_FIELDS, "journal")
_FIELDS_OF = {3: _V3_FIELDS, 4: _V4_FIELDS, 5: _FIELDS}


def journal_limit(snapshot_bytes: int) -> int:
    """The most bytes a journal on a graph snapshot of ``snapshot_bytes`` may hold (S53)."""
    return max(snapshot_bytes // 8, JOURNAL_FLOOR_BYTES)


def manifest_name(generation: int) -> str:
    """``session-000042.json``."""
    return f"session-{generation:06d}.json"


def companion_name(kind: str, sha256: str) -> str:
    """``graph-<sha256>.json``."""
    return f"{kind}-{sha256}.json"


def corpus_label_problem(corpus: object) -> str | None:
    """Why ``corpus`` cannot be a manifest's ``corpus`` field, or ``None`` when it can.

    The label is the builder's name for the corpus the graph came from. The engine stores it and
    never acts on it; whoever loads the session may (to attach that corpus's flat baseline, say).
    It is bounded and printable because it is shown in a terminal, a log line and a UI.
    """
    if corpus is None:
        return None
    if type(corpus) is not str:
        return repr(corpus)[:60]
    if not 1 <= len(corpus) <= MAX_CORPUS_LABEL:
        return f"a label of {len(corpus)} characters"
    if not corpus.isprintable() or corpus.strip(" ") != corpus:
        return repr(corpus)[:60]
    return None


@dataclass(frozen=True)
class Companion:
    """A companion file named by a manifest."""

    name: str
    sha256: str
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {"name": self.name, "sha256": self.sha256, "bytes": self.bytes}


@dataclass(frozen=True)
class Manifest:
    """One generation's commit record."""

    session_id: str
    generation: int
    rounds: int
    walker: WalkerSettings
    corpus: str | None
    graph: Companion
    resolver: Companion
    execution: Companion | None
    runledger: Companion | None
    ledger_head: str | None
    telemetry: Companion
    # v4: the ledger's tree head and its signed checkpoint (null without a key); a v3 manifest has neither.
    ledger_tree: TreeHead | None = None
    checkpoint: str | None = None
    version: int = SESSION_VERSION
    # v5: the journal segments replayed onto the snapshot (graph, telemetry, resolver), in order.
    journal: tuple[Companion, ...] = ()

    def __post_init__(self) -> None:
        # Checked here as well as on load, so a commit refuses a label before writing anything.
        problem = corpus_label_problem(self.corpus)
        if problem is not None:
            raise SnapshotError("corpus", problem, CORPUS_RULE)

    def to_dict(self) -> dict[str, Any]:
        """The manifest document, in the form the writer writes (v5)."""
        tree = self.ledger_tree
        return {
            "schema": SESSION_SCHEMA,
            "version": SESSION_VERSION,
            "session_id": self.session_id,
            "generation": self.generation,
            "rounds": self.rounds,
            "walker": self.walker.to_dict(),
            "corpus": self.corpus,
            "graph": self.graph.to_dict(),
            "telemetry": self.telemetry.to_dict(),
            "resolver": self.resolver.to_dict(),
            "execution": None if self.execution is None else self.execution.to_dict(),
            "runledger": None if self.runledger is None else self.runledger.to_dict(),
            "ledger_head": self.ledger_head,
            "ledger_tree": None if tree is None else {"size": tree.size, "root": tree.root_hex},
            "checkpoint": self.checkpoint,
            "journal": [segment.to_dict() for segment in self.journal],
        }

    def companions(self) -> dict[str, Companion]:
        """Every companion this generation names, by kind (``journal[i]`` for the i-th segment)."""
        found = {"graph": self.graph, "telemetry": self.telemetry, "resolver": self.resolver}
        if self.execution is not None and self.runledger is not None:
            found["execution"] = self.execution
            found["runledger"] = self.runledger
        for index, segment in enumerate(self.journal):
            found[f"journal[{index}]"] = segment
        return found


def _int(value: Any, path: str, minimum: int) -> int:
    if type(value) is not int or value < minimum:
        raise SnapshotError(path, repr(value), f"an integer of at least {minimum}")
    return value


def _companion(value: Any, kind: str, path: str) -> Companion:
    item = expect_dict(value, path)
    exact_keys(item, ("name", "sha256", "bytes"), path)
    name, sha = item["name"], item["sha256"]
    if type(sha) is not str or not _HEX.match(sha):
        raise SnapshotError(f"{path}.sha256", repr(sha), "a SHA-256 is 64 lower-case hex digits")
    match = COMPANION_NAME.match(name) if type(name) is str else None
    if match is None or match.group(1) != kind or match.group(2) != sha:
        raise SnapshotError(
            f"{path}.name", repr(name), f"a plain name '{kind}-<sha256>.json' naming this companion's own digest"
        )
    return Companion(name, sha, _int(item["bytes"], f"{path}.bytes", 0))


def _walker(value: Any) -> WalkerSettings:
    item = expect_dict(value, "walker")
    exact_keys(item, ("hop_budget", "flat_k", "max_expand", "policy"), "walker")
    policy = item["policy"]
    if type(policy) is not list or not all(type(p) is str for p in policy):
        raise SnapshotError("walker.policy", repr(policy)[:60], "a list of edge type names")
    unknown = [p for p in policy if p not in DEFAULT_POLICY]
    if unknown or len(set(policy)) != len(policy):
        raise SnapshotError("walker.policy", repr(policy)[:80], "distinct edge types of GRAPH.md")
    return WalkerSettings(
        _int(item["hop_budget"], "walker.hop_budget", 1),
        _int(item["flat_k"], "walker.flat_k", 1),
        _int(item["max_expand"], "walker.max_expand", 1),
        tuple(policy),
    )


def _header(top: dict[str, Any]) -> int:
    """S9: the schema, then the version: an integer, not the original project's, 3, 4 or 5."""
    found = top.get("version")
    version = found if type(found) is int and found in READ_VERSIONS else SESSION_VERSION
    try:
        check_header(top, SESSION_SCHEMA, version, original_versions=(1, 2))
    except SnapshotError as exc:
        if exc.path != "version" or type(found) is not int or found in (1, 2):
            raise
        raise SnapshotError("version", exc.found, "this ContextMesh reads contextmesh.session v3, v4 and v5") from None
    return version


def _tree(top: dict[str, Any]) -> tuple[TreeHead | None, str | None]:
    """S41, S42: ``ledger_tree`` null or exactly {size, root}; ``checkpoint`` null or text, null without a tree."""
    value, checkpoint = top["ledger_tree"], top["checkpoint"]
    tree = None
    if value is not None:
        item = expect_dict(value, "ledger_tree")
        exact_keys(item, ("size", "root"), "ledger_tree")
        size, root = _int(item["size"], "ledger_tree.size", 0), item["root"]
        if type(root) is not str or not _HEX.match(root):
            raise SnapshotError("ledger_tree.root", repr(root)[:80], "a tree root is 64 lower-case hex digits")
        tree = TreeHead(size, bytes.fromhex(root))
    if checkpoint is not None and (type(checkpoint) is not str or tree is None):
        found = repr(checkpoint)[:80] if type(checkpoint) is not str else "a checkpoint with no ledger_tree"
        raise SnapshotError("checkpoint", found, "a checkpoint is the text of a signed note, null when ledger_tree is")
    return tree, checkpoint


def parse_manifest(data: Any, file_generation: int) -> Manifest:
    """Check a manifest document strictly; its generation must equal the one in its file name."""
    top = expect_dict(data, "$")
    version = _header(top)
    exact_keys(top, _FIELDS_OF[version], "$")
    session_id = top["session_id"]
    try:
        if type(session_id) is not str or str(uuid.UUID(session_id)) != session_id:
            raise ValueError
    except ValueError:
        raise SnapshotError("session_id", repr(session_id), "a session id is a canonical lower-case UUID") from None
    generation = _int(top["generation"], "generation", 1)
    if generation != file_generation:
        raise SnapshotError(
            "generation", str(generation), f"the manifest's file name says generation {file_generation}"
        )
    corpus = top["corpus"]
    problem = corpus_label_problem(corpus)
    if problem is not None:
        raise SnapshotError("corpus", problem, CORPUS_RULE)
    execution, runledger, head = top["execution"], top["runledger"], top["ledger_head"]
    together = [execution, runledger, head] + ([top["ledger_tree"]] if version >= 4 else [])
    if len({value is None for value in together}) > 1:
        names = "execution, runledger, ledger_head" + (" and ledger_tree" if version >= 4 else "")
        raise SnapshotError("execution", f"only some of {names}", "all are null or all are present")
    if head is not None and (type(head) is not str or not _HEX.match(head)):
        raise SnapshotError("ledger_head", repr(head), "64 lower-case hex digits")
    tree, checkpoint = _tree(top) if version >= 4 else (None, None)
    graph = _companion(top["graph"], "graph", "graph")
    journal = _journal(top["journal"], graph) if version == 5 else ()
    return Manifest(
        session_id,
        generation,
        _int(top["rounds"], "rounds", 0),
        _walker(top["walker"]),
        corpus,
        graph,
        _companion(top["resolver"], "resolver", "resolver"),
        None if execution is None else _companion(execution, "execution", "execution"),
        None if runledger is None else _companion(runledger, "runledger", "runledger"),
        head,
        _companion(top["telemetry"], "telemetry", "telemetry"),
        tree,
        checkpoint,
        version,
        journal,
    )


def _journal(value: Any, graph: Companion) -> tuple[Companion, ...]:
    """S52, S53: an array of at most MAX_SEGMENTS journal companions, within the snapshot's byte bound."""
    if type(value) is not list:
        raise SnapshotError("journal", repr(value)[:60], "the journal is an array of companions")
    if len(value) > MAX_SEGMENTS:
        raise SnapshotError("journal", f"{len(value)} segments", f"a journal holds at most {MAX_SEGMENTS} segments")
    segments = tuple(_companion(item, "journal", f"journal[{i}]") for i, item in enumerate(value))
    total, limit = sum(segment.bytes for segment in segments), journal_limit(graph.bytes)
    if total > limit:
        raise SnapshotError(
            "journal",
            f"{total} bytes of segments on a {graph.bytes}-byte snapshot",
            f"a journal holds at most max(an eighth of its snapshot, {JOURNAL_FLOOR_BYTES}) bytes ({limit})",
        )
    return segments

"""Shared builders for the session tests: a tiny session, manifest surgery, subprocesses, copies.

The demo session is saved once per test run (the root ``conftest.py``'s ``demo_sessions``); a test
module takes its own copy as its template and copies that per test (:func:`clone`).

:func:`build_tiny_session` makes a session small enough to commit in a millisecond or two — a few
entities, their resolver and a one-task plan under the key :data:`TINY_KEY` — for the tests that
commit hundreds of generations; :func:`touch_all` changes all five of its companions at once.

The surgery helpers (:func:`reseal`, :func:`reseal_ledger`, :func:`edit_manifest`) rewrite one file of
the newest generation and re-seal the manifest around it (name, SHA-256 and size, the ledger head and
its tree head, and — given a key — its checkpoint), so a corruption reaches the cross-file check it is
aimed at instead of stopping at the digest check. :func:`sign_manifest` signs the newest generation's
tree head as a writer holding that key would have.

Subprocesses import this module: :data:`PREAMBLE` puts ``tests/`` on their ``sys.path``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from contextmesh.core.canonical import file_bytes, loads, sha256_hex
from contextmesh.core.graph import ContextGraph
from contextmesh.demo.saved import save_demo_session
from contextmesh.execution.context import RunContext
from contextmesh.execution.plan import Plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.formats.merkle import MerkleTree, TreeHead
from contextmesh.formats.proofs import entry_leaf_hash
from contextmesh.formats.run_ledger import GENESIS, entry_digest
from contextmesh.formats.signed_note import NoteSigner
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.commit import commit_generation, latest_generation
from contextmesh.session.heads import sign_head
from contextmesh.session.layout import MANIFEST, Companion, Manifest, companion_name, manifest_name
from contextmesh.session.ledger_tree import LedgerSeal, seal_ledger
from contextmesh.session.load import Loaded, load_directory
from contextmesh.session.session import Session

__all__ = [
    "COMMIT_STEPS",
    "JOURNAL_STEPS",
    "PREAMBLE",
    "QUESTIONS",
    "TESTS_DIR",
    "TINY_KEY",
    "Variant",
    "build_demo_template",
    "build_tiny_session",
    "clone",
    "commit_variants",
    "edit_manifest",
    "fast_scratch",
    "listing",
    "load_generation",
    "manifest_doc",
    "precompute_variants",
    "reseal",
    "reseal_ledger",
    "run_python",
    "sign_manifest",
    "tiny_registry",
    "touch_all",
    "tree_of",
]

TESTS_DIR = Path(__file__).resolve().parent
_PLACEHOLDER = Companion("graph-" + "0" * 64 + ".json", "0" * 64, 0)  # replaced by commit_generation
QUESTIONS: list[str] = [item["question"] for item in loads((TESTS_DIR / "data" / "questions.json").read_bytes())]
PREAMBLE = f"import sys\nsys.path.insert(0, {str(TESTS_DIR)!r})\n"
TINY_KEY = "tiny.work.v1"

# Every step a commit passes when all five companions change, in order (contextmesh/session/commit.py).
COMMIT_STEPS = (
    "save-started",
    "companion-written:graph",
    "companion-renamed:graph",
    "companion-written:telemetry",
    "companion-renamed:telemetry",
    "companion-written:resolver",
    "companion-renamed:resolver",
    "companion-written:execution",
    "companion-renamed:execution",
    "companion-written:runledger",
    "companion-renamed:runledger",
    "manifest-written",
    "manifest-published",
    "pointer-written",
    "pointer-renamed",
    "sweep-started",
    "sweep-midway",
    "sweep-finished",
)
# A journalled commit (ADR 0020): the snapshot is carried; the plan, the ledger and one segment are written.
JOURNAL_STEPS = (
    "save-started",
    "companion-written:execution",
    "companion-renamed:execution",
    "companion-written:runledger",
    "companion-renamed:runledger",
    "companion-written:journal",
    "companion-renamed:journal",
    *COMMIT_STEPS[COMMIT_STEPS.index("manifest-written") :],
)


def listing(directory: Path) -> list[str]:
    """The names in a directory, sorted."""
    return sorted(path.name for path in directory.iterdir())


# -- fixtures -------------------------------------------------------------------------------------


def build_demo_template(root: Path) -> tuple[Path, Path]:
    """The demo saved once (one walk round, plan round 1 run) as generation 1; returns (dir, feed)."""
    feed = root / "feed.json"
    directory = root / "template"
    save_demo_session(directory, rounds=1, feed=feed)
    return directory, feed


def clone(template: Path, dest: Path) -> Path:
    """A private copy of a template directory."""
    shutil.copytree(template, dest, symlinks=True)
    return dest


def _tiny_work(ctx: RunContext) -> dict[str, Any]:
    return {"task": ctx.task, "attempt": ctx.attempt}


def tiny_registry() -> TaskRegistry:
    """The registry a tiny session's plan needs."""
    registry = TaskRegistry()
    registry.register_worker(TINY_KEY, _tiny_work)
    return registry


def build_tiny_session(directory: Path, *, entities: int = 8) -> Session:
    """A small session (entities, their resolver, a one-task plan) committed as generation 1."""
    graph = ContextGraph()
    resolver = Resolver()
    for index in range(entities):
        name = f"component {index:04d}"
        node = graph.add_node("entity", name, attrs={"canonical": name, "aliases": [f"c{index:04d}"]}, provenance=None)
        resolver.register(node.id, name, [f"c{index:04d}"])
    registry = tiny_registry()
    runner = Plan("tiny-plan", graph, registry=registry)
    runner.task("work", assumes="the tiny world holds still", worker_key=TINY_KEY)
    session = Session(graph, resolver, runner=runner, registry=registry, policy="never")
    return Session.create(directory, session)


def touch_all(session: Session, tick: int) -> None:
    """Change all five companions: the graph's build clock, telemetry, the resolver's log, the plan's
    round and the ledger (the graph companion holds no counters, so telemetry alone leaves it alone)."""
    assert session.runner is not None
    session.graph.next_build()
    nodes = list(session.graph.nodes)
    session.graph.record_walk([nodes[tick % len(nodes)]], [])
    session.resolver.resolve(f"c{tick % 4:04d}")
    session.runner.round += 1
    session.runner.ledger.record("audited", round=session.runner.round, detail=f"tick {tick}")
    session.pending += 1


class Variant(NamedTuple):
    """One future state of a session: its companions, its ledger head and the ledger's seal."""

    companions: dict[str, bytes]
    head: str | None
    seal: LedgerSeal | None


def precompute_variants(session: Session, count: int) -> list[Variant]:
    """The companions, ledger head and seal of ``count`` successive :func:`touch_all` states, ahead of time."""
    variants: list[Variant] = []
    seal = None
    for tick in range(count):
        touch_all(session, tick)
        ledger = session.ledger
        seal = None if ledger is None else seal_ledger(ledger, after=seal)
        variants.append(Variant(session.companions(), None if ledger is None else ledger.head, seal))
    return variants


def commit_variants(session: Session, variants: list[Variant], *, signer: NoteSigner | None = None) -> int:
    """Commit precomputed states back to back through the real commit path; returns the last generation.

    Dumping and sealing happen beforehand, so the time between two commits is only the loop itself and
    the steps of a commit dominate the timeline (what the random-kill test needs).
    """
    assert session.directory is not None
    generation = session.generation
    for companions, head, seal in variants:
        draft = Manifest(
            session.session_id,
            generation + 1,
            session.walk_rounds,
            session.settings,
            session.corpus,
            _PLACEHOLDER,
            _PLACEHOLDER,
            None,
            None,
            head,
            _PLACEHOLDER,
        )
        published, _ = commit_generation(
            session.directory, loaded=generation, companions=companions, manifest=draft, seal=seal, signer=signer
        )
        generation = published.generation
    return generation


@contextmanager
def fast_scratch(fallback: Path) -> Iterator[Path]:
    """A scratch directory on tmpfs when there is one (a commit then costs no disk flush), else ``fallback``."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        path = Path(tempfile.mkdtemp(prefix="cm-session-", dir=shm))
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
    else:
        fallback.mkdir(parents=True, exist_ok=True)
        yield fallback


def load_generation(directory: Path, generation: int, scratch: Path, **options: Any) -> Loaded:
    """Load one named generation as a reader would have seen it: newer manifests set aside in a copy."""
    copy = Path(tempfile.mkdtemp(prefix=f"gen-{generation}-", dir=scratch if scratch.is_dir() else None))
    shutil.rmtree(copy)
    shutil.copytree(directory, copy, symlinks=True)
    for name in listing(copy):
        match = MANIFEST.match(name)
        if match and int(match.group(1)) > generation:
            (copy / name).unlink()
    try:
        return load_directory(copy, **options)
    finally:
        shutil.rmtree(copy, ignore_errors=True)


# -- surgery on the newest generation --------------------------------------------------------------


def manifest_doc(directory: Path) -> tuple[Path, dict[str, Any]]:
    """The newest manifest's path and document."""
    path = directory / manifest_name(latest_generation(directory))
    return path, loads(path.read_bytes())


def edit_manifest(directory: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """Rewrite the newest manifest in place after ``edit`` changed its document."""
    path, doc = manifest_doc(directory)
    edit(doc)
    path.write_bytes(file_bytes(doc))
    return path


def reseal(directory: Path, kind: str, data: bytes) -> str:
    """Store ``data`` as the newest generation's ``kind`` companion and re-seal the manifest; returns its name."""
    sha = sha256_hex(data)
    name = companion_name(kind, sha)
    (directory / name).write_bytes(data)

    def point(doc: dict[str, Any]) -> None:
        doc[kind] = {"name": name, "sha256": sha, "bytes": len(data)}

    edit_manifest(directory, point)
    return name


def reseal_doc(directory: Path, kind: str, edit: Callable[[Any], None]) -> str:
    """Edit the newest generation's ``kind`` companion as a document, then :func:`reseal` it."""
    _, doc = manifest_doc(directory)
    document = loads((directory / doc[kind]["name"]).read_bytes())
    edit(document)
    return reseal(directory, kind, file_bytes(document))


def tree_of(entries: list[dict[str, Any]]) -> TreeHead:
    """The Merkle tree head of ledger entries as documents (checked or not)."""
    return MerkleTree.of_leaves(entry_leaf_hash(entry) for entry in entries).head()


def sign_manifest(directory: Path, signer: NoteSigner, *, session_id: str | None = None) -> str:
    """Sign the newest generation's ``ledger_tree`` (for ``session_id``, by default its own); returns the note."""

    def sign(doc: dict[str, Any]) -> None:
        tree = doc["ledger_tree"]
        head = TreeHead(tree["size"], bytes.fromhex(tree["root"]))
        doc["checkpoint"] = sign_head(session_id or doc["session_id"], head, signer)

    edit_manifest(directory, sign)
    return str(manifest_doc(directory)[1]["checkpoint"])


def reseal_ledger(
    directory: Path,
    edit: Callable[[list[dict[str, Any]]], None],
    *,
    rechain: bool = True,
    signer: NoteSigner | None = None,
) -> str:
    """Edit the ledger's entries; re-chain every digest (unless ``rechain`` is off) and move the head with it.

    The manifest's tree head follows the edited entries; its checkpoint is signed again with ``signer``,
    or dropped without one.
    """
    _, doc = manifest_doc(directory)
    ledger = loads((directory / doc["runledger"]["name"]).read_bytes())
    edit(ledger["entries"])
    if rechain:
        previous = GENESIS
        for entry in ledger["entries"]:
            entry["previous"] = previous
            entry["digest"] = entry_digest(entry)
            previous = entry["digest"]
        ledger["head"] = previous
    name = reseal(directory, "runledger", file_bytes(ledger))

    tree = tree_of(ledger["entries"])

    def head(doc: dict[str, Any]) -> None:
        doc["ledger_head"] = ledger["head"]
        doc["ledger_tree"] = {"size": tree.size, "root": tree.root_hex}
        doc["checkpoint"] = None if signer is None else sign_head(doc["session_id"], tree, signer)

    edit_manifest(directory, head)
    return name


# -- subprocesses ---------------------------------------------------------------------------------


def run_python(
    code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (after :data:`PREAMBLE`) in a fresh interpreter; never raises on its exit status."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", PREAMBLE + code, *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
    )

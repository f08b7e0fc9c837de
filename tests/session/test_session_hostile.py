"""Hostile session directories: files that are not files, numbers that cost work, nesting, the lock.

Three named datasets, in the house style of ``tests/test_session_corruption.py`` (a copy of the demo
session saved as generation 1, one thing broken, the refusal it must get):

* :data:`NOT_FILES` — a fifo or a socket under a companion's name. Opening a fifo for reading blocks
  until a writer appears, so on a loader that opens without ``O_NONBLOCK`` these hang for good; each
  load therefore runs in a subprocess with a timeout, and a hang fails the test instead of blocking.
* :data:`BOUNDS` — integers that drove a loop or an allocation (a done task's ``attempt`` of 10⁸
  cost gigabytes), a manifest far beyond any real one, a companion far larger than recorded. These
  loads run in a subprocess too, with a timeout and an address-space limit.
* :data:`DEEP` — every companion and the manifest nested past the one nesting limit
  (:data:`~contextmesh.core.canonical.MAX_DEPTH`, 254 levels: the deepest a commit can write back), up to
  past orjson's own 1,024 and far beyond. Each is refused at ``<file>:$``, never with a
  ``RecursionError``, and a graph at exactly the limit loads and commits back.

Then the writer lock (``session.lock`` as a hard link to a file elsewhere must leave that file
byte-for-byte untouched), the served-record readers, ``session verify`` end to end, and the one file
only a reader that pins keys opens: the previous generation's manifest (a fifo, a socket or a symlink
under its name refused without blocking, naming it).
"""

from __future__ import annotations

import importlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from contextlib import chdir
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from demo_cache import DemoSessions
from session_helpers import (
    clone,
    listing,
    manifest_doc,
    reseal,
    run_python,
)

from contextmesh.core import canonical
from contextmesh.core.canonical import MAX_SAFE_INTEGER, file_bytes, loads
from contextmesh.core.errors import ContextMeshError, SessionError
from contextmesh.demo.saved import demo_registry
from contextmesh.execution import snapshot
from contextmesh.formats.signed_note import NoteSigner
from contextmesh.session.layout import COMPANIONS, LOCK_NAME, manifest_name
from contextmesh.session.load import SessionFileError, load_directory
from contextmesh.session.session import Session

MANIFEST = manifest_name(1)
# The documented bounds (stated here as the rules, and checked against the code's constants below).
MAX_DEPTH = 254  # levels a file may nest: the deepest document a commit writes back
MANIFEST_MAX_BYTES = 64 * 1024
MAX_ATTEMPT = MAX_SAFE_INTEGER - 1  # one more run must stay writable
TIMEOUT = 60.0  # seconds; a fixed loader answers each of these in about one
Plant = Callable[[Path, Path], Any]  # (session directory, a scratch directory outside it)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    return demo_sessions.copy(tmp_path_factory.mktemp("hostile"))


def names(directory: Path) -> dict[str, str]:
    """Placeholders for expected paths: the manifest's and every companion's name (if the manifest reads)."""
    try:
        _, doc = manifest_doc(directory)
    except ContextMeshError:  # a manifest broken on purpose names nothing
        return {"manifest": MANIFEST}
    return {"manifest": MANIFEST, **{kind: doc[kind]["name"] for kind in COMPANIONS}}


# -- loading in a subprocess, so a hang or a runaway allocation fails instead of blocking -----------

_LOAD = """
import json, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # a runaway allocation fails fast
from contextmesh.demo.saved import demo_registry
from contextmesh.core.errors import ContextMeshError
from contextmesh.session.load import load_directory
from contextmesh.formats.signed_note import NoteVerifier
pins = [NoteVerifier.from_vkey(text) for text in sys.argv[3:]]
try:
    loaded = load_directory(Path(sys.argv[1]), registry=demo_registry(Path(sys.argv[2])), trusted_keys=pins)
except ContextMeshError as exc:
    print(json.dumps({"error": type(exc).__name__, "path": getattr(exc, "path", None), "message": str(exc)}))
else:
    tasks = loaded.runner.tasks.values() if loaded.runner else []
    print(json.dumps({"generation": loaded.manifest.generation, "attempts": {t.name: t.attempt for t in tasks}}))
"""


def load_elsewhere(directory: Path, feed: Path, *pins: str) -> dict[str, Any]:
    """Load ``directory`` in a fresh interpreter (pinning the verifier keys ``pins``); its outcome as data
    (a timeout raises, failing the test)."""
    done = run_python(_LOAD, str(directory), str(feed), *pins, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_bounds_are_the_documented_ones() -> None:
    files = importlib.import_module("contextmesh.session.files")  # new with these bounds
    assert canonical.MAX_DEPTH == MAX_DEPTH
    assert files.MANIFEST_MAX_BYTES == MANIFEST_MAX_BYTES
    assert snapshot.MAX_ATTEMPT == MAX_ATTEMPT


# -- not files --------------------------------------------------------------------------------------


def fifo_as(kind: str) -> Plant:
    def plant(directory: Path, _: Path) -> None:
        path = directory / names(directory)[kind]
        path.unlink()
        os.mkfifo(path)

    return plant


def socket_as(kind: str) -> Plant:
    def plant(directory: Path, _: Path) -> None:
        name = names(directory)[kind]
        (directory / name).unlink()
        with chdir(directory), socket.socket(socket.AF_UNIX) as server:
            server.bind(name)  # relative: a socket's path is limited to about 100 bytes

    return plant


@dataclass(frozen=True)
class Case:
    """One hostile directory and the outcome its load must have."""

    name: str
    plant: Plant
    path: str | None  # the exact .path of the refusal ({manifest}, {graph}, …); None: the load succeeds
    fragment: str = ""  # a fragment of the message (or, for a load that succeeds, of nothing)
    check: Callable[[dict[str, Any]], None] | None = None  # more about a successful load


NOT_FILES = [
    *(Case(f"fifo under the {kind} companion's name", fifo_as(kind), f"{{{kind}}}", "a fifo") for kind in COMPANIONS),
    Case("socket under the graph companion's name", socket_as("graph"), "{graph}", "not a regular file"),
]


@pytest.mark.parametrize("case", NOT_FILES, ids=[c.name for c in NOT_FILES])
def test_a_fifo_or_socket_under_a_companions_name_is_refused_without_blocking(
    case: Case, template: tuple[Path, Path], tmp_path: Path
) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    case.plant(directory, tmp_path)
    filled = names(directory)
    outcome = load_elsewhere(directory, feed)
    assert outcome.get("error") == "SessionFileError", outcome
    assert outcome["path"] == (case.path or "").format(**filled)
    assert case.fragment in outcome["message"]
    assert "regular file" in outcome["message"]


# -- bounds: no number in a file drives the loader's work -------------------------------------------


def done_task(directory: Path) -> tuple[int, dict[str, Any]]:
    _, doc = manifest_doc(directory)
    execution = loads((directory / doc["execution"]["name"]).read_bytes())
    index = next(i for i, t in enumerate(execution["tasks"]) if t["state"] == "done")
    return index, execution


def set_attempt(value: int) -> Plant:
    def plant(directory: Path, _: Path) -> None:
        index, execution = done_task(directory)
        execution["tasks"][index]["attempt"] = value
        reseal(directory, "execution", file_bytes(execution))

    return plant


def attempt_kept(value: int) -> Callable[[dict[str, Any]], None]:
    def check(outcome: dict[str, Any]) -> None:
        assert value in outcome["attempts"].values(), outcome

    return check


def padded_manifest(directory: Path, _: Path) -> None:
    path = directory / MANIFEST
    path.write_bytes(path.read_bytes().rstrip(b"\n") + b" " * (MANIFEST_MAX_BYTES + 1) + b"\n")  # still valid JSON


def graph_far_larger_than_recorded(directory: Path, _: Path) -> None:
    path = directory / names(directory)["graph"]
    with path.open("ab") as out:
        out.truncate(1 << 34)  # 16 GiB, sparse: a loader that read it whole would not come back


BOUNDS = [
    Case("attempt 10^8 on a done task", set_attempt(10**8), None, check=attempt_kept(10**8)),
    Case(
        "attempt at the largest one more run can write", set_attempt(MAX_ATTEMPT), None, check=attempt_kept(MAX_ATTEMPT)
    ),
    Case("attempt 2^53-1 (no run could follow)", set_attempt(MAX_SAFE_INTEGER), "{execution}:tasks[{task}].attempt"),
    Case("manifest past 64 KiB", padded_manifest, "{manifest}", f"at most {MANIFEST_MAX_BYTES} bytes"),
    Case("companion 16 GiB past its recorded size", graph_far_larger_than_recorded, "{manifest}:graph.sha256"),
]


@pytest.mark.parametrize("case", BOUNDS, ids=[c.name for c in BOUNDS])
def test_the_loaders_work_is_bounded_by_the_files_not_by_their_numbers(
    case: Case, template: tuple[Path, Path], tmp_path: Path
) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    task = str(done_task(directory)[0])
    case.plant(directory, tmp_path)
    filled = {**names(directory), "task": task}
    outcome = load_elsewhere(directory, feed)
    if case.path is None:
        assert outcome.get("generation") == 1, outcome
        assert case.check is not None
        case.check(outcome)
    else:
        assert outcome.get("error") == "SessionFileError", outcome
        assert outcome["path"] == case.path.format(**filled), outcome
        assert case.fragment in outcome["message"]


# -- nesting ----------------------------------------------------------------------------------------

HOLE = "<deep>"


def nested(depth: int) -> bytes:
    """``depth`` nested lists around a 1."""
    return b"[" * depth + b"1" + b"]" * depth


def deep_in(kind: str, place: Callable[[Any], int], depth: int) -> Plant:
    """Put lists in ``kind``'s document where ``place`` says, so the whole document nests ``depth`` deep.

    ``place`` sets :data:`HOLE` somewhere in the document and returns how many containers enclose it.
    The bytes are spliced in after serialising: the writer itself refuses to write such a document.
    """

    def plant(directory: Path, _: Path) -> None:
        path = directory / (MANIFEST if kind == "manifest" else names(directory)[kind])
        doc = loads(path.read_bytes())
        enclosing = place(doc)
        data = file_bytes(doc).replace(json.dumps(HOLE).encode(), nested(depth - enclosing), 1)
        if kind == "manifest":
            path.write_bytes(data)
        else:
            reseal(directory, kind, data)

    return plant


def in_graph_attrs(doc: Any) -> int:
    doc["nodes"][0]["attrs"]["deep"] = HOLE
    return 4  # the document, nodes, the node, its attrs


def in_task_output(doc: Any) -> int:
    doc["tasks"][0]["output"] = HOLE
    return 3


def in_ledger_detail(doc: Any) -> int:
    doc["entries"][0]["detail"] = HOLE
    return 3


def in_list(name: str) -> Callable[[Any], int]:
    def place(doc: Any) -> int:
        doc[name] = [HOLE]
        return 2

    return place


def in_walker(doc: Any) -> int:
    doc["walker"]["policy"] = HOLE
    return 2


TOO_DEEP = f"a file nests arrays and objects at most {MAX_DEPTH} deep"
DEEP = [
    Case("graph one past the bound", deep_in("graph", in_graph_attrs, MAX_DEPTH + 1), "{graph}:$", TOO_DEEP),
    Case("graph 1,000 deep", deep_in("graph", in_graph_attrs, 1000), "{graph}:$", TOO_DEEP),
    Case("graph 1,024 deep (orjson's own bound)", deep_in("graph", in_graph_attrs, 1024), "{graph}:$", TOO_DEEP),
    Case("graph 1,025 deep", deep_in("graph", in_graph_attrs, 1025), "{graph}:$", TOO_DEEP),
    Case("graph 100,000 deep", deep_in("graph", in_graph_attrs, 100_000), "{graph}:$", TOO_DEEP),
    Case("task output 1,000 deep", deep_in("execution", in_task_output, 1000), "{execution}:$", TOO_DEEP),
    Case("ledger entry 1,000 deep", deep_in("runledger", in_ledger_detail, 1000), "{runledger}:$", TOO_DEEP),
    Case("telemetry 1,000 deep", deep_in("telemetry", in_list("nodes"), 1000), "{telemetry}:$", TOO_DEEP),
    Case("resolver 1,000 deep", deep_in("resolver", in_list("log"), 1000), "{resolver}:$", TOO_DEEP),
    Case("manifest 1,000 deep", deep_in("manifest", in_walker, 1000), "{manifest}:$", TOO_DEEP),
]


@pytest.mark.parametrize("case", DEEP, ids=[c.name for c in DEEP])
def test_nesting_past_the_bound_is_refused_at_the_files_root_never_with_a_recursion_error(
    case: Case, template: tuple[Path, Path], tmp_path: Path
) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    case.plant(directory, tmp_path)
    filled = names(directory)
    with pytest.raises(SessionFileError) as refused:
        load_directory(directory, registry=demo_registry(feed))
    assert refused.value.path == (case.path or "").format(**filled), str(refused.value)
    assert case.fragment in str(refused.value)


def test_a_graph_at_exactly_the_bound_loads_and_commits_back(template: tuple[Path, Path], tmp_path: Path) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    deep_in("graph", in_graph_attrs, MAX_DEPTH)(directory, tmp_path)
    session = Session.load(directory, registry=demo_registry(feed), policy="never")
    first = next(iter(session.graph.nodes.values()))
    session.graph.record_walk([first.id], [])  # something to commit
    assert session.commit() == 2
    again = Session.load(directory, registry=demo_registry(feed), policy="never")
    assert next(iter(again.graph.nodes.values())).attrs == first.attrs


def test_session_verify_refuses_a_deep_graph_in_one_line(template: tuple[Path, Path], tmp_path: Path) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    deep_in("graph", in_graph_attrs, 1000)(directory, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "contextmesh", "session", "verify", str(directory), "--feed", str(feed)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("contextmesh: graph-"), done.stderr
    assert TOO_DEEP in lines[0]


def test_session_verify_refuses_a_fifo_companion_in_one_line(template: tuple[Path, Path], tmp_path: Path) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    graph = names(directory)["graph"]
    fifo_as("graph")(directory, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "contextmesh", "session", "verify", str(directory), "--feed", str(feed)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == (
        f"contextmesh: {graph}: a fifo, not a regular file; a session file is a regular file inside the "
        "directory, not a symlink, fifo, socket, device or directory"
    )


# -- the writer lock --------------------------------------------------------------------------------

VICTIM = b"a file outside the session that must survive every commit\n" * 3


def opened(template: tuple[Path, Path], tmp_path: Path) -> Session:
    source, feed = template
    session = Session.load(clone(source, tmp_path / "session"), registry=demo_registry(feed), policy="never")
    session.graph.record_walk([next(iter(session.graph.nodes))], [])  # something to commit
    return session


def test_a_hard_linked_lock_is_refused_and_the_file_it_links_to_is_untouched(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    session = opened(template, tmp_path)
    assert session.directory is not None
    victim = tmp_path / "precious.txt"
    victim.write_bytes(VICTIM)
    lock = session.directory / LOCK_NAME
    lock.unlink()
    os.link(victim, lock)
    before = listing(session.directory)
    with pytest.raises(SessionError, match="has 2 links"):
        session.commit()
    assert victim.read_bytes() == VICTIM
    assert victim.stat().st_nlink == 2  # refused, not unlinked or replaced
    assert listing(session.directory) == before
    assert load_directory(session.directory, registry=session.registry).manifest.generation == 1


def test_a_lock_holding_something_a_writer_did_not_write_is_refused_not_truncated(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    session = opened(template, tmp_path)
    assert session.directory is not None
    lock = session.directory / LOCK_NAME
    lock.write_bytes(VICTIM)
    with pytest.raises(SessionError, match="did not write"):
        session.commit()
    assert lock.read_bytes() == VICTIM


def test_a_lock_left_by_a_dead_writer_is_reused(template: tuple[Path, Path], tmp_path: Path) -> None:
    session = opened(template, tmp_path)
    assert session.directory is not None
    lock = session.directory / LOCK_NAME
    lock.write_bytes(b"pid 4242 on some-host\n")  # a holder killed mid-commit leaves its line
    assert session.commit() == 2
    assert lock.read_bytes() == b""


# -- the previous manifest, which only a reader that pins keys opens -------------------------------


def _signed_second_generation(template: tuple[Path, Path], directory: Path) -> NoteSigner:
    from contextmesh.demo.saved import open_demo_session

    source, feed = template
    clone(source, directory)
    key = NoteSigner.generate("contextmesh.test/hostile")
    session = open_demo_session(directory, feed=feed, policy="never")
    session.ask("What made the sharding rule wrong?")
    session.commit(signer=key)
    return key


def _previous_as_fifo(previous: Path, _: Path) -> None:
    previous.unlink()
    os.mkfifo(previous)


def _previous_as_socket(previous: Path, _: Path) -> None:
    previous.unlink()
    with chdir(previous.parent), socket.socket(socket.AF_UNIX) as server:
        server.bind(previous.name)


def _previous_as_symlink(previous: Path, outside: Path) -> None:
    copy = outside / "previous-copy.json"
    copy.write_bytes(previous.read_bytes())  # a byte-exact copy: only where it lives is wrong
    previous.unlink()
    previous.symlink_to(copy)


@pytest.mark.parametrize(
    ("plant", "found"),
    [(_previous_as_fifo, "a fifo"), (_previous_as_socket, "not a regular file"), (_previous_as_symlink, "a symlink")],
    ids=["fifo", "socket", "symlink"],
)
def test_a_pinning_reader_refuses_a_previous_manifest_that_is_not_a_file_without_blocking(
    plant: Plant, found: str, template: tuple[Path, Path], tmp_path: Path
) -> None:
    directory = tmp_path / "session"
    key = _signed_second_generation(template, directory)
    plant(directory / manifest_name(1), tmp_path)
    _, feed = template
    assert load_elsewhere(directory, feed)["generation"] == 2  # a reader without pins never opens it
    outcome = load_elsewhere(directory, feed, key.verifier().vkey())
    assert outcome.get("error") == "SessionFileError", outcome
    assert outcome["path"] == manifest_name(1)
    assert found in outcome["message"]

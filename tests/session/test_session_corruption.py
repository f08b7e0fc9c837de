"""A session directory is untrusted input: every way it can be wrong is refused, saying where.

The cases are a named dataset (:data:`CASES`). Each starts from a copy of the demo session saved as
generation 1 — graph, resolver, plan and ledger — and breaks one thing. Cases aimed at a check
*between* files re-seal the manifest around the edited companion (new content address, digest,
size, ledger head), so the load gets past the digest check and reaches the check the case is about.

Each case names the error class and either the exact ``.path`` (``<file>:<place in it>``; names in
braces are filled in from the broken directory's manifest) or a fragment of the message, for the
directory-level refusals that have no file to point at.

The v4 cases (the tree head and the checkpoint) start from the template signed with :data:`KEY` as a
writer holding it would have; the ``pinned`` ones load as a reader that pins its verifier key.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from demo_cache import DemoSessions
from execution_helpers import demo_registry as registry_without
from session_helpers import (
    clone,
    edit_manifest,
    listing,
    manifest_doc,
    reseal_doc,
    reseal_ledger,
    sign_manifest,
)

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import ContextMeshError, InputError, SessionError
from contextmesh.demo.auth import DEFAULT_KEYS
from contextmesh.formats.merkle import TreeHead
from contextmesh.formats.signed_note import NoteSigner
from contextmesh.knowledge.text import normalize
from contextmesh.session.heads import sign_head
from contextmesh.session.layout import COMPANIONS, manifest_name
from contextmesh.session.load import SessionFileError, load_directory

MANIFEST = manifest_name(1)
Corrupt = Callable[[Path, Path], Any]  # (session directory, a scratch directory outside it)
KEY = NoteSigner.generate("contextmesh.test/deploy")
FORGER = NoteSigner.generate("contextmesh.test/deploy")  # the deployment's key name, another key
OTHER_SESSION = "2ff00f21-ef01-45ee-873a-75371bcbba39"


@dataclass(frozen=True)
class Case:
    """One broken directory and the refusal it must get."""

    name: str
    corrupt: Corrupt
    error: type[ContextMeshError]
    path: str | None = None  # the exact .path; {manifest} or a companion kind: {graph}, {telemetry}, …
    fragment: str | None = None  # a fragment of the message
    file: str | None = None  # without an exact path: the file the path must start with
    registry: str = "demo"  # "demo", "none" or "without:<key>"
    marks: tuple[Any, ...] = field(default=())
    pinned: bool = False  # load as a reader that pins KEY


# -- corruptions ------------------------------------------------------------------------------------


def set_field(name: str, value: Any) -> Corrupt:
    def corrupt(directory: Path, _: Path) -> None:
        edit_manifest(directory, lambda doc: doc.__setitem__(name, value))

    return corrupt


def set_nested(outer: str, name: str, value: Any) -> Corrupt:
    def corrupt(directory: Path, _: Path) -> None:
        edit_manifest(directory, lambda doc: doc[outer].__setitem__(name, value))

    return corrupt


def drop_field(name: str) -> Corrupt:
    def corrupt(directory: Path, _: Path) -> None:
        edit_manifest(directory, lambda doc: doc.pop(name))

    return corrupt


def replace_text(old: bytes, new: bytes) -> Corrupt:
    def corrupt(directory: Path, _: Path) -> None:
        path = directory / MANIFEST
        data = path.read_bytes()
        assert old in data
        path.write_bytes(data.replace(old, new, 1))

    return corrupt


def graph_named_as_resolver(directory: Path, _: Path) -> None:
    edit_manifest(directory, lambda doc: doc.__setitem__("graph", dict(doc["resolver"])))


def flip_graph_byte(directory: Path, _: Path) -> None:
    _, doc = manifest_doc(directory)
    path = directory / doc["graph"]["name"]
    data = bytearray(path.read_bytes())
    at = data.index(b'"walks":') + len(b'"walks":')
    data[at] = ord("7") if data[at] != ord("7") else ord("8")
    path.write_bytes(bytes(data))


def remove_graph(directory: Path, _: Path) -> None:
    _, doc = manifest_doc(directory)
    (directory / doc["graph"]["name"]).unlink()


def graph_symlink_outside(directory: Path, outside: Path) -> None:
    _, doc = manifest_doc(directory)
    path = directory / doc["graph"]["name"]
    copy = outside / "graph-copy.json"
    shutil.copyfile(path, copy)  # a valid copy: only where it lives is wrong
    path.unlink()
    path.symlink_to(copy)


def graph_is_a_directory(directory: Path, _: Path) -> None:
    _, doc = manifest_doc(directory)
    path = directory / doc["graph"]["name"]
    path.unlink()
    path.mkdir()


def reseal_graph_text(directory: Path, _: Path) -> None:
    from session_helpers import reseal

    reseal(directory, "graph", b'{"schema": "contextmesh.graph", "version": 2,')


def graph_schema(directory: Path, _: Path) -> None:
    reseal_doc(directory, "graph", lambda doc: doc.__setitem__("schema", "contextmesh.resolver"))


def graph_carries_a_counter(directory: Path, _: Path) -> None:
    reseal_doc(directory, "graph", lambda doc: doc["nodes"][0].__setitem__("walks", 3))


def telemetry_edit(edit: Callable[[dict[str, Any]], None]) -> Corrupt:
    def corrupt(directory: Path, _: Path) -> None:
        reseal_doc(directory, "telemetry", edit)

    return corrupt


def telemetry_ghost_node(directory: Path, _: Path) -> None:
    reseal_doc(directory, "telemetry", lambda doc: doc["nodes"].insert(0, ["entity:ghost-000000", 1]))


def telemetry_node_twice(directory: Path, _: Path) -> None:
    reseal_doc(directory, "telemetry", lambda doc: doc["nodes"].append(list(doc["nodes"][0])))


def resolver_ghost_entity(directory: Path, _: Path) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["canonical"].insert(0, ["entity:ghost-000000", "Ghost Service"])
        doc["aliases"].append([normalize("Ghost Service"), "entity:ghost-000000"])

    reseal_doc(directory, "resolver", edit)


def resolver_relabel(directory: Path, _: Path) -> None:
    def edit(doc: dict[str, Any]) -> None:
        entity_id, _old = doc["canonical"][0]
        doc["canonical"][0][1] = "HNSW Gateway"
        doc["aliases"].append([normalize("HNSW Gateway"), entity_id])
        for record in doc["log"]:
            if record["entity_id"] == entity_id:
                record["label"] = "HNSW Gateway"

    reseal_doc(directory, "resolver", edit)


def execution_blocked(directory: Path, _: Path) -> None:
    reseal_doc(directory, "execution", lambda doc: doc["tasks"][0].__setitem__("state", "blocked"))


def ledger_entry(index: int, name: str, value: Any, *, rechain: bool = True) -> Corrupt:
    def corrupt(directory: Path, _: Path) -> None:
        reseal_ledger(directory, lambda entries: entries[index].__setitem__(name, value), rechain=rechain)

    return corrupt


def signed(*corruptions: Corrupt) -> Corrupt:
    """The template signed with KEY (as its writer would have), then broken by each corruption in turn."""

    def corrupt(directory: Path, outside: Path) -> None:
        sign_manifest(directory, KEY)
        for each in corruptions:
            each(directory, outside)

    return corrupt


def set_tree(name: str, value: Any) -> Corrupt:
    def corrupt(directory: Path, _: Path) -> None:
        edit_manifest(directory, lambda doc: doc["ledger_tree"].__setitem__(name, value))

    return corrupt


def shift_tree(size: int = 0, root_byte: int | None = None) -> Corrupt:
    """Move the recorded head: its size by ``size``, or one bit of its root's byte ``root_byte``."""

    def corrupt(directory: Path, _: Path) -> None:
        def edit(doc: dict[str, Any]) -> None:
            tree = doc["ledger_tree"]
            tree["size"] += size
            if root_byte is not None:
                root = bytearray.fromhex(tree["root"])
                root[root_byte] ^= 0x01
                tree["root"] = root.hex()

        edit_manifest(directory, edit)

    return corrupt


def checkpoint_of(*, session_id: str | None = None, size: int = 0, flip: bool = False) -> Corrupt:
    """A checkpoint genuinely signed by KEY, of another session's origin, size or root."""

    def corrupt(directory: Path, _: Path) -> None:
        def edit(doc: dict[str, Any]) -> None:
            root = bytearray.fromhex(doc["ledger_tree"]["root"])
            if flip:
                root[0] ^= 0x01
            head = TreeHead(doc["ledger_tree"]["size"] + size, bytes(root))
            doc["checkpoint"] = sign_head(session_id or doc["session_id"], head, KEY)

        edit_manifest(directory, edit)

    return corrupt


def rewrite_history(signer: NoteSigner) -> Corrupt:
    """Every entry rewritten and re-chained, the heads and tree re-sealed, re-signed by ``signer``."""

    def corrupt(directory: Path, _: Path) -> None:
        def rewrite(entries: list[dict[str, Any]]) -> None:
            for entry in entries:
                entry["detail"] = f"rewritten: {entry['detail']}"

        reseal_ledger(directory, rewrite, signer=signer)

    return corrupt


def flip_signature(directory: Path, _: Path) -> None:
    def edit(doc: dict[str, Any]) -> None:
        lines = doc["checkpoint"].split("\n")
        name, signature = lines[4][2:].split(" ")
        middle = "B" if signature[30] == "A" else "A"
        lines[4] = f"— {name} {signature[:30]}{middle}{signature[31:]}"
        doc["checkpoint"] = "\n".join(lines)

    edit_manifest(directory, edit)


def as_v3(directory: Path, _: Path) -> None:
    def edit(doc: dict[str, Any]) -> None:
        assert doc["journal"] == []  # v3 had no journal: only a generation that is its snapshot downgrades
        doc["version"] = 3
        del doc["ledger_tree"], doc["checkpoint"], doc["journal"]

    edit_manifest(directory, edit)


def empty_directory(directory: Path, _: Path) -> None:
    shutil.rmtree(directory)
    directory.mkdir()


def missing_directory(directory: Path, _: Path) -> None:
    shutil.rmtree(directory)


def manifest_symlink(directory: Path, outside: Path) -> None:
    copy = outside / "manifest-copy.json"
    shutil.copyfile(directory / MANIFEST, copy)
    (directory / MANIFEST).unlink()
    (directory / MANIFEST).symlink_to(copy)


def broken_newer_generation(directory: Path, _: Path) -> None:
    doc = loads((directory / MANIFEST).read_bytes())
    doc["generation"], doc["rounds"] = 2, -1
    (directory / manifest_name(2)).write_bytes(file_bytes(doc))


def truncate_manifest(directory: Path, _: Path) -> None:
    path = directory / MANIFEST
    path.write_bytes(path.read_bytes()[:200])


# -- the dataset ------------------------------------------------------------------------------------

M = "{manifest}:"
CASES = [
    # the manifest's own format
    Case("wrong schema", set_field("schema", "contextmesh.graph"), SessionFileError, M + "schema"),
    Case("original v1 manifest", set_field("version", 1), SessionFileError, M + "version", "original ContextMesh"),
    Case("original v2 manifest", set_field("version", 2), SessionFileError, M + "version", "original ContextMesh"),
    Case(
        "future v6 manifest",
        set_field("version", 6),
        SessionFileError,
        M + "version",
        "reads contextmesh.session v3, v4 and v5",
    ),
    Case("missing field", drop_field("rounds"), SessionFileError, M + "rounds", "is required"),
    Case("unknown field", set_field("comment", "hello"), SessionFileError, M + "comment", "unknown field"),
    Case("rounds as text", set_field("rounds", "1"), SessionFileError, M + "rounds"),
    Case("rounds as true", set_field("rounds", True), SessionFileError, M + "rounds"),
    Case("generation is not the file's", set_field("generation", 7), SessionFileError, M + "generation"),
    Case("session id not a UUID", set_field("session_id", "my-session"), SessionFileError, M + "session_id"),
    Case(
        "session id in capitals",
        set_field("session_id", "2FF00F21-EF01-45EE-873A-75371BCBBA39"),
        SessionFileError,
        M + "session_id",
    ),
    Case("companion name ../x", set_nested("graph", "name", "../x"), SessionFileError, M + "graph.name"),
    Case("companion name a/b", set_nested("graph", "name", "a/b"), SessionFileError, M + "graph.name"),
    Case("companion name of another kind", graph_named_as_resolver, SessionFileError, M + "graph.name"),
    Case("companion digest not hex", set_nested("graph", "sha256", "XYZ"), SessionFileError, M + "graph.sha256"),
    Case(
        "walker policy names an unknown edge type",
        lambda d, _: edit_manifest(d, lambda doc: doc["walker"]["policy"].append("teleports_to")),
        SessionFileError,
        M + "walker.policy",
    ),
    Case("walker hop budget 0", set_nested("walker", "hop_budget", 0), SessionFileError, M + "walker.hop_budget"),
    Case("corpus label a number", set_field("corpus", 42), SessionFileError, M + "corpus"),
    Case("corpus label empty", set_field("corpus", ""), SessionFileError, M + "corpus"),
    Case("corpus label of 201 characters", set_field("corpus", "x" * 201), SessionFileError, M + "corpus"),
    Case("corpus label with a newline", set_field("corpus", "water\ndocs"), SessionFileError, M + "corpus"),
    Case("corpus label with a trailing space", set_field("corpus", "water "), SessionFileError, M + "corpus"),
    Case("execution present, runledger null", set_field("runledger", None), SessionFileError, M + "execution"),
    Case("ledger head not hex", set_field("ledger_head", "zz"), SessionFileError, M + "ledger_head"),
    Case(
        "duplicate key in the manifest",
        replace_text(b'"rounds":1', b'"rounds":1,"rounds":1'),
        InputError,
        fragment="twice",
        file=MANIFEST,
    ),
    Case(
        "manifest not JSON",
        truncate_manifest,
        InputError,
        fragment="not strict JSON",
        file=MANIFEST,
    ),
    Case(
        "newest manifest broken: no fallback", broken_newer_generation, SessionFileError, "session-000002.json:rounds"
    ),
    # companions against the manifest
    Case("companion byte edited", flip_graph_byte, SessionFileError, M + "graph.sha256", "different content"),
    Case("companion size differs", set_nested("graph", "bytes", 12), SessionFileError, M + "graph.sha256"),
    Case("companion missing", remove_graph, SessionError, fragment="which must exist"),
    Case("companion a symlink outside", graph_symlink_outside, SessionFileError, "{graph}", "not a symlink"),
    Case("companion a directory", graph_is_a_directory, SessionFileError, "{graph}", "not a regular file"),
    Case(
        "companion not JSON",
        reseal_graph_text,
        InputError,
        fragment="not strict JSON",
        file="{graph}",
    ),
    Case("graph of the wrong schema", graph_schema, SessionFileError, "{graph}:schema"),
    Case("manifest without telemetry", drop_field("telemetry"), SessionFileError, M + "telemetry", "is required"),
    Case(
        "telemetry named as the graph",
        lambda d, _: edit_manifest(d, lambda doc: doc.__setitem__("telemetry", dict(doc["graph"]))),
        SessionFileError,
        M + "telemetry.name",
    ),
    Case(
        "telemetry of the wrong version",
        telemetry_edit(lambda doc: doc.__setitem__("version", 2)),
        SessionFileError,
        "{telemetry}:version",
    ),
    Case(
        "telemetry with an unknown field",
        telemetry_edit(lambda doc: doc.__setitem__("rounds", 1)),
        SessionFileError,
        "{telemetry}:rounds",
        "unknown field",
    ),
    Case(
        "telemetry without edges",
        telemetry_edit(lambda doc: doc.pop("edges")),
        SessionFileError,
        "{telemetry}:edges",
        "is required",
    ),
    Case(
        "telemetry counter negative",
        telemetry_edit(lambda doc: doc["nodes"][0].__setitem__(1, -1)),
        SessionFileError,
        "{telemetry}:nodes[0][1]",
    ),
    Case(
        "telemetry counter as true",
        telemetry_edit(lambda doc: doc["edges"][0].__setitem__(1, True)),
        SessionFileError,
        "{telemetry}:edges[0][1]",
    ),
    Case(
        "telemetry entry not a pair",
        telemetry_edit(lambda doc: doc["nodes"][0].append(1)),
        SessionFileError,
        "{telemetry}:nodes[0]",
    ),
    # between the files
    Case("telemetry names a node the graph lacks", telemetry_ghost_node, SessionFileError, "{telemetry}:nodes[0][0]"),
    Case(
        "telemetry names an edge the graph lacks",
        telemetry_edit(lambda doc: doc["edges"].append(["edge:ghost", 1])),
        SessionFileError,
        fragment="an id among the graph's edges",
        file="{telemetry}:edges[",
    ),
    Case("telemetry lists a node twice", telemetry_node_twice, SessionFileError, fragment="at most once"),
    Case(
        "graph companion carries a counter",
        graph_carries_a_counter,
        SessionFileError,
        "{graph}:nodes[0].walks",
        "carries walks as 0",
    ),
    Case(
        "ledger head differs from the ledger's",
        set_field("ledger_head", "ab" * 32),
        SessionFileError,
        "{runledger}:head",
        "not the history that ran",
    ),
    Case(
        "resolver names an entity the graph lacks",
        resolver_ghost_entity,
        SessionFileError,
        "{resolver}:canonical[0][0]",
    ),
    Case("resolver label differs from the graph's", resolver_relabel, SessionFileError, "{resolver}:canonical[0][1]"),
    Case(
        "plan names an unregistered key",
        lambda d, _: None,
        SessionFileError,
        "{execution}:tasks[2].worker_key",
        DEFAULT_KEYS["tokens"],
        registry="without:" + DEFAULT_KEYS["tokens"],
    ),
    Case("plan without a registry", lambda d, _: None, SessionError, fragment="registry", registry="none"),
    Case("execution state blocked", execution_blocked, SessionFileError, "{execution}:tasks[0].state"),
    Case(
        "ledger entry names a task the plan lacks",
        ledger_entry(4, "task", "billing"),
        SessionFileError,
        "{runledger}:entries[4].task",
        "'billing'",
    ),
    Case(
        "ledger entry in a round the plan never reached",
        ledger_entry(9, "round", 2),
        SessionFileError,
        "{runledger}:entries[9].round",
    ),
    Case(
        "ledger cites a decision the graph lacks",
        ledger_entry(0, "decision_id", "decision:ghost-000000"),
        SessionFileError,
        "{runledger}:entries[0].decision_id",
    ),
    Case(
        "tampered ledger entry",
        ledger_entry(2, "detail", "nothing to see", rechain=False),
        SessionFileError,
        "{runledger}:entries[2].digest",
        "edited after it was written",
    ),
    # v4: the tree head and the checkpoint, as the manifest holds them (S41, S42)
    Case("v4 fields in a v3 manifest", set_field("version", 3), SessionFileError, M + "checkpoint", "unknown"),
    Case("tree head dropped", drop_field("ledger_tree"), SessionFileError, M + "ledger_tree", "is required"),
    Case("tree head null, ledger present", set_field("ledger_tree", None), SessionFileError, M + "execution"),
    Case("tree head a list", set_field("ledger_tree", [11, "ab"]), SessionFileError, M + "ledger_tree"),
    Case(
        "tree head without root",
        lambda d, _: edit_manifest(d, lambda doc: doc["ledger_tree"].pop("root")),
        SessionFileError,
        M + "ledger_tree.root",
        "is required",
    ),
    Case("tree head with a depth", set_tree("depth", 4), SessionFileError, M + "ledger_tree.depth", "unknown"),
    Case("tree size negative", set_tree("size", -1), SessionFileError, M + "ledger_tree.size"),
    Case("tree size as text", set_tree("size", "11"), SessionFileError, M + "ledger_tree.size"),
    Case("tree root in capitals", set_tree("root", "AB" * 32), SessionFileError, M + "ledger_tree.root"),
    Case("checkpoint a number", set_field("checkpoint", 7), SessionFileError, M + "checkpoint"),
    # v4: the tree head and the checkpoint against the ledger (S43-S47)
    Case("tree size off by one", shift_tree(size=1), SessionFileError, M + "ledger_tree.size"),
    Case("tampered root", shift_tree(root_byte=31), SessionFileError, M + "ledger_tree.root", "not this ledger's"),
    Case("checkpoint not a signed note", set_field("checkpoint", "hello\n"), SessionFileError, M + "checkpoint"),
    Case(
        "checkpoint for another session id",
        signed(checkpoint_of(session_id=OTHER_SESSION)),
        SessionFileError,
        M + "checkpoint.line[0]",
        "the checkpoint's origin is",
    ),
    Case("checkpoint of another size", signed(checkpoint_of(size=1)), SessionFileError, M + "checkpoint.line[1]"),
    Case("checkpoint of another root", signed(checkpoint_of(flip=True)), SessionFileError, M + "checkpoint.line[2]"),
    Case(
        "tampered root under a checkpoint of it",
        signed(shift_tree(root_byte=0)),
        SessionFileError,
        M + "ledger_tree.root",
    ),
    # v4: a reader that pins the deployment's key (S48, S49)
    Case(
        "dropped checkpoint",
        signed(set_field("checkpoint", None)),
        SessionFileError,
        M + "checkpoint",
        "unsigned",
        pinned=True,
    ),
    Case(
        "a v3 manifest to a pinning reader",
        as_v3,
        SessionFileError,
        M + "version",
        "records no checkpoint",
        pinned=True,
    ),
    Case(
        "consistent rewrite re-signed by another key",
        signed(rewrite_history(FORGER)),
        SessionFileError,
        M + "checkpoint",
        "trusted only when a pinned key signed it",
        pinned=True,
    ),
    Case(
        "checkpoint re-signed by another key",
        lambda d, _: sign_manifest(d, FORGER),
        SessionFileError,
        M + "checkpoint",
        pinned=True,
    ),
    Case(
        "signature with a flipped bit",
        signed(flip_signature),
        SessionFileError,
        M + "checkpoint.line[4]",
        "does not verify",
        pinned=True,
    ),
    Case(
        "checkpoint for another session id, pinned",
        signed(checkpoint_of(session_id=OTHER_SESSION)),
        SessionFileError,
        M + "checkpoint.line[0]",
        pinned=True,
    ),
    # the directory itself
    Case("empty directory", empty_directory, SessionError, fragment="holds no session manifest"),
    Case("directory missing", missing_directory, SessionError, fragment="is not a session directory"),
    Case("manifest is a symlink (ignored)", manifest_symlink, SessionError, fragment="holds no session manifest"),
]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    return demo_sessions.copy(tmp_path_factory.mktemp("corruption"))


def names(directory: Path) -> dict[str, str]:
    """Placeholders for the expected paths: the broken directory's manifest and companion names."""
    filled = {"manifest": MANIFEST}
    try:
        _, doc = manifest_doc(directory)
        for kind in COMPANIONS:
            entry = doc.get(kind)
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                filled[kind] = entry["name"]
    except Exception:  # a manifest broken on purpose has no names to offer
        pass
    return filled


def test_there_are_at_least_thirty_named_cases() -> None:
    assert len(CASES) >= 30
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=c.marks) for c in CASES])
def test_a_broken_session_directory_is_refused_saying_where(
    case: Case, template: tuple[Path, Path], tmp_path: Path
) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    outside = tmp_path / "outside"
    outside.mkdir()
    case.corrupt(directory, outside)
    filled = names(directory) if directory.is_dir() else {"manifest": MANIFEST}
    if case.registry == "none":
        registry = None
    elif case.registry.startswith("without:"):
        registry = registry_without(feed, without=[case.registry.removeprefix("without:")])
    else:
        registry = registry_without(feed)

    pins = (KEY.verifier(),) if case.pinned else ()
    with pytest.raises(ContextMeshError) as refused:
        load_directory(directory, registry=registry, trusted_keys=pins)
    error = refused.value
    assert isinstance(error, case.error), f"{type(error).__name__}: {error}"
    if case.path is not None:
        assert isinstance(error, InputError)
        assert error.path == case.path.format(**filled), str(error)
    if case.file is not None:
        assert isinstance(error, InputError)
        assert error.path.startswith(case.file.format(**filled)), f"path {error.path!r}: {error}"
    if case.fragment is not None:
        assert case.fragment in str(error)


def test_a_missing_companion_is_named_in_the_refusal(template: tuple[Path, Path], tmp_path: Path) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    _, doc = manifest_doc(directory)
    (directory / doc["graph"]["name"]).unlink()
    with pytest.raises(SessionError) as refused:
        load_directory(directory, registry=registry_without(feed))
    assert doc["graph"]["name"] in str(refused.value)


def test_a_wholly_resealed_ledger_is_accepted_because_the_head_is_not_authentication(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    """A writer who can rewrite the ledger can rewrite the manifest beside it; the head stops only a
    change to one companion quietly redefining a committed generation."""
    source, feed = template
    directory = clone(source, tmp_path / "session")
    reseal_ledger(directory, lambda entries: entries[2].__setitem__("detail", "a plausible rewritten history"))
    loaded = load_directory(directory, registry=registry_without(feed))
    assert loaded.ledger is not None
    assert loaded.ledger.entries[2].detail == "a plausible rewritten history"


def test_the_signed_template_loads_for_a_reader_that_pins_its_key_and_a_v3_copy_without_pins(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    source, feed = template
    directory = clone(source, tmp_path / "session")
    signed()(directory, tmp_path)
    loaded = load_directory(directory, registry=registry_without(feed), trusted_keys=(KEY.verifier(),))
    assert loaded.manifest.checkpoint is not None and loaded.manifest.ledger_tree is not None
    as_v3(directory, tmp_path)
    assert load_directory(directory, registry=registry_without(feed)).manifest.version == 3


def test_a_wholly_resealed_and_re_signed_ledger_is_refused_by_a_reader_that_pins_the_key(
    template: tuple[Path, Path], tmp_path: Path
) -> None:
    """The counterpart of the test above: the checkpoint is authentication, for a reader that pins the key."""
    source, feed = template
    directory = clone(source, tmp_path / "session")
    signed(rewrite_history(FORGER))(directory, tmp_path)
    assert load_directory(directory, registry=registry_without(feed)).ledger is not None
    with pytest.raises(SessionFileError) as refused:
        load_directory(directory, registry=registry_without(feed), trusted_keys=(KEY.verifier(),))
    assert refused.value.path == f"{MANIFEST}:checkpoint"


def test_the_template_itself_loads(template: tuple[Path, Path]) -> None:
    source, feed = template
    loaded = load_directory(source, registry=registry_without(feed))
    assert loaded.manifest.generation == 1
    assert listing(source) == sorted(
        [MANIFEST, "session.json", "session.lock", *(c.name for c in loaded.manifest.companions().values())]
    )

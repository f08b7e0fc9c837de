"""A session directory is untrusted input: every way it can be wrong is refused, saying where.

The cases are a named dataset (:data:`CASES`). Each starts from a copy of the demo session saved as
generation 1 — graph, resolver, plan and ledger — and breaks one thing. Cases aimed at a check
*between* files re-seal the manifest around the edited companion (new content address, digest,
size, ledger head), so the load gets past the digest check and reaches the check the case is about.

Each case names the error class and either the exact ``.path`` (``<file>:<place in it>``; names in
braces are filled in from the broken directory's manifest) or a fragment of the message, for the
directory-level refusals that have no file to point at.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from execution_helpers import demo_registry as registry_without
from session_helpers import (
    build_demo_template,
    clone,
    edit_manifest,
    listing,
    manifest_doc,
    reseal_doc,
    reseal_ledger,
)

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import ContextMeshError, InputError, SessionError
from contextmesh.demo.auth import DEFAULT_KEYS
from contextmesh.knowledge.text import normalize
from contextmesh.session.layout import COMPANIONS, manifest_name
from contextmesh.session.load import SessionFileError, load_directory

MANIFEST = manifest_name(1)
Corrupt = Callable[[Path, Path], Any]  # (session directory, a scratch directory outside it)


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
    Case("future v4 manifest", set_field("version", 4), SessionFileError, M + "version", "reads only v3"),
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
    # the directory itself
    Case("empty directory", empty_directory, SessionError, fragment="holds no session manifest"),
    Case("directory missing", missing_directory, SessionError, fragment="is not a session directory"),
    Case("manifest is a symlink (ignored)", manifest_symlink, SessionError, fragment="holds no session manifest"),
]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_demo_template(tmp_path_factory.mktemp("corruption"))


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

    with pytest.raises(ContextMeshError) as refused:
        load_directory(directory, registry=registry)
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


def test_the_template_itself_loads(template: tuple[Path, Path]) -> None:
    source, feed = template
    loaded = load_directory(source, registry=registry_without(feed))
    assert loaded.manifest.generation == 1
    assert listing(source) == sorted(
        [MANIFEST, "session.json", "session.lock", *(c.name for c in loaded.manifest.companions().values())]
    )

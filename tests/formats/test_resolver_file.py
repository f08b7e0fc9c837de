"""The ``contextmesh.resolver`` v2 file: byte-exact round trips, a faithful restore, a strict loader.

Datasets: the demo world's resolver (``build_world(2)``), a small hand-built resolver whose log
holds every resolution method and every drop reason, and :data:`CASES` / :data:`GRAPH_CASES`, the
named ways to spoil its file (each with the ``.path`` the loader must report and a fragment of its
message).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from demo_cache import DemoWorlds
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmesh.core.canonical import loads
from contextmesh.core.errors import CanonicalError, InputError, SnapshotError
from contextmesh.core.graph import ContextGraph
from contextmesh.demo.knowledge import DemoWorld, build_world, round_questions
from contextmesh.formats.resolver_file import (
    METHODS,
    dump_resolver,
    load_resolver,
    resolver_from_dict,
    resolver_to_dict,
)
from contextmesh.knowledge.resolve import Resolver, block_keys
from contextmesh.knowledge.text import normalize

Doc = dict[str, Any]

# -- the small resolver ------------------------------------------------------------------------------

ENTITIES: list[tuple[str, str, tuple[str, ...]]] = [
    ("entity:pgvector", "pgvector", ("pg vector",)),
    ("entity:shard-map", "Shard Map", ("shard table",)),
    ("entity:vss", "Vector Search Service", ("search service",)),
    ("entity:alpha-store", "α-store", ()),
    ("entity:index-loader", "Index Loader", ()),
    ("entity:index-leader", "Index Leader", ()),
]
# One mention per way a resolution ends: every method, every drop reason, and alias hits on learned forms.
MENTIONS = [
    "pgvector",  # alias
    "ShardMap",  # squashed
    "VSS",  # acronym
    "search vector",  # containment
    "pgvectr",  # near_miss
    "pgvectorzz",  # dropped: below the threshold
    "",  # dropped: no words
    "banana",  # dropped: no blocking key
    "shard mop",  # dropped: no alias pairs up word by word
    "index lxader",  # dropped: too close to call
    "Shard maps",  # alias (registered, plural folded)
    "shardmap",  # alias (learned above)
]


def small_resolver(pgvector_name: str = "pgvector") -> Resolver:
    resolver = Resolver(threshold=0.9)
    for entity_id, name, aliases in ENTITIES:
        resolver.register(entity_id, pgvector_name if entity_id == "entity:pgvector" else name, aliases)
    for mention in MENTIONS:
        resolver.resolve(mention)
    return resolver


def small_graph(skip: str = "", **relabel: str) -> ContextGraph:
    graph = ContextGraph()
    for entity_id, name, aliases in ENTITIES:
        if entity_id == skip:
            continue
        label = relabel.get(entity_id.removeprefix("entity:").replace("-", "_"), name)
        graph.add_node("entity", label, id=entity_id, attrs={"canonical": label, "aliases": list(aliases)})
    return graph


SMALL = dump_resolver(small_resolver())


def small_doc() -> Doc:
    value = loads(SMALL)
    assert isinstance(value, dict)
    return value


@pytest.fixture(scope="module")
def world(demo_worlds: DemoWorlds) -> Iterator[DemoWorld]:
    """The demo world with two walk rounds, for its resolver.

    Read-only: shared with other modules, and checked unchanged after this one.
    """
    yield demo_worlds.shared(2)
    demo_worlds.check_unchanged(2)


# -- round trips -------------------------------------------------------------------------------------


def test_small_resolver_round_trips_byte_for_byte() -> None:
    assert dump_resolver(load_resolver(SMALL)) == SMALL
    assert dump_resolver(load_resolver(SMALL, small_graph())) == SMALL


def test_demo_resolver_round_trips_byte_for_byte(world: DemoWorld) -> None:
    data = dump_resolver(world.result.resolver)
    assert dump_resolver(load_resolver(data, world.result.graph)) == data


def test_building_the_small_resolver_twice_gives_the_same_bytes() -> None:
    assert dump_resolver(small_resolver()) == SMALL


def test_file_is_sorted_compact_utf8_json_with_one_trailing_newline() -> None:
    independent = json.dumps(small_doc(), sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    assert independent.encode() == SMALL
    assert SMALL.endswith(b"}\n")
    assert not SMALL.endswith(b"\n\n")
    assert "α-store".encode() in SMALL


def test_file_holds_the_tables_as_ordered_pairs_and_the_log_as_records() -> None:
    doc = small_doc()
    assert list(doc) == ["aliases", "blocks", "canonical", "log", "schema", "threshold", "version"]
    assert doc["schema"] == "contextmesh.resolver"
    assert doc["version"] == 2
    assert doc["threshold"] == 0.9
    assert doc["canonical"][:2] == [["entity:pgvector", "pgvector"], ["entity:shard-map", "Shard Map"]]
    assert doc["aliases"][:2] == [["pgvector", "entity:pgvector"], ["pg vector", "entity:pgvector"]]
    assert doc["blocks"][2] == ["vect", ["entity:pgvector", "entity:vss"]]
    assert doc["log"][4] == {
        "entity_id": "entity:pgvector",
        "label": "pgvector",
        "mention": "pgvectr",
        "method": "near_miss",
        "normalized": "pgvectr",
        "reason": None,
        "score": 0.9333,
    }


def test_small_log_exercises_every_method_and_every_drop_reason() -> None:
    log = small_doc()["log"]
    assert {record["method"] for record in log} == set(METHODS)
    reasons = {record["reason"] for record in log if record["reason"] is not None}
    assert len(reasons) == 5
    assert any("too close to call" in reason for reason in reasons)


def test_learned_aliases_and_blocks_survive_a_round_trip(world: DemoWorld) -> None:
    original = world.result.resolver
    registered = {normalize(s) for e in world.corpus.entities for s in (e.name, *e.aliases)}
    learned = [surface for surface in original.aliases if surface not in registered]
    assert learned  # the demo's run taught the resolver forms no registration gave it
    restored = load_resolver(dump_resolver(original), world.result.graph)
    assert list(restored.aliases.items()) == list(original.aliases.items())
    assert {s: restored.aliases[s] for s in learned} == {s: original.aliases[s] for s in learned}
    assert list(restored.blocks.items()) == list(original.blocks.items())
    assert list(restored.canonical.items()) == list(original.canonical.items())
    assert restored.log == original.log
    assert restored.threshold == original.threshold


def test_restore_rebuilds_the_derived_indexes_exactly(world: DemoWorld) -> None:
    original = world.result.resolver
    restored = load_resolver(dump_resolver(original))
    assert list(restored._by_entity.items()) == list(original._by_entity.items())
    assert list(restored._squashed.items()) == list(original._squashed.items())


def test_restored_resolver_resolves_every_logged_mention_identically() -> None:
    world = build_world(2)  # its own world: resolving below teaches both resolvers new aliases
    original = world.result.resolver
    restored = load_resolver(dump_resolver(original), world.result.graph)
    mentions = list(dict.fromkeys(record.mention for record in original.log))
    probes = [*mentions, "preloadr", "key shardz", "runbook nightlyy rebuild", "SPT", "Keyed"]
    for mention in probes:
        assert restored.resolve(mention) == original.resolve(mention), mention
    for question in round_questions():
        assert restored.find_mentions(question) == original.find_mentions(question), question
    assert dump_resolver(restored) == dump_resolver(original)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(MENTIONS), st.text(alphabet="abcdeilmnoprstvxAPSV _-", max_size=14)), max_size=12
    ),
    st.lists(st.text(alphabet="abcdeilmnoprstvxAPSV _-", max_size=14), min_size=1, max_size=8),
)
def test_any_resolution_history_round_trips_and_resolves_alike(taught: list[str], probes: list[str]) -> None:
    original = small_resolver()
    for mention in taught:
        original.resolve(mention)
    data = dump_resolver(original)
    restored = load_resolver(data, small_graph())
    assert dump_resolver(restored) == data
    for probe in probes:
        assert restored.resolve(probe) == original.resolve(probe)
    assert dump_resolver(restored) == dump_resolver(original)


# -- why blocks are persisted ---------------------------------------------------------------------


def _blocks_from(surfaces: list[tuple[str, str]]) -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    for surface, entity_id in surfaces:
        for key in block_keys(surface):
            members = blocks.setdefault(key, [])
            if entity_id not in members:
                members.append(entity_id)
    return blocks


def _with_blocks(resolver: Resolver, blocks: dict[str, list[str]]) -> Resolver:
    return Resolver.restore(
        resolver.threshold, resolver.canonical.items(), resolver.aliases.items(), blocks.items(), resolver.log
    )


def test_blocks_rebuilt_from_canonical_and_aliases_differ_from_the_persisted_ones(world: DemoWorld) -> None:
    resolver = world.result.resolver
    rebuilt = _blocks_from(list(resolver.aliases.items()))
    assert rebuilt != resolver.blocks
    # Learned aliases never brought block keys; rebuilding invents them.
    invented = sorted(set(rebuilt) - set(resolver.blocks))
    assert invented == ["keye", "spt", "~keys", "~runb", "~spt"]
    # ... and a different candidate set changes what is logged for a mention the demo saw.
    persisted, guessed = resolver._decide("keyed"), _with_blocks(resolver, rebuilt)._decide("keyed")
    assert persisted.reason == "no entity shares a blocking key with it"
    assert guessed.reason == "no candidate alias pairs up with it word by word"


def test_blocks_rebuilt_from_canonical_names_alone_lose_keys_and_resolutions(world: DemoWorld) -> None:
    resolver = world.result.resolver
    rebuilt = _blocks_from([(normalize(name), entity_id) for entity_id, name in resolver.canonical.items()])
    assert len(resolver.blocks) == 138
    assert len(set(resolver.blocks) - set(rebuilt)) == 37  # registered aliases' keys are gone
    assert resolver._decide("preloadr").label == "Cache Warmer"
    assert _with_blocks(resolver, rebuilt)._decide("preloadr").entity_id is None


# -- the writer --------------------------------------------------------------------------------------


def test_writer_refuses_a_resolver_the_loader_would_refuse() -> None:
    resolver = small_resolver()
    resolver.threshold = 1  # an int: the file would not load back
    with pytest.raises(SnapshotError) as caught:
        dump_resolver(resolver)
    assert caught.value.path == "threshold"


def test_resolver_to_dict_and_resolver_from_dict_are_inverse() -> None:
    resolver = resolver_from_dict(small_doc())
    assert resolver_to_dict(resolver) == small_doc()


def test_a_resolver_that_registered_a_plural_of_an_irregular_verb_can_be_saved() -> None:
    resolver = Resolver()
    resolver.register("entity:led", "LEDs")
    assert dump_resolver(load_resolver(dump_resolver(resolver))) == dump_resolver(resolver)


# -- refusals ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One spoiled file: how to spoil it, where the loader must point and what it must say."""

    name: str
    path: str
    fragment: str
    change: Callable[[Doc], Any] | None = None  # edits a copy of the small document (returns a new root or None)
    raw: Callable[[bytes], bytes] | None = None  # or edits the file's bytes
    error: type[InputError] = SnapshotError
    as_dict: bool = False  # hand the changed document to resolver_from_dict (values JSON text cannot hold)


def _set(path: tuple[Any, ...], value: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        target: Any = doc
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return change


def _delete(path: tuple[Any, ...]) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        target: Any = doc
        for step in path[:-1]:
            target = target[step]
        del target[path[-1]]

    return change


def _append(field: str, entry: Any) -> Callable[[Doc], None]:
    return lambda doc: doc[field].append(entry)


def _replace(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    def raw(data: bytes) -> bytes:
        assert old in data
        return data.replace(old, new, 1)

    return raw


N_CANONICAL = len(ENTITIES)
N_ALIASES = len(small_doc()["aliases"])
N_BLOCKS = len(small_doc()["blocks"])
DROPPED = 5  # log[5]: "pgvectorzz", below the threshold
NEAR = 4  # log[4]: "pgvectr", a near miss

CASES: list[Case] = [
    # header and shape
    Case("not-an-object", "$", "an object is required", change=lambda doc: [doc]),
    Case("not-json", "$", "not strict JSON", raw=lambda data: data[:-3], error=CanonicalError),
    Case("wrong-schema", "schema", "reads 'contextmesh.resolver'", change=_set(("schema",), "contextmesh.graph")),
    Case("missing-schema", "schema", "reads 'contextmesh.resolver'", change=_delete(("schema",))),
    Case("v1-of-the-original-project", "version", "files of the original project are not supported",
         change=_set(("version",), 1)),
    Case("v3", "version", "reads only v2", change=_set(("version",), 3)),
    Case("version-as-string", "version", "the version is an integer", change=_set(("version",), "2")),
    Case("version-as-bool", "version", "the version is an integer", change=_set(("version",), True)),
    Case("missing-field", "log", "the field 'log' is required", change=_delete(("log",))),
    Case("missing-blocks", "blocks", "the field 'blocks' is required", change=_delete(("blocks",))),
    Case("unknown-field", "learned", "unknown field 'learned'", change=_set(("learned",), [])),
    Case("duplicate-top-level-key", "$", "the key 'threshold' twice",
         raw=_replace(b'"threshold":0.9', b'"threshold":0.9,"threshold":0.9'), error=CanonicalError),
    Case("duplicate-key-in-a-record", "log[0]", "the key 'mention' twice",
         raw=_replace(b'"mention":"pgvector"', b'"mention":"pgvector","mention":"pgvector"'), error=CanonicalError),
    # threshold
    Case("threshold-int", "threshold", "a float in (0, 1]", change=_set(("threshold",), 1)),
    Case("threshold-zero", "threshold", "a float in (0, 1]", change=_set(("threshold",), 0.0)),
    Case("threshold-above-one", "threshold", "a float in (0, 1]", change=_set(("threshold",), 1.5)),
    Case("threshold-null", "threshold", "a float in (0, 1]", change=_set(("threshold",), None)),
    Case("threshold-nan", "threshold", "a float in (0, 1]", change=_set(("threshold",), float("nan")), as_dict=True),
    # canonical
    Case("canonical-not-a-list", "canonical", "a list is required", change=_set(("canonical",), {})),
    Case("canonical-entry-not-a-pair", "canonical[0]", "each entry is a pair [entity_id, name]",
         change=_set(("canonical", 0), ["entity:pgvector"])),
    Case("canonical-empty-id", "canonical[0][0]", "non-empty string", change=_set(("canonical", 0, 0), "")),
    Case("canonical-name-not-a-string", "canonical[0][1]", "a string is required",
         change=_set(("canonical", 0, 1), 7)),
    Case("duplicate-canonical-id", f"canonical[{N_CANONICAL}][0]", "each entity is listed once",
         change=_append("canonical", ["entity:pgvector", "pgvector"])),
    Case("canonical-name-not-an-alias", "canonical[1][1]", "normal form 'shard mapper' has no alias",
         change=_set(("canonical", 1, 1), "Shard Mapper")),
    # aliases
    Case("alias-to-unknown-entity", "aliases[0][1]", "listed in 'canonical'",
         change=_set(("aliases", 0, 1), "entity:hnsw")),
    Case("duplicate-alias", f"aliases[{N_ALIASES}][0]", "a surface form means one entity",
         change=_append("aliases", ["pgvector", "entity:vss"])),
    Case("non-normalised-alias", "aliases[1][0]", "this one normalises to 'pg vector'",
         change=_set(("aliases", 1, 0), "PG Vector")),
    Case("plural-alias", "aliases[1][0]", "this one normalises to 'pg vector'",
         change=_set(("aliases", 1, 0), "pg vectors")),
    Case("empty-alias", "aliases[1][0]", "non-empty string", change=_set(("aliases", 1, 0), "")),
    Case("alias-entry-with-three-items", "aliases[0]", "each entry is a pair",
         change=_set(("aliases", 0), ["pgvector", "entity:pgvector", "registered"])),
    # blocks
    Case("block-with-unknown-entity", "blocks[0][1][0]", "listed in 'canonical'",
         change=_set(("blocks", 0, 1), ["entity:hnsw"])),
    Case("block-listing-an-entity-twice", "blocks[2][1][1]", "lists each entity once",
         change=_set(("blocks", 2, 1), ["entity:pgvector", "entity:pgvector"])),
    Case("duplicate-block-key", f"blocks[{N_BLOCKS}][0]", "each block key is listed once",
         change=_append("blocks", ["pgve", ["entity:pgvector"]])),
    Case("empty-block", "blocks[0][1]", "at least one entity", change=_set(("blocks", 0, 1), [])),
    Case("block-under-a-key-of-another-entity", "blocks[0][1][1]", "keys of its own aliases",
         change=_set(("blocks", 0, 1), ["entity:pgvector", "entity:vss"])),
    Case("block-members-not-a-list", "blocks[0][1]", "a list is required",
         change=_set(("blocks", 0, 1), "entity:pgvector")),
    # log records: shape and types
    Case("log-record-not-an-object", "log[0]", "an object is required", change=_set(("log", 0), ["pgvector"])),
    Case("record-missing-field", "log[0].reason", "the field 'reason' is required",
         change=_delete(("log", 0, "reason"))),
    Case("record-unknown-field", "log[0].learned", "unknown field 'learned'",
         change=_set(("log", 0, "learned"), True)),
    Case("mention-not-a-string", "log[0].mention", "a string is required", change=_set(("log", 0, "mention"), 1)),
    Case("int-score", "log[0].score", "the score is a float", change=_set(("log", 0, "score"), 1)),
    Case("bool-score", "log[0].score", "the score is a float", change=_set(("log", 0, "score"), True)),
    Case("score-above-one", "log[0].score", "in [0, 1]", change=_set(("log", 0, "score"), 1.5)),
    Case("nan-score-in-text", "$", "not strict JSON", raw=_replace(b'"score":0.9333', b'"score":NaN'),
         error=CanonicalError),
    Case("nan-score-in-data", f"log[{NEAR}].score", "the score is a float",
         change=_set(("log", NEAR, "score"), float("nan")), as_dict=True),
    Case("bad-method", "log[0].method", "one of alias, squashed", change=_set(("log", 0, "method"), "fuzzy")),
    Case("method-null", "log[0].method", "one of alias", change=_set(("log", 0, "method"), None)),
    # log records: content
    Case("normalized-not-the-mention-normalised", "log[1].normalized", "normalises to 'shardmap'",
         change=_set(("log", 1, "normalized"), "shard map")),
    Case("resolved-record-without-label", "log[0].label", "carries its entity's label",
         change=_set(("log", 0, "label"), None)),
    Case("resolved-record-without-entity", "log[0].entity_id", "a miss is 'dropped'",
         change=_set(("log", 0, "entity_id"), None)),
    Case("resolved-record-with-reason", "log[0].reason", "only a dropped record has a reason",
         change=_set(("log", 0, "reason"), "because")),
    Case("label-mismatch", "log[0].label", "'entity:pgvector' is 'pgvector'",
         change=_set(("log", 0, "label"), "HNSW")),
    Case("log-entity-unknown", "log[0].entity_id", "listed in 'canonical'",
         change=_set(("log", 0, "entity_id"), "entity:hnsw")),
    Case("alias-hit-the-table-does-not-hold", "log[0].entity_id", "an alias hit names the entity",
         change=lambda doc: doc["log"][0].update(entity_id="entity:vss", label="Vector Search Service")),
    Case("certain-method-scored-below-one", "log[1].score", "scores 1.0", change=_set(("log", 1, "score"), 0.5)),
    Case("near-miss-scored-zero", f"log[{NEAR}].score", "scored above 0", change=_set(("log", NEAR, "score"), 0.0)),
    Case("dropped-record-with-entity-id", f"log[{DROPPED}].entity_id", "a dropped record names no entity",
         change=_set(("log", DROPPED, "entity_id"), "entity:pgvector")),
    Case("dropped-record-with-label", f"log[{DROPPED}].label", "a dropped record carries no label",
         change=_set(("log", DROPPED, "label"), "pgvector")),
    Case("dropped-record-without-reason", f"log[{DROPPED}].reason", "says why",
         change=_set(("log", DROPPED, "reason"), None)),
    Case("dropped-record-with-empty-reason", f"log[{DROPPED}].reason", "says why",
         change=_set(("log", DROPPED, "reason"), "")),
    Case("dropped-record-with-score", f"log[{DROPPED}].score", "scores 0.0",
         change=_set(("log", DROPPED, "score"), 0.89)),
]  # fmt: skip


def _spoil(case: Case) -> Any:
    if case.raw is not None:
        return case.raw(SMALL)
    assert case.change is not None
    doc = copy.deepcopy(small_doc())
    changed = case.change(doc)
    return doc if changed is None else changed


def test_case_names_are_unique_and_there_are_enough_of_them() -> None:
    names = [case.name for case in CASES]
    assert len(names) == len(set(names)) >= 20


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_spoiled_file_is_refused_with_its_path(case: Case) -> None:
    spoiled = _spoil(case)
    with pytest.raises(case.error) as caught:
        if case.as_dict:
            resolver_from_dict(spoiled)
        elif isinstance(spoiled, bytes):
            load_resolver(spoiled)
        else:
            load_resolver(json.dumps(spoiled, ensure_ascii=False).encode())
    assert type(caught.value) is case.error
    assert caught.value.path == case.path
    assert case.fragment in str(caught.value)


def test_v1_refusal_says_it_is_the_original_projects_format() -> None:
    doc = small_doc()
    doc["version"] = 1
    with pytest.raises(SnapshotError, match="a file of the original ContextMesh project"):
        load_resolver(json.dumps(doc).encode())


# -- against the graph ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphCase:
    """A valid resolver file over a graph that does not hold what it names."""

    name: str
    data: Callable[[], bytes]
    graph: Callable[[], ContextGraph]
    path: str
    fragment: str


def _alpha_as_source() -> ContextGraph:
    graph = small_graph(skip="entity:alpha-store")
    graph.add_node("source", "α-store", id="entity:alpha-store", attrs={"origin": "x.md", "retrieved_at": "2024"})
    return graph


GRAPH_CASES = [
    GraphCase("entity-missing-from-the-graph", lambda: SMALL, lambda: small_graph(skip="entity:alpha-store"),
              "canonical[3][0]", "which the graph has no node for"),
    GraphCase("entity-is-not-an-entity-node", lambda: SMALL, _alpha_as_source,
              "canonical[3][0]", "holds as a 'source' node"),
    GraphCase("resolver-says-hnsw-graph-says-pgvector", lambda: dump_resolver(small_resolver("HNSW")), small_graph,
              "canonical[0][1]", "'HNSW' for 'entity:pgvector', but the graph's node is labelled 'pgvector'"),
    GraphCase("graph-relabelled-the-entity", lambda: SMALL, lambda: small_graph(shard_map="Shard Router"),
              "canonical[1][1]", "near-miss matching scores mentions against the name"),
]  # fmt: skip


@pytest.mark.parametrize("case", GRAPH_CASES, ids=[case.name for case in GRAPH_CASES])
def test_resolver_naming_what_the_graph_does_not_hold_is_refused(case: GraphCase) -> None:
    data = case.data()
    load_resolver(data)  # the file alone is valid: only the pairing is wrong
    with pytest.raises(SnapshotError) as caught:
        load_resolver(data, case.graph())
    assert caught.value.path == case.path
    assert case.fragment in str(caught.value)


def test_graph_may_hold_entities_the_resolver_does_not_name() -> None:
    graph = small_graph()
    graph.add_node("entity", "HNSW", id="entity:hnsw", attrs={"canonical": "HNSW", "aliases": []})
    assert dump_resolver(load_resolver(SMALL, graph)) == SMALL


# -- the spec page agrees with the code ---------------------------------------------------------------

SPEC = Path(__file__).resolve().parents[2] / "docs" / "formats" / "resolver-v2.md"


def test_the_spec_pages_example_is_the_writers_exact_bytes() -> None:
    resolver = Resolver()
    resolver.register("entity:pgvector-6db608", "pgvector", ["pg_vector"])
    resolver.register("entity:shard-map-f697d4", "Shard Map")
    for mention in ("pgvectr", "Shard Maps", "banana"):
        resolver.resolve(mention)
    example = SPEC.read_text(encoding="utf-8").split("```json\n", 1)[1].split("\n```", 1)[0]
    assert dump_resolver(resolver) == example.encode() + b"\n"
    assert dump_resolver(load_resolver(example.encode())) == example.encode() + b"\n"


def test_the_spec_pages_normal_forms_and_block_keys_are_the_codes() -> None:
    assert normalize("pg_vector") == "pg vector"
    assert normalize("Shard Maps") == "shard map"
    assert normalize("Builder's") == "builder"
    assert normalize("policies") == "policy"
    assert normalize("---") == ""
    assert block_keys("pg vector") == ["vect", "~pgve"]
    assert block_keys("ib") == []

"""RESOLVE: each of the five methods by name, each refusal with its reason, the log and the blocks."""

from __future__ import annotations

import copy

import pytest

from contextmesh.core.errors import IdentityError
from contextmesh.knowledge.resolve import MARGIN, THRESHOLD, WORD_FLOOR, Resolver, block_keys


@pytest.fixture
def resolver() -> Resolver:
    r = Resolver()
    r.register("entity:ib", "Index Builder", ["IB", "index-builder service"])
    r.register("entity:pg", "pgvector", ["pg_vector"])
    r.register("entity:qg", "Query Gateway")
    r.register("entity:vss", "Vector Search Service")
    r.register("entity:pr", "Partitioned Rebuild")
    r.register("entity:sm", "Shard Map")
    return r


# -- the five methods ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mention", "entity_id"),
    [
        ("Index Builder", "entity:ib"),
        ("index builders", "entity:ib"),  # normalised: plural folded
        ("Index-Builder's", "entity:ib"),  # normalised: separator split, possessive dropped
        ("IB", "entity:ib"),  # a registered alias
        ("pg_vector", "entity:pg"),  # a registered alias ("pg vector")
    ],
)
def test_a_normalised_alias_resolves_by_the_alias_method(resolver: Resolver, mention: str, entity_id: str) -> None:
    record = resolver.resolve(mention)
    assert (record.entity_id, record.method, record.score, record.reason) == (entity_id, "alias", 1.0, None)


def test_a_form_equal_to_one_alias_once_spaces_go_resolves_as_squashed() -> None:
    r = Resolver()
    r.register("entity:pg", "pgvector")
    for mention in ("pg_vector", "pg vector", "PG-Vector"):
        record = r.resolve(mention, learn=False)
        assert (record.entity_id, record.method) == ("entity:pg", "squashed"), mention


def test_an_upper_case_word_equal_to_one_names_initials_resolves_as_acronym(resolver: Resolver) -> None:
    record = resolver.resolve("QG")
    assert (record.entity_id, record.method, record.label) == ("entity:qg", "acronym", "Query Gateway")


def test_a_lower_case_acronym_is_not_an_acronym(resolver: Resolver) -> None:
    record = resolver.resolve("qg")
    assert record.entity_id is None
    assert record.method == "dropped"


def test_an_acronym_matching_two_names_is_refused() -> None:
    r = Resolver()
    r.register("entity:sm", "Shard Map")
    r.register("entity:ss", "Search Service")
    record = r.resolve("SM")
    assert (record.entity_id, record.method) == ("entity:sm", "acronym")
    record = r.resolve("SS")
    assert (record.entity_id, record.method) == ("entity:ss", "acronym")
    r.register("entity:sn", "Staging Node")
    r.register("entity:sn2", "Shard Node")
    assert r.resolve("SN").entity_id is None


def test_words_all_inside_one_entitys_name_resolve_by_containment(resolver: Resolver) -> None:
    record = resolver.resolve("search service")
    assert (record.entity_id, record.method, record.score) == ("entity:vss", "containment", 1.0)


def test_a_typo_resolves_as_a_near_miss_with_its_score(resolver: Resolver) -> None:
    record = resolver.resolve("Partitoned Rebuild")
    assert (record.entity_id, record.method) == ("entity:pr", "near_miss")
    assert THRESHOLD <= record.score < 1.0
    assert record.reason is None


# -- refusals -------------------------------------------------------------------------------------


def test_a_different_word_is_not_a_typo(resolver: Resolver) -> None:
    # "shard count" shares "shard" and a block with "Shard Map", but "count" is not "map".
    record = resolver.resolve("shard count")
    assert record.entity_id is None
    assert record.method == "dropped"
    assert record.reason == "no candidate alias pairs up with it word by word"


def test_a_similar_word_below_the_word_floor_is_not_a_typo(resolver: Resolver) -> None:
    # "mop" vs "map" shares the first letter but pairs below WORD_FLOOR.
    assert WORD_FLOOR > 0.67
    record = resolver.resolve("Shard Mop")
    assert record.entity_id is None
    assert record.reason == "no candidate alias pairs up with it word by word"


def test_words_whose_first_letters_differ_never_pair(resolver: Resolver) -> None:
    # "vector" shares the block "vect" with the alias "pg vector"; without the word pairing the
    # whole-form ratio of "vector" and "pgvector" (0.86) would clear the threshold.
    assert "vect" in block_keys("pg vector")
    record = resolver.resolve("vectors")
    assert record.entity_id is None
    assert record.reason == "no candidate alias pairs up with it word by word"


def test_two_entities_within_the_margin_are_too_close_to_call() -> None:
    r = Resolver()
    r.register("entity:loader", "Data Loader")
    r.register("entity:louder", "Data Louder")
    record = r.resolve("Data Lowder")
    assert record.entity_id is None
    assert record.method == "dropped"
    assert record.reason is not None
    assert "too close to call" in record.reason
    assert "'Data Loader'" in record.reason
    assert "'Data Louder'" in record.reason
    assert MARGIN > 0


def test_a_winner_clear_of_the_margin_is_not_too_close() -> None:
    r = Resolver()
    r.register("entity:loader", "Data Loader")
    r.register("entity:leader", "Data Lender")
    record = r.resolve("Data Loaders")
    assert (record.entity_id, record.method) == ("entity:loader", "alias")
    record = r.resolve("Data Laoder")
    assert (record.entity_id, record.method) == ("entity:loader", "near_miss")


def test_a_mention_sharing_no_block_is_dropped_without_comparison(resolver: Resolver) -> None:
    record = resolver.resolve("refund")
    assert record.entity_id is None
    assert record.reason == "no entity shares a blocking key with it"


def test_a_mention_with_no_words_is_dropped(resolver: Resolver) -> None:
    record = resolver.resolve("?!")
    assert record.entity_id is None
    assert record.reason == "has no words"


def test_a_best_candidate_below_the_threshold_is_dropped() -> None:
    r = Resolver(threshold=0.99)
    r.register("entity:pr", "Partitioned Rebuild")
    record = r.resolve("Partitoned Rebuild")
    assert record.entity_id is None
    assert record.reason is not None
    assert record.reason.startswith("best candidate 'Partitioned Rebuild' scored 0.97, below 0.99")


# -- learned aliases and blocks -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("mention", "method"),
    [
        ("PG-Vector", "squashed"),
        ("QG", "acronym"),
        ("search service", "containment"),
        ("Partitoned Rebuild", "near_miss"),
    ],
)
def test_methods_other_than_alias_learn_the_surface_form_without_adding_blocks(mention: str, method: str) -> None:
    r = Resolver()
    r.register("entity:pg", "pgvector")
    r.register("entity:qg", "Query Gateway")
    r.register("entity:vss", "Vector Search Service")
    r.register("entity:pr", "Partitioned Rebuild")
    blocks = copy.deepcopy(r.blocks)
    first = r.resolve(mention)
    assert first.method == method
    assert r.aliases[first.normalized] == first.entity_id
    assert r.blocks == blocks
    second = r.resolve(mention)
    assert (second.entity_id, second.method) == (first.entity_id, "alias")


def test_an_alias_hit_teaches_nothing(resolver: Resolver) -> None:
    aliases, blocks = dict(resolver.aliases), copy.deepcopy(resolver.blocks)
    assert resolver.resolve("Index Builders").method == "alias"
    assert resolver.aliases == aliases
    assert resolver.blocks == blocks


def test_learn_false_leaves_the_alias_table_alone(resolver: Resolver) -> None:
    aliases = dict(resolver.aliases)
    record = resolver.resolve("Partitoned Rebuild", learn=False)
    assert record.method == "near_miss"
    assert resolver.aliases == aliases


def test_a_dropped_mention_teaches_nothing(resolver: Resolver) -> None:
    aliases, blocks = dict(resolver.aliases), copy.deepcopy(resolver.blocks)
    resolver.resolve("shard count")
    resolver.resolve("refund")
    assert resolver.aliases == aliases
    assert resolver.blocks == blocks


# -- the log ------------------------------------------------------------------------------------


def test_every_resolve_call_logs_exactly_one_record(resolver: Resolver) -> None:
    mentions = ["Index Builder", "pg_vector", "QG", "search service", "Partitoned Rebuild", "shard count", "refund"]
    for count, mention in enumerate(mentions, start=1):
        record = resolver.resolve(mention)
        assert len(resolver.log) == count
        assert resolver.log[-1] is record
    assert [r.resolved for r in resolver.log] == [True, True, True, True, True, False, False]


def test_a_dropped_record_always_carries_a_reason(resolver: Resolver) -> None:
    for mention in ("shard count", "vectors", "refund", "?!"):
        record = resolver.resolve(mention)
        assert not record.resolved
        assert record.reason


# -- registration -------------------------------------------------------------------------------


def test_registering_a_surface_form_another_entity_owns_is_refused() -> None:
    r = Resolver()
    r.register("entity:acme", "Tenant Acme", ["Acme"])
    with pytest.raises(IdentityError, match="already resolves to 'entity:acme'"):
        r.register("entity:acme-corp", "Acme Corporation", ["acme"])
    assert r.aliases["acme"] == "entity:acme"


def test_registering_a_name_that_normalises_onto_another_entity_is_refused() -> None:
    r = Resolver()
    r.register("entity:sm", "Shard Map")
    with pytest.raises(IdentityError):
        r.register("entity:sm2", "shard-maps")


def test_an_entity_id_cannot_be_renamed() -> None:
    r = Resolver()
    r.register("entity:sm", "Shard Map")
    with pytest.raises(IdentityError, match="already registered as 'Shard Map'"):
        r.register("entity:sm", "Shard Table")
    r.register("entity:sm", "Shard Map", ["shard table"])  # same name: more aliases are fine
    assert r.resolve("shard table").entity_id == "entity:sm"


def test_a_refused_registration_leaves_no_trace() -> None:
    r = Resolver()
    r.register("entity:a", "Alpha", ["shared"])
    with pytest.raises(IdentityError):
        r.register("entity:b", "Bravo", ["shared"])
    assert "entity:b" not in r.canonical
    assert r.resolve("Bravo").entity_id is None


# -- mentions in running text -------------------------------------------------------------------


def test_find_mentions_takes_the_longest_resolving_n_gram_first() -> None:
    r = Resolver()
    r.register("entity:index", "Index")
    r.register("entity:ib", "Index Builder")
    r.register("entity:builder", "Builder")
    mentions, _ = r.find_mentions("Yesterday the Index Builder failed")
    assert [(m.start, m.end, m.record.entity_id) for m in mentions] == [(2, 4, "entity:ib")]


def test_find_mentions_drops_one_record_per_unresolved_content_word(resolver: Resolver) -> None:
    mentions, dropped = resolver.find_mentions("The Index Builder ran out of memory on the Query Gateway")
    assert [m.record.entity_id for m in mentions] == ["entity:ib", "entity:qg"]
    assert [m.record.mention for m in mentions] == ["Index Builder", "Query Gateway"]
    assert [r.mention for r in dropped] == ["ran", "memory"]
    assert all(not r.resolved and r.reason for r in dropped)


def test_find_mentions_logs_one_record_per_decision_it_keeps(resolver: Resolver) -> None:
    before = len(resolver.log)
    mentions, dropped = resolver.find_mentions("the Index Builder ran on pg_vector")
    assert len(resolver.log) - before == len(mentions) + len(dropped) == 3


def test_find_mentions_learns_like_resolve() -> None:
    r = Resolver()
    r.register("entity:pr", "Partitioned Rebuild")
    mentions, _ = r.find_mentions("the Partitoned Rebuild shipped")
    assert [m.record.method for m in mentions] == ["near_miss"]
    assert r.aliases["partitoned rebuild"] == "entity:pr"
    r2 = Resolver()
    r2.register("entity:pr", "Partitioned Rebuild")
    r2.find_mentions("the Partitoned Rebuild shipped", learn=False)
    assert "partitoned rebuild" not in r2.aliases

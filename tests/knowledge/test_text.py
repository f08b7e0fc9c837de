"""The shared tokenizer: stems, normalised surface forms, content words and token estimates."""

from __future__ import annotations

import pytest

from contextmesh.knowledge.text import STOPWORDS, content_stems, estimate_tokens, normalize, stem, words


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("Builder's", "builder"),
        ("Builder’s", "builder"),
        ("Acme's", "acme"),
        ("tenants'", "tenant"),
    ],
)
def test_stem_folds_case_and_drops_a_possessive(word: str, expected: str) -> None:
    assert stem(word) == expected


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("Maps", "map"),
        ("shards", "shard"),
        ("policies", "policy"),
        ("replicas", "replica"),
        ("ties", "tie"),  # too short for the -ies rule: only the s goes
    ],
)
def test_stem_drops_a_plain_plural(word: str, expected: str) -> None:
    assert stem(word) == expected


@pytest.mark.parametrize("word", ["class", "status", "analysis", "bus", "gas"])
def test_stem_leaves_words_that_only_look_plural(word: str) -> None:
    assert stem(word) == word


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("ran", "run"),
        ("Ran", "run"),
        ("broke", "break"),
        ("broken", "break"),
        ("grew", "grow"),
        ("held", "hold"),
        ("kept", "keep"),
        ("wrote", "write"),
        ("fell", "fall"),
        ("built", "build"),
    ],
)
def test_stem_folds_irregular_past_forms_to_the_base_verb(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_does_is_dropped_before_stemming_so_it_never_becomes_a_content_word() -> None:
    # stem() alone would turn "does" into "doe"; content_stems must drop it as a stop word first.
    assert stem("does") == "doe"
    assert content_stems("What does the builder do?") == ["builder"]
    assert "doe" not in content_stems("Does it? It does. DOES!")


def test_normalize_splits_hyphens_and_underscores_into_separate_stems() -> None:
    assert normalize("index-builder service") == "index builder service"
    assert normalize("pg_vector") == "pg vector"
    assert normalize("Index-Builder's") == "index builder"
    assert normalize("tenant__router--maps") == "tenant router map"


def test_normalize_joins_stems_with_single_spaces() -> None:
    assert normalize("  The   Shard\tMaps ") == "the shard map"
    assert normalize("") == ""
    assert normalize("?!") == ""


def test_words_keep_hyphenated_and_underscored_words_whole() -> None:
    assert words("The index-builder's pg_vector ran.") == ["The", "index-builder's", "pg_vector", "ran"]


def test_content_stems_drops_stop_words_and_keeps_order_and_repeats() -> None:
    assert content_stems("The Index Builder ran out of memory") == ["index", "builder", "run", "memory"]
    assert content_stems("maps and maps") == ["map", "map"]
    assert content_stems("the of and to was were") == []


def test_content_stems_drops_a_word_that_stems_into_a_stop_word() -> None:
    # "made" is a stop word; so is what an inflected word folds to ("Thems" → "them").
    assert "make" not in content_stems("the rule made it")
    assert all(token not in STOPWORDS for token in content_stems("Hers was theirs, Thems the rules."))


def test_content_stems_splits_separators_like_normalize() -> None:
    assert content_stems("index-builder_service") == ["index", "builder", "service"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("one", 1),
        ("one two", 3),
        ("one two three", 4),
        ("a b c d e", 6),  # 6.5 rounds half to even
        ("w " * 10, 13),
        ("index-builder's pg_vector ran.", 4),  # whitespace words, not tokenizer words
    ],
)
def test_estimate_tokens_is_whitespace_words_times_1_3_rounded(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_estimate_tokens_matches_the_written_rule_for_every_length() -> None:
    for count in range(200):
        text = "\n".join(["word"] * count)
        assert estimate_tokens(text) == round(count * 1.3)

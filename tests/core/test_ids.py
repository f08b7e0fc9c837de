"""Content-slug ids, edge ids, the auto-decision namespace and the registry key grammar."""

from __future__ import annotations

import hashlib

import pytest

from contextmesh.core.ids import AUTO_DECISION_PREFIX, MAX_KEY_LENGTH, edge_id, is_auto_decision_id, key_problem, slug


def sha1_6(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()[:6]


def body(slug_id: str) -> str:
    """The readable part between ``prefix:`` and ``-hash6``."""
    return slug_id.split(":", 1)[1].rsplit("-", 1)[0]


def test_slug_matches_the_original_projects_ids() -> None:
    assert slug("pgvector", "entity") == "entity:pgvector-6db608"


def test_slug_is_prefix_body_and_six_hex_of_sha1_over_the_text() -> None:
    text = "Password Hasher"
    assert slug(text, "entity") == f"entity:password-hasher-{sha1_6(text)}"


def test_slug_body_is_lower_case() -> None:
    assert body(slug("PgVector", "entity")) == "pgvector"


def test_slug_body_folds_each_run_of_other_characters_to_one_dash() -> None:
    assert body(slug("a, b!!  c__d/é e", "claim")) == "a-b-c-d-e"


def test_slug_body_has_no_leading_or_trailing_dash() -> None:
    assert body(slug("  --Hello, World!--  ", "claim")) == "hello-world"


def test_slug_body_is_cut_to_forty_characters() -> None:
    assert body(slug("a" * 50, "claim")) == "a" * 40
    assert body(slug("ab " * 30, "claim")) == ("ab-" * 14)[:40].rstrip("-")


def test_slug_body_does_not_end_in_a_dash_left_by_the_cut() -> None:
    text = "a" * 39 + " b"  # the 40th character of the folded text is a '-'
    assert body(slug(text, "claim")) == "a" * 39
    assert slug(text, "claim") == f"claim:{'a' * 39}-{sha1_6(text)}"


def test_slug_hashes_the_text_as_given_not_lower_cased() -> None:
    upper, lower = slug("PGVECTOR", "entity"), slug("pgvector", "entity")
    assert body(upper) == body(lower)
    assert upper != lower
    assert upper.endswith(sha1_6("PGVECTOR"))


def test_slug_is_a_pure_function() -> None:
    assert slug("same text", "claim") == slug("same text", "claim")
    assert slug("same text", "claim") != slug("same text", "source")


def test_edge_id_is_the_slug_body_then_the_endpoints_and_type_tails() -> None:
    # ADR 0021: the body of slug("a|cites|b"), then 16 hex of SHA-1("a"), 4 of "cites", 16 of "b".
    sha1 = lambda text: hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()  # noqa: E731
    body = slug("a|cites|b", "edge").rsplit("-", 1)[0]
    assert edge_id("a", "cites", "b") == f"{body}-{sha1('a')[:16]}{sha1('cites')[:4]}{sha1('b')[:16]}"
    assert edge_id("a", "cites", "b") == edge_id("a", "cites", "b")
    assert edge_id("a", "cites", "b").startswith("edge:")


def test_edge_id_depends_on_direction_and_type() -> None:
    ids = {edge_id("a", "cites", "b"), edge_id("b", "cites", "a"), edge_id("a", "supports", "b")}
    assert len(ids) == 3


@pytest.mark.parametrize(
    ("node_id", "expected"),
    [
        ("decision:auto:choose-hasher-1a2b3c", True),
        (AUTO_DECISION_PREFIX, True),
        ("decision:step-1", False),
        ("decision:autopilot-1a2b3c", False),
        ("decision:Auto:x", False),
        ("plan|fetch|v1", False),
        ("x-decision:auto:y", False),
    ],
)
def test_is_auto_decision_id_is_a_plain_prefix_test(node_id: str, expected: bool) -> None:
    assert is_auto_decision_id(node_id) is expected


def test_auto_decision_prefix_is_stable() -> None:
    assert AUTO_DECISION_PREFIX == "decision:auto:"


@pytest.mark.parametrize(
    "key",
    ["auth.hash.argon2.v1", "a", "demo/worker:fetch@2", "x" * MAX_KEY_LENGTH, "clé-unicode"],
)
def test_key_problem_accepts_valid_keys(key: str) -> None:
    assert key_problem(key) is None


@pytest.mark.parametrize(
    ("key", "word"),
    [
        ("", "empty"),
        ("auth hash", "whitespace"),
        ("auth\thash", "whitespace"),
        ("auth\u00a0hash", "whitespace"),
        ("auth\nhash", "whitespace"),
        ("auth\x00hash", "control"),
        ("auth\x7fhash", "control"),
        ("auth\u200bhash", "control"),  # zero-width space: category Cf, not whitespace
        ("auth\u202ehash", "control"),  # right-to-left override: Cf
    ],
    ids=["empty", "space", "tab", "nbsp", "newline", "nul", "del", "zero-width-space", "rtl-override"],
)
def test_key_problem_refuses_whitespace_control_and_empty(key: str, word: str) -> None:
    problem = key_problem(key)
    assert problem is not None
    assert word in problem


@pytest.mark.parametrize("key", [None, 1, b"auth.hash", ["auth"]], ids=["none", "int", "bytes", "list"])
def test_key_problem_refuses_non_text(key: object) -> None:
    problem = key_problem(key)
    assert problem is not None
    assert "text" in problem
    assert type(key).__name__ in problem


def test_key_problem_refuses_a_key_over_the_length_limit() -> None:
    problem = key_problem("x" * (MAX_KEY_LENGTH + 1))
    assert problem is not None
    assert str(MAX_KEY_LENGTH) in problem
    assert str(MAX_KEY_LENGTH + 1) in problem

"""EXTRACT's written rule: each numbered rule refuses its negative examples, and assertions pass."""

from __future__ import annotations

import pytest

from contextmesh.knowledge.extract import MIN_WORDS, drop_reason

NO_STOP = "does not end with a full stop"
QUESTION = "contains a question"
FILLER = "opens with a note-to-self or filler marker"
NO_VERB = "has no verb-like word"


# -- rule 1: ends with a full stop -------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Did the Index Builder run out of memory again last night?",
        "Should we page the on-call team for every failed rebuild?",
        "Rollout plan",
        "Owners for the Q4 items",
        "The Index Builder was restarted by the scheduler at midnight",
        "The rebuild finished early!",
        "",
    ],
)
def test_a_question_a_heading_or_a_fragment_without_a_full_stop_is_dropped(text: str) -> None:
    assert drop_reason(text) == NO_STOP


# -- rule 2: no question mark anywhere ---------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Why did it fail? Nobody on the team knows yet.",
        "The builder crashed (again?) during the nightly rebuild.",
    ],
)
def test_a_question_mark_anywhere_drops_the_span(text: str) -> None:
    assert drop_reason(text) == QUESTION


# -- rule 3: at least six words ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Thanks all.", 2),
        ("Action items.", 2),
        ("The rebuild failed again.", 4),
        ("The Index Builder ran out.", 5),
    ],
)
def test_fewer_than_six_words_is_dropped_with_the_count(text: str, count: int) -> None:
    assert drop_reason(text) == f"has {count} words, fewer than {MIN_WORDS}"


def test_six_words_is_enough() -> None:
    assert drop_reason("The Index Builder ran out again.") is None


# -- rule 4: no note-to-self or conversation filler --------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "TODO: add the storage growth chart.",
        "todo paste the latency graphs before the meeting.",
        "FIXME the rebuild script still uses the old bucket.",
        "TBD whether the replica moves in September.",
        "Thanks everyone for all the help with the rebuild.",
        "Thank you all for staying late during the incident.",
        "Hi team, the nightly rebuild has finished now.",
        "Hello all, the shard map was updated this morning.",
        "Ok so the planner reads tenant sizes every evening.",
        "Cheers, the compaction job finished without errors.",
        "Note to self: check the rebuild logs tomorrow morning.",
    ],
)
def test_a_note_to_self_or_filler_opening_is_dropped(text: str) -> None:
    assert drop_reason(text) == FILLER


def test_a_filler_word_inside_a_sentence_does_not_drop_it() -> None:
    assert drop_reason("The builder says hi to the scheduler every night.") is None
    # "Thankfully" merely starts with a filler marker's letters: the marker must be a whole word.
    assert drop_reason("Thankfully the rebuild finished before the morning traffic.") is None


# -- rule 5: a verb-like word ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Tenant Acme shard map memory budget.",
        "Nightly index rebuild memory limit review.",
        "Build pool node memory headroom target plan.",
    ],
)
def test_a_noun_string_with_a_full_stop_but_no_verb_is_dropped(text: str) -> None:
    assert drop_reason(text) == NO_VERB


# -- positive examples ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # irregular past forms carry the verb on their own
        "The index builder ran out of memory again.",
        "Tenant Acme grew sixfold in the second quarter.",
        "The old pod fell over during the nightly run.",
        # an opening instruction verb
        "Check the board before rerunning anything.",
        "Keep the previous index until the swap completes.",
        # regular inflections and common verbs
        "The Partitioned Rebuild splits each night into shards.",
        "The Shard Map is stored in the primary Postgres.",
        "Compaction removed deleted vectors from every shard.",
        "  Tenant identity was considered and then rejected.  ",
    ],
)
def test_a_span_that_asserts_something_becomes_a_claim(text: str) -> None:
    assert drop_reason(text) is None


def test_the_first_failing_rule_is_the_recorded_reason() -> None:
    # fails rules 1, 3 and 4: only the first is reported
    assert drop_reason("TODO fix?") == NO_STOP
    # fails rules 2, 3 and 5: rule 2 comes first
    assert drop_reason("Memory? Budget.") == QUESTION
    # fails rules 3 and 4: rule 3 comes first
    assert drop_reason("Thanks all.") == f"has 2 words, fewer than {MIN_WORDS}"
    # fails rules 4 and 5: rule 4 comes first
    assert drop_reason("Hi team memory budget review notes.") == FILLER

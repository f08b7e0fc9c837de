"""The sentence splitter on the cases that break naive splitters: abbreviations, numbers, quotes, lists."""

from __future__ import annotations

import pytest

from contextmesh.knowledge.sentences import split_sentences


def sentences(text: str, code: tuple[tuple[int, int], ...] = ()) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text, code)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # decimals, versions and units are not boundaries
        (
            "The tank holds 3.5 ML of water. We upgraded to v2.1 last week. It failed again.",
            ["The tank holds 3.5 ML of water.", "We upgraded to v2.1 last week.", "It failed again."],
        ),
        ("Python 3.11. It ships today.", ["Python 3.11.", "It ships today."]),
        ("Gain stays within 0.5 dB at 2.4 GHz. Fine.", ["Gain stays within 0.5 dB at 2.4 GHz.", "Fine."]),
        # abbreviations that never end a sentence
        (
            "Check the feed, e.g. the horn. Then stop, i.e. power down. Compare vs. last week.",
            ["Check the feed, e.g. the horn.", "Then stop, i.e. power down.", "Compare vs. last week."],
        ),
        (
            "Dr. Okafor and Prof. Lind signed it. Mr. Berg did not.",
            ["Dr. Okafor and Prof. Lind signed it.", "Mr. Berg did not."],
        ),
        ("It holds approx. 40 ML today.", ["It holds approx. 40 ML today."]),
        # abbreviations that end a sentence only before a function word
        (
            "Dr. Osei asked the U.S. distributor. We moved to the U.S. The plant opened later.",
            ["Dr. Osei asked the U.S. distributor.", "We moved to the U.S.", "The plant opened later."],
        ),
        (
            "She left at 9 a.m. The team stayed until 5 p.m. Monday.",
            ["She left at 9 a.m.", "The team stayed until 5 p.m. Monday."],
        ),
        (
            "Pumps, valves, etc. The rest waits. Pumps, valves etc. and more.",
            ["Pumps, valves, etc.", "The rest waits.", "Pumps, valves etc. and more."],
        ),
        ("St. Louis is far. We went to Main St. The end.", ["St. Louis is far.", "We went to Main St.", "The end."]),
        ("Plan B. Then it ran. J. R. Smith wrote it.", ["Plan B.", "Then it ran.", "J. R. Smith wrote it."]),
        # abbreviations before numbers
        (
            "See Fig. 3 and No. 7 in Jan. 2026. The answer was No. We left.",
            ["See Fig. 3 and No. 7 in Jan. 2026.", "The answer was No.", "We left."],
        ),
        # enumerators inside running text
        (
            "Steps: 1. Drain the tank. 2. Inspect the valve. Done.",
            ["Steps: 1. Drain the tank.", "2. Inspect the valve.", "Done."],
        ),
        ("The count rose in 2024. 40 pumps were replaced.", ["The count rose in 2024.", "40 pumps were replaced."]),
        # quotes and brackets
        (
            'He said "the pump failed." Then we left. "It broke," she said.',
            ['He said "the pump failed."', "Then we left.", '"It broke," she said.'],
        ),
        ('She wrote "see note 3." and left.', ['She wrote "see note 3." and left.']),
        ("It ended (see the runbook.) After that, fine.", ["It ended (see the runbook.)", "After that, fine."]),
        ('It stopped. "Why?" asked Dana.', ["It stopped.", '"Why?" asked Dana.']),
        # questions, exclamations, ellipses
        ("Really? yes. Wow! Next.", ["Really? yes.", "Wow!", "Next."]),
        ("We waited... and then it ran... The end.", ["We waited... and then it ran...", "The end."]),
        # names with a lower-case start still open a sentence
        ("The app crashed. iOS users complained.", ["The app crashed.", "iOS users complained."]),
        # no white space after the full stop: file names and addresses
        (
            "Edit config.yaml and see https://example.org/a.b today. Done.",
            ["Edit config.yaml and see https://example.org/a.b today.", "Done."],
        ),
        # a list item or fragment without a final full stop
        ("Replace the LNA on GS-2", ["Replace the LNA on GS-2"]),
        ("Two sentences. The second has no stop", ["Two sentences.", "The second has no stop"]),
        ("", []),
        ("   ", []),
    ],
)
def test_hard_cases(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_a_lower_case_identifier_in_a_code_span_opens_a_sentence() -> None:
    text = "It restarted. pump_schedule_v2 then ran."
    assert sentences(text) == [text]  # plain lower case: not a boundary
    start = text.index("pump")
    assert sentences(text, ((start, start + len("pump_schedule_v2")),)) == [
        "It restarted.",
        "pump_schedule_v2 then ran.",
    ]


def test_nothing_inside_a_code_span_is_a_boundary() -> None:
    text = "Run make test. Then done."
    assert sentences(text) == ["Run make test.", "Then done."]
    assert sentences(text, ((4, 14),)) == [text]


def test_offsets_point_into_the_text_and_trim_white_space() -> None:
    text = "  First one.   Second one.  "
    assert split_sentences(text) == [(2, 12), (15, 26)]


def test_a_long_run_of_candidate_boundaries_splits_every_one() -> None:
    text = "J. K. " * 20_000
    assert len(split_sentences(text)) == 1  # an initial before a word that is no function word never splits
    text = "Plan B. A. " * 10_000
    # "B." ends before the function word "A"; "A." (an initial) does not end before "Plan".
    assert [text[a:b] for a, b in split_sentences(text)][:3] == ["Plan B.", "A. Plan B.", "A. Plan B."]
    assert len(split_sentences(text)) == 10_001
    text = "It ran. " * 20_000
    assert len(split_sentences(text)) == 20_000

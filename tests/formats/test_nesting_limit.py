"""One nesting limit for every file, and refusals in document order (``contextmesh/core/canonical.py``).

Every format page states rule 1 of its parse step: arrays and objects nest at most 254 levels
(the top-level value is level 1), measured on the text before any recursive parser runs, and a
deeper file is refused at ``$`` with one message. 254 is the deepest the writer (orjson) can write,
so a file the loaders accept can always be written back. Problems of one kind are reported first in
document order.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import orjson
import pytest
from graph_file_cases import FIXTURE

from contextmesh.core.canonical import MAX_DEPTH, ensure_canonical, file_bytes, loads, nesting_depth, text_depth
from contextmesh.core.errors import CanonicalError
from contextmesh.formats.graph_file import dump_graph, load_graph


def _nested(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def test_the_limit_is_the_deepest_the_writer_can_write() -> None:
    assert MAX_DEPTH == 254
    orjson.dumps(_nested(MAX_DEPTH))
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(_nested(MAX_DEPTH + 1))


@pytest.mark.parametrize("levels", [1, 100, MAX_DEPTH])
@pytest.mark.parametrize("spaced", [False, True])
def test_text_at_or_below_the_limit_loads(levels: int, spaced: bool) -> None:
    gap = " " if spaced else ""
    text = ("[" + gap) * levels + "1" + (gap + "]") * levels
    assert nesting_depth(loads(text)) == levels


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 990, 1024, 1025, 100_000])
@pytest.mark.parametrize("spaced", [False, True])
def test_deeper_text_is_refused_at_the_root_without_recursion(levels: int, spaced: bool) -> None:
    # On today's main, 990 to 1,024 levels raised RecursionError from the strict parser and 1,024
    # compact levels were accepted.
    gap = " " if spaced else ""
    text = ("[" + gap) * levels + "1" + (gap + "]") * levels
    with pytest.raises(CanonicalError) as caught:
        loads(text)
    assert caught.value.path == "$"
    assert caught.value.found == f"arrays and objects nested {levels} deep"
    assert caught.value.rule == "a file nests arrays and objects at most 254 deep"


def test_depth_hidden_under_a_duplicate_key_is_seen() -> None:
    text = '{"a": ' + json.dumps(_nested(400)) + ', "a": 1}'
    with pytest.raises(CanonicalError) as caught:
        loads(text)
    assert caught.value.found == "arrays and objects nested 401 deep"


def test_brackets_inside_strings_and_escapes_do_not_count() -> None:
    assert text_depth(b'{"a\\"[[": ["]]]", {"b": "\\\\"}], "c": "{{{"}') == 3
    assert text_depth(b"") == 0
    assert text_depth(b"17") == 0


def test_the_scan_matches_the_parsed_depth() -> None:
    for value in ({}, [], [[], {"a": [{}]}], {"x": "[[[", "y": ['\\"[', [["]"]]]}, _nested(50)):
        assert text_depth(json.dumps(value).encode()) == nesting_depth(value)


def test_a_graph_file_nested_too_deep_in_attrs_is_refused_cleanly() -> None:
    # The graph half of the probe's finding: `session verify` printed a RecursionError for this.
    doc = json.loads(FIXTURE)
    doc["nodes"][0]["attrs"]["deep"] = "@deep@"
    data = json.dumps(doc, indent=1).replace('"@deep@"', "[\n" * 1000 + "1" + "\n]" * 1000).encode()
    with pytest.raises(CanonicalError) as caught:
        load_graph(data)
    assert caught.value.path == "$"
    assert caught.value.found == "arrays and objects nested 1004 deep"  # attrs lies at level 4


def test_a_graph_file_at_the_limit_loads_and_writes_back() -> None:
    # attrs lies at level 4 (document, nodes, node, attrs): 250 arrays inside it reach level 254.
    doc = json.loads(FIXTURE)
    doc["nodes"][0]["attrs"]["deep"] = _nested(MAX_DEPTH - 4)
    data = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    assert dump_graph(load_graph(data)) == data


def test_file_bytes_refuses_to_write_deeper_than_the_limit() -> None:
    with pytest.raises(CanonicalError) as caught:
        file_bytes({"a": _nested(MAX_DEPTH)})
    assert caught.value.found == "arrays and objects nested 255 deep"


def test_loads_reports_the_first_integer_beyond_the_safe_range_in_document_order() -> None:
    text = '{"a": [1, 9007199254740992], "b": {"c": -9007199254740993}, "d": 18446744073709551616}'
    with pytest.raises(CanonicalError) as caught:
        loads(text)
    assert caught.value.path == "a[1]"  # main reported "d", the last one


def test_ensure_canonical_reports_the_first_problem_in_document_order() -> None:
    value = {"a": [1, {"x": float("nan")}], "b": {1, 2}, "c": 2**60}
    with pytest.raises(CanonicalError) as caught:
        ensure_canonical(value)
    assert caught.value.path == "a[1].x"


def test_loads_leaves_the_recursion_limit_alone() -> None:
    before = sys.getrecursionlimit()
    with pytest.raises(CanonicalError):
        loads("[" * 5000 + "]" * 5000)
    assert sys.getrecursionlimit() == before

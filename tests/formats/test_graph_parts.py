"""A graph file in bounded parts (graph-v3.md section 13, G52-G57): one encoding, strict per part.

Before this change a graph file was one JSON document, and the 10⁶-node graph's (about 2.2 GB)
was refused by orjson; every test here that writes or reads parts failed then (no ``part_records``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from contextmesh.core.canonical import file_bytes, loads, sha256_hex
from contextmesh.core.errors import InputError
from contextmesh.formats import graph_parts
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.testing import generate_graph, plant_closure

RECORDS = 40


def _graph():  # type: ignore[no-untyped-def]
    graph = generate_graph(150, seed=11)
    plant_closure(graph, 12, seed=12)
    return graph


GRAPH = _graph()
WHOLE = dump_graph(GRAPH)
PARTED = dump_graph(GRAPH, part_records=RECORDS)


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def test_a_graph_longer_than_a_part_is_written_as_a_header_and_bounded_parts() -> None:
    lines = _lines(PARTED)
    header = loads(lines[0])
    nodes, edges, assumptions = len(GRAPH.nodes), len(GRAPH.edges), len(GRAPH.assumptions)
    assert header["parts"] == {
        "nodes": -(-nodes // RECORDS),
        "edges": -(-edges // RECORDS),
        "assumptions": -(-assumptions // RECORDS),
        "records": RECORDS,
        "layout": "columns",
    }
    assert len(lines) == 1 + sum(v for k, v in header["parts"].items() if k not in {"records", "layout"})
    parts = [loads(line) for line in lines[1:]]
    assert [len(p["nodes"]) for p in parts if "nodes" in p][:-1] == [RECORDS] * (header["parts"]["nodes"] - 1)
    assert _lines(WHOLE) == [WHOLE]  # the default part size holds this graph: one document, as before


def test_both_shapes_load_the_same_graph_and_each_round_trips() -> None:
    from_parts = load_graph(PARTED)
    assert dump_graph(from_parts) == WHOLE
    assert dump_graph(from_parts, part_records=RECORDS) == PARTED


def test_the_parted_bytes_are_the_same_across_hash_seeds() -> None:
    script = (
        "from contextmesh.formats.graph_file import dump_graph\n"
        "from contextmesh.testing import generate_graph, plant_closure\n"
        "from contextmesh.core.canonical import sha256_hex\n"
        "g = generate_graph(150, seed=11); plant_closure(g, 12, seed=12)\n"
        f"print(sha256_hex(dump_graph(g, part_records={RECORDS})))\n"
    )
    seen = set()
    for seed in ("0", "7", "31337"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        seen.add(done.stdout.strip())
    assert seen == {sha256_hex(PARTED)}


def _edit_line(index: int, change: Callable[[dict], None]) -> bytes:  # type: ignore[type-arg]
    lines = _lines(PARTED)
    document = loads(lines[index])
    change(document)
    lines[index] = file_bytes(document)
    return b"".join(lines)


def _header(change: Callable[[dict], None]) -> bytes:  # type: ignore[type-arg]
    return _edit_line(0, change)


CASES: list[tuple[str, Callable[[], bytes], str, str]] = [
    ("header-extra-field", lambda: _header(lambda h: h.update(extra=1)), "extra", "unknown"),
    ("parts-missing-records", lambda: _header(lambda h: h["parts"].pop("records")), "parts.records", ""),
    ("records-zero", lambda: _header(lambda h: h["parts"].update(records=0)), "parts.records", "G53"),
    ("records-too-many", lambda: _header(lambda h: h["parts"].update(records=10**7)), "parts.records", "G53"),
    ("count-negative", lambda: _header(lambda h: h["parts"].update(edges=-1)), "parts.edges", "G53"),
    ("one-part-too-few", lambda: _header(lambda h: h["parts"].update(assumptions=0)), "parts", "G54"),
    ("a-line-missing", lambda: b"".join(_lines(PARTED)[:-1]), "parts", "G54"),
    ("a-line-added", lambda: PARTED + _lines(PARTED)[-1], "parts", "G54"),
    ("trailing-bytes-without-a-newline", lambda: PARTED + b"{}", "part[", "G54"),
    ("no-final-newline", lambda: PARTED[:-1], "parts", "G54"),
    ("part-not-json", lambda: PARTED.replace(_lines(PARTED)[2], b"{nope\n"), "part[1]", "strict JSON"),
    ("part-not-an-object", lambda: PARTED.replace(_lines(PARTED)[2], b"[]\n"), "part[1]", "object"),
    ("part-of-the-wrong-list", lambda: _edit_line(1, lambda p: p.update(edges=p.pop("nodes"))), "part[0]", ""),
    ("part-records-not-an-array", lambda: _edit_line(1, lambda p: p.update(nodes={})), "part[0].nodes", "G57"),
    ("a-middle-part-short", lambda: _edit_line(1, lambda p: p["nodes"].pop()), "part[0].nodes", "G57"),
    ("a-last-part-empty", lambda: _edit_line(len(_lines(PARTED)) - 1, lambda p: p["assumptions"].clear()), "", "G57"),
    ("a-count-of-a-trillion-parts", lambda: _header(lambda h: h["parts"].update(nodes=10**12)), "parts", "G54"),
    ("fits-in-one-part", lambda: _header(lambda h: h["parts"].update(records=10**6)), "part[", "G5"),
    # Parts that parse but hold a bad record: the assembled object's rules, paths counted from the list's start.
    ("record-in-a-later-part", lambda: _edit_line(2, lambda p: p["nodes"][3].update(walks=-1)), "nodes[43].walks", ""),
]


@pytest.mark.parametrize(("name", "make", "path", "rule"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_parted_file_is_refused_with_one_line_naming_where(
    name: str, make: Callable[[], bytes], path: str, rule: str
) -> None:
    data = make()
    with pytest.raises(InputError) as caught:
        load_graph(data)
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.path.startswith(path), (caught.value.path, message)
    assert rule in message


def test_a_line_beyond_the_byte_bound_is_refused_before_it_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    longest = max(len(line) for line in _lines(PARTED)[1:])
    monkeypatch.setattr(graph_parts, "MAX_PART_BYTES", longest - 1)
    with pytest.raises(InputError) as caught:
        load_graph(PARTED)
    assert "G55" in str(caught.value) and caught.value.path.startswith("part[")


def test_a_pretty_printed_one_document_file_is_still_one_document(tmp_path: Path) -> None:
    import json

    pretty = json.dumps(loads(WHOLE), indent=1, sort_keys=True).encode() + b"\n"
    assert dump_graph(load_graph(pretty)) == WHOLE

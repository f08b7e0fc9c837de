"""Edge parts written as columns (graph-v3.md section 13.1, G58-G60; ADR 0034).

Before ADR 0034 a parted file's edge parts were arrays of records; every test here that reads a
column failed then (the header had no ``layout`` and an edge part was refused unless an array).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import InputError
from contextmesh.formats.graph_file import dump_graph, graph_to_dict, load_graph
from contextmesh.formats.graph_parts import graph_document
from contextmesh.testing import generate_graph, plant_closure

RECORDS = 40
GRAPH = generate_graph(150, seed=11)
plant_closure(GRAPH, 12, seed=12)
WHOLE = dump_graph(GRAPH)
PARTED = dump_graph(GRAPH, part_records=RECORDS)
LINES = PARTED.splitlines(keepends=True)
HEADER = loads(LINES[0])
FIRST_EDGES = 1 + HEADER["parts"]["nodes"]  # the line of the first edge part
NODES = len(GRAPH.nodes)


def _record_parts() -> bytes:
    """The same graph as a parted file written before ADR 0034: every part an array of records."""
    document = graph_to_dict(GRAPH)
    header = {k: v for k, v in document.items() if k not in {"nodes", "edges", "assumptions"}}
    header["parts"] = {k: v for k, v in HEADER["parts"].items() if k != "layout"}
    lines = [file_bytes(header)]
    for name in ("nodes", "edges", "assumptions"):
        items = document[name]
        lines += [file_bytes({name: items[at : at + RECORDS]}) for at in range(0, len(items), RECORDS)]
    return b"".join(lines)


def test_edge_parts_are_columns_naming_nodes_by_index() -> None:
    part = loads(LINES[FIRST_EDGES])["edges"]
    first = next(iter(GRAPH.edges.values()))
    node_ids = list(GRAPH.nodes)
    assert HEADER["parts"]["layout"] == "columns"
    assert part["id"][0] == first.id
    assert node_ids[part["src"][0]] == first.src and node_ids[part["dst"][0]] == first.dst
    assert all(len(column) == RECORDS for column in part.values())
    assert len(PARTED) < len(_record_parts())  # no keys and no endpoint ids per edge


def test_columns_and_records_describe_one_graph_and_each_round_trips() -> None:
    assert graph_document(PARTED) == graph_document(_record_parts())  # the same assembled object
    assert dump_graph(load_graph(PARTED), part_records=RECORDS) == PARTED
    from_records = load_graph(_record_parts())  # a file written before ADR 0034 still loads
    assert dump_graph(from_records) == WHOLE
    assert dump_graph(from_records, part_records=RECORDS) == PARTED  # and is written as columns next


def _edges(change: Callable[[dict[str, Any]], None], line: int = FIRST_EDGES) -> Callable[[], bytes]:
    def make() -> bytes:
        lines = list(LINES)
        part = loads(lines[line])
        change(part["edges"])
        lines[line] = file_bytes(part)
        return b"".join(lines)

    return make


def _header(change: Callable[[dict[str, Any]], None]) -> Callable[[], bytes]:
    def make() -> bytes:
        header = loads(LINES[0])
        change(header)
        return file_bytes(header) + b"".join(LINES[1:])

    return make


def _set(column: str, position: int, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda columns: columns[column].__setitem__(position, value)


K = FIRST_EDGES - 1  # part[K] is the first edge part
CASES: list[tuple[str, Callable[[], bytes], str, str]] = [
    ("layout-unknown", _header(lambda h: h["parts"].update(layout="rows")), "parts.layout", "G52"),
    ("layout-not-text", _header(lambda h: h["parts"].update(layout=1)), "parts.layout", "G52"),
    ("records-under-columns", _edges(lambda c: c.clear()), f"part[{K}].edges.id", "required"),
    ("a-column-missing", _edges(lambda c: c.pop("weight")), f"part[{K}].edges.weight", "required"),
    ("an-unknown-column", _edges(lambda c: c.update(colour=[])), f"part[{K}].edges.colour", "unknown"),
    ("a-column-not-an-array", _edges(lambda c: c.update(type="mentions")), f"part[{K}].edges.type", "G58"),
    ("a-column-short", _edges(lambda c: c["weight"].pop()), f"part[{K}].edges.weight", "G58"),
    ("all-columns-short", _edges(lambda c: [v.pop() for v in c.values()]), f"part[{K}].edges", "G57"),
    ("src-past-the-nodes", _edges(_set("src", 3, NODES)), f"part[{K}].edges.src[3]", "G59"),
    ("src-negative", _edges(_set("src", 0, -1)), f"part[{K}].edges.src[0]", "G59"),
    ("src-as-bool", _edges(_set("src", 2, True)), f"part[{K}].edges.src[2]", "G59"),
    ("src-as-an-id", _edges(_set("src", 1, "entity:x-000000")), f"part[{K}].edges.src[1]", "G59"),
    ("dst-as-float", _edges(_set("dst", 5, 1.0)), f"part[{K}].edges.dst[5]", "G59"),
    ("bound-as-an-id", _edges(_set("assumption_id", 7, "assumption:x")), f"part[{K}].edges.assumption_id[7]", "G59"),
    ("evidence-not-an-array", _edges(_set("evidence_ids", 4, 3)), f"part[{K}].edges.evidence_ids[4]", "G60"),
    (
        "evidence-past-the-nodes",
        _edges(_set("evidence_ids", 6, [0, NODES])),
        f"part[{K}].edges.evidence_ids[6][1]",
        "G60",
    ),
    # Checked columns stand for records, and every record rule applies at the record's path.
    ("weight-as-int", _edges(_set("weight", 5, 1), FIRST_EDGES + 1), f"edges[{RECORDS + 5}].weight", "float"),
    ("id-not-derived", _edges(_set("id", 9, "edge:x-" + "0" * 36)), "edges[9].id", "derived"),
    ("self-edge", _edges(lambda c: c["dst"].__setitem__(0, c["src"][0])), "edges[0]", "self edge"),
    ("type-unknown", _edges(_set("type", 2, "likes")), "edges[2]", "no such edge type"),
    ("evidence-twice", _edges(_set("evidence_ids", 3, [0, 0])), "edges[3].evidence_ids", "listed once"),
    ("bound-to-a-non-assumption", _edges(_set("assumption_id", 1, 0)), "edges[1].assumption_id", "names an assumption"),
    ("an-id-twice", _edges(lambda c: c["id"].__setitem__(1, c["id"][0])), "edges[1].id", ""),
]


@pytest.mark.parametrize(("name", "make", "path", "rule"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_edge_column_is_refused_with_one_line_naming_where(
    name: str, make: Callable[[], bytes], path: str, rule: str
) -> None:
    data = make()
    with pytest.raises(InputError) as caught:
        load_graph(data)
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.path == path, (caught.value.path, message)
    assert rule in message
    with pytest.raises(InputError) as again:  # the assembled object (a session's replay) refuses it too
        load_graph(file_bytes(graph_document(data)))
    assert again.value.path == path

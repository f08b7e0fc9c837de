"""The strict records of contextmesh/core/model.py, and the four pydantic traps its docstring closes."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from contextmesh.core.canonical import loads
from contextmesh.core.errors import CanonicalError
from contextmesh.core.model import AssumptionRecord, EdgeRecord, NodeRecord, Provenance, error_path, first_problem


class PlainStrict(BaseModel):
    """What pydantic's strict mode does on its own, without the model module's precautions."""

    model_config = ConfigDict(strict=True, extra="forbid")

    ratio: float = 0.5
    names: tuple[str, ...] = ()
    count: int = 0


def node_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "claim:x-123456",
        "type": "claim",
        "label": "x",
        "attrs": {},
        "provenance": {"source_id": "source:doc-abcdef"},
        "embedding": None,
        "build": 0,
        "walks": 0,
        "pruned": False,
        "invalidated": False,
    }
    data.update(changes)
    return data


def edge_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "edge:e-123456",
        "src": "a",
        "dst": "b",
        "type": "cites",
        "evidence_ids": [],
        "weight": 1.0,
        "build": 0,
        "assumption_id": None,
        "traversals": 0,
        "invalidated": False,
    }
    data.update(changes)
    return data


def assumption_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "assumption:a-123456",
        "statement": "a",
        "status": "active",
        "version": 1,
        "created_by": "agent",
        "created_at_build": 0,
        "evidence_ids": [],
        "supersedes": None,
        "superseded_by": None,
        "rejected_at_build": None,
    }
    data.update(changes)
    return data


def problem(model: type[BaseModel], data: dict[str, Any], prefix: str = "x") -> tuple[str, str, str]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return first_problem(prefix, caught.value)


def test_valid_records_validate() -> None:
    assert NodeRecord.model_validate(node_data()).live
    assert EdgeRecord.model_validate(edge_data()).live
    assert AssumptionRecord.model_validate(assumption_data()).status == "active"


# -- trap 1: int for float -------------------------------------------------------------------


def test_plain_strict_mode_turns_an_int_into_a_float() -> None:
    assert PlainStrict.model_validate({"ratio": 1}).ratio == 1.0  # the trap


def test_int_for_a_float_field_is_refused() -> None:
    path, found, rule = problem(EdgeRecord, edge_data(weight=1), "edges[0]")
    assert path == "edges[0].weight"
    assert found == "1"
    assert "float" in rule


def test_bool_for_a_float_field_is_refused() -> None:
    path, _, _ = problem(EdgeRecord, edge_data(weight=True))
    assert path == "x.weight"


def test_a_float_stays_a_float() -> None:
    assert type(EdgeRecord.model_validate(edge_data(weight=2.0)).weight) is float


# -- trap 2: NaN and infinity ----------------------------------------------------------------


def test_plain_strict_mode_accepts_nan() -> None:
    value = PlainStrict.model_validate({"ratio": float("nan")}).ratio
    assert math.isnan(value)  # the trap


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_infinity_are_refused(value: float) -> None:
    path, _, rule = problem(EdgeRecord, edge_data(weight=value))
    assert path == "x.weight"
    assert "finite" in rule


# -- trap 3: tuples in Python mode -----------------------------------------------------------


def test_plain_strict_tuple_refuses_a_list_in_python_mode() -> None:
    with pytest.raises(ValidationError) as caught:
        PlainStrict.model_validate({"names": ["a"]})
    assert caught.value.errors()[0]["type"] == "tuple_type"


def test_plain_strict_tuple_accepts_a_list_in_json_mode() -> None:
    assert PlainStrict.model_validate_json(b'{"names":["a"]}').names == ("a",)


def test_tuple_field_accepts_a_list_in_python_mode() -> None:
    assert Provenance.model_validate({"source_id": "s", "checks": ["a", "b"]}).checks == ("a", "b")
    assert EdgeRecord.model_validate(edge_data(evidence_ids=["evidence:e"])).evidence_ids == ("evidence:e",)
    assert Provenance.model_validate({"source_id": "s", "span": [0, 4]}).span == (0, 4)


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"source_id": "s", "checks": ["a", 1]}, "p.checks[1]"),
        ({"source_id": "s", "checks": [b"a"]}, "p.checks[0]"),
        ({"source_id": "s", "span": [0, "4"]}, "p.span[1]"),
        ({"source_id": "s", "span": [0.0, 4]}, "p.span[0]"),
    ],
    ids=["int-in-checks", "bytes-in-checks", "str-in-span", "float-in-span"],
)
def test_tuple_field_elements_stay_strict(data: dict[str, Any], path: str) -> None:
    assert problem(Provenance, data, "p")[0] == path


def test_span_must_be_a_pair() -> None:
    assert problem(Provenance, {"source_id": "s", "span": [0, 1, 2]}, "p")[0] == "p.span"


# -- trap 4: duplicate keys ------------------------------------------------------------------


DUPLICATED = b'{"ratio":0.5,"count":1,"count":2}'


def test_model_validate_json_keeps_the_last_duplicate_key() -> None:
    assert PlainStrict.model_validate_json(DUPLICATED).count == 2  # the trap


def test_canonical_loads_refuses_the_same_bytes() -> None:
    with pytest.raises(CanonicalError, match="'count' twice"):
        loads(DUPLICATED)


# -- strictness everywhere else --------------------------------------------------------------


def test_string_false_for_a_bool_is_refused() -> None:
    path, found, _ = problem(NodeRecord, node_data(pruned="false"), "nodes[0]")
    assert (path, found) == ("nodes[0].pruned", "'false'")


def test_int_for_a_bool_is_refused() -> None:
    assert problem(NodeRecord, node_data(invalidated=0))[0] == "x.invalidated"


def test_bool_for_an_int_is_refused() -> None:
    path, found, _ = problem(NodeRecord, node_data(build=True))
    assert (path, found) == ("x.build", "True")


def test_string_for_an_int_is_refused() -> None:
    assert problem(AssumptionRecord, assumption_data(version="1"))[0] == "x.version"


def test_negative_count_is_refused() -> None:
    assert problem(NodeRecord, node_data(walks=-1))[0] == "x.walks"


def test_unknown_field_is_refused() -> None:
    path, found, rule = problem(NodeRecord, node_data(colour="red"), "nodes[2]")
    assert path == "nodes[2].colour"
    assert found == "an unknown field 'colour'"
    assert "every field" in rule


def test_unknown_field_in_provenance_is_refused() -> None:
    provenance = {"source_id": "s", "page": 3}
    assert problem(NodeRecord, node_data(provenance=provenance), "nodes[0]")[0] == "nodes[0].provenance.page"


def test_missing_field_is_reported_as_nothing_found() -> None:
    data = node_data()
    del data["walks"]
    path, found, _ = problem(NodeRecord, data, "nodes[1]")
    assert (path, found) == ("nodes[1].walks", "nothing")


def test_unknown_assumption_status_is_refused() -> None:
    assert problem(AssumptionRecord, assumption_data(status="false"))[0] == "x.status"


def test_empty_id_is_refused() -> None:
    assert problem(NodeRecord, node_data(id=""))[0] == "x.id"


def test_provenance_needs_only_a_source_id() -> None:
    provenance = Provenance(source_id="source:doc-abcdef")
    assert (provenance.span, provenance.checks, provenance.recorded_at_build) == (None, (), 0)


# -- error paths -----------------------------------------------------------------------------


def test_first_problem_renders_nested_paths() -> None:
    provenance = {"source_id": "s", "span": [-1, 2]}
    path, found, _ = problem(NodeRecord, node_data(provenance=provenance), "nodes[3]")
    assert path == "nodes[3].provenance.span[0]"
    assert found == "-1"


def test_error_path_joins_names_with_dots_and_indexes_with_brackets() -> None:
    assert error_path("nodes[3]", ("provenance", "span", 0)) == "nodes[3].provenance.span[0]"
    assert error_path("edges", (2, "weight")) == "edges[2].weight"
    assert error_path("$", ()) == "$"

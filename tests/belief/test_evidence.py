"""Evidence intake: a raw observation stored under its content digest, with no verdict attached."""

from __future__ import annotations

import hashlib
import inspect
from typing import Any

import pytest
import rfc8785
from belief_graphs import add_claim, add_source, snapshot

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.evidence import MAX_BYTES, MAX_DEPTH, MAX_ITEMS, EvidenceIntakeError, submit
from contextmesh.core.errors import BeliefError
from contextmesh.core.graph import ContextGraph
from contextmesh.formats.graph_file import dump_graph, load_graph


class Intake:
    def __init__(self) -> None:
        self.graph = ContextGraph()
        self.source = add_source(self.graph, "nvd feed").id
        self.claim = add_claim(self.graph, "libfoo 1.2 is safe", self.source).id
        self.assumption = Assumptions(self.graph).assume("libfoo has no known CVE").id


@pytest.fixture
def intake() -> Intake:
    return Intake()


def nested(depth: int, leaf: Any) -> dict[str, Any]:
    """``depth`` nested objects; the innermost holds ``leaf`` under key ``k`` (or is ``{}``)."""
    value: dict[str, Any] = {} if leaf is None else {"k": leaf}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


def refused(intake: Intake, **kwargs: Any) -> EvidenceIntakeError:
    """Submit, expect a refusal, and check the graph's bytes did not move."""
    kwargs.setdefault("text", "CVE-2024-0001 affects libfoo 1.2")
    kwargs.setdefault("source_id", intake.source)
    before = snapshot(intake.graph)
    with pytest.raises(EvidenceIntakeError) as caught:
        submit(intake.graph, **kwargs)
    assert snapshot(intake.graph) == before
    return caught.value


# -- what a submission is -----------------------------------------------------------------------


def test_submit_stores_an_evidence_node_with_no_edges_and_no_verdict(intake: Intake) -> None:
    edges_before = dict(intake.graph.edges)
    result = submit(intake.graph, "CVE-2024-0001 affects libfoo 1.2", intake.source, external_id="CVE-2024-0001")
    assert result.created
    node = intake.graph.node(result.node.id)
    assert (node.type, node.label, node.attrs["kind"]) == (
        "evidence",
        "CVE-2024-0001 affects libfoo 1.2",
        "observation",
    )
    assert node.provenance is not None and node.provenance.source_id == intake.source
    assert intake.graph.degree(node.id) == 0
    assert intake.graph.edges == edges_before
    record = intake.graph.assumptions[intake.assumption]
    assert record.status == "active" and record.evidence_ids == ()
    assert intake.graph.is_live(intake.assumption) and intake.graph.is_live(intake.claim)


def test_submit_takes_no_target_edge_or_verdict() -> None:
    assert list(inspect.signature(submit).parameters) == ["graph", "text", "source_id", "external_id", "metadata"]


def test_an_intake_refusal_is_a_belief_error() -> None:
    assert issubclass(EvidenceIntakeError, BeliefError)


def test_the_id_is_evidence_colon_the_sha256_of_the_canonical_payload(intake: Intake) -> None:
    result = submit(intake.graph, "p99 is 80 ms", intake.source, external_id="run-7", metadata={"p99_ms": 80})
    payload = {"text": "p99 is 80 ms", "source_id": intake.source, "external_id": "run-7", "metadata": {"p99_ms": 80}}
    expected = hashlib.sha256(rfc8785.dumps(payload)).hexdigest()
    assert result.node.id == f"evidence:{expected}"
    assert len(expected) == 64 and all(c in "0123456789abcdef" for c in expected)


def test_a_different_external_id_or_metadata_is_different_evidence(intake: Intake) -> None:
    ids = {
        submit(intake.graph, "p99 is 80 ms", intake.source).node.id,
        submit(intake.graph, "p99 is 80 ms", intake.source, external_id="run-7").node.id,
        submit(intake.graph, "p99 is 80 ms", intake.source, metadata={"host": "a"}).node.id,
        submit(intake.graph, "p99 is 80 ms", intake.source, metadata={"host": "b"}).node.id,
    }
    assert len(ids) == 4


def test_replaying_the_same_payload_returns_the_same_node_and_writes_nothing(intake: Intake) -> None:
    first = submit(intake.graph, "p99 is 80 ms", intake.source, external_id="run-7", metadata={"p99_ms": 80})
    before = snapshot(intake.graph)
    again = submit(intake.graph, "p99 is 80 ms", intake.source, external_id="run-7", metadata={"p99_ms": 80})
    assert (again.node.id, again.created) == (first.node.id, False)
    assert snapshot(intake.graph) == before


def test_an_id_taken_by_different_content_is_refused(intake: Intake) -> None:
    payload = {"text": "p99 is 80 ms", "source_id": intake.source, "external_id": None, "metadata": {}}
    taken = "evidence:" + hashlib.sha256(rfc8785.dumps(payload)).hexdigest()
    intake.graph.add_node("evidence", "something else entirely", id=taken, attrs={"kind": "postmortem"})
    error = refused(intake, text="p99 is 80 ms")
    assert "different content" in str(error)


def test_the_evidence_node_round_trips_through_the_file_format(intake: Intake) -> None:
    result = submit(
        intake.graph,
        "ünïcode observation",
        intake.source,
        external_id="obs-1",
        metadata={"ratio": 0.25, "tags": ["a", "b"], "nested": {"ok": True, "none": None}},
    )
    data = dump_graph(intake.graph)
    loaded = load_graph(data)
    assert dump_graph(loaded) == data
    assert loaded.node(result.node.id) == result.node
    replay = submit(
        loaded,
        "ünïcode observation",
        intake.source,
        external_id="obs-1",
        metadata={"ratio": 0.25, "tags": ["a", "b"], "nested": {"ok": True, "none": None}},
    )
    assert (replay.node.id, replay.created) == (result.node.id, False)


def test_the_stored_metadata_is_detached_from_the_callers_object(intake: Intake) -> None:
    metadata: dict[str, Any] = {"hosts": ["a"]}
    result = submit(intake.graph, "seen on host a", intake.source, metadata=metadata)
    metadata["hosts"].append("b")
    metadata["extra"] = 1
    assert intake.graph.node(result.node.id).attrs["metadata"] == {"hosts": ["a"]}


# -- text ---------------------------------------------------------------------------------------


def test_text_of_exactly_64_kib_is_accepted(intake: Intake) -> None:
    assert MAX_BYTES == 65_536
    assert submit(intake.graph, "a" * MAX_BYTES, intake.source).created
    assert submit(intake.graph, "é" * (MAX_BYTES // 2), intake.source).created  # two bytes each


@pytest.mark.parametrize("text", ["a" * (65_536 + 1), "é" * (65_536 // 2) + "a"], ids=["ascii", "utf-8"])
def test_text_one_byte_over_64_kib_is_refused(intake: Intake, text: str) -> None:
    refused(intake, text=text)


@pytest.mark.parametrize("text", ["", "   \n\t", None, 42], ids=["empty", "blank", "none", "int"])
def test_empty_or_non_text_is_refused(intake: Intake, text: object) -> None:
    refused(intake, text=text)


@pytest.mark.parametrize("external_id", ["", "  ", 7], ids=["empty", "blank", "int"])
def test_a_blank_or_non_text_external_id_is_refused(intake: Intake, external_id: object) -> None:
    refused(intake, external_id=external_id)


# -- source -------------------------------------------------------------------------------------


def test_source_id_must_name_a_source_node(intake: Intake) -> None:
    refused(intake, source_id="source:nope-000000")
    refused(intake, source_id=intake.claim)
    refused(intake, source_id=intake.assumption)


# -- metadata limits ----------------------------------------------------------------------------


def test_metadata_nested_eight_deep_is_accepted(intake: Intake) -> None:
    assert MAX_DEPTH == 8
    assert submit(intake.graph, "deep", intake.source, metadata=nested(8, None)).created


def test_metadata_nested_eight_deep_holding_a_value_is_accepted(intake: Intake) -> None:
    assert submit(intake.graph, "deep", intake.source, metadata=nested(8, "leaf")).created


@pytest.mark.parametrize("leaf", [None, "leaf"], ids=["empty-innermost", "value-innermost"])
def test_metadata_nested_nine_deep_is_refused(intake: Intake, leaf: Any) -> None:
    assert "deeper" in str(refused(intake, metadata=nested(9, leaf)))


def test_metadata_with_1000_items_is_accepted(intake: Intake) -> None:
    assert MAX_ITEMS == 1000
    assert submit(intake.graph, "many", intake.source, metadata={f"k{i}": i for i in range(1000)}).created


def test_metadata_with_1001_items_is_refused(intake: Intake) -> None:
    assert "1000 items" in str(refused(intake, metadata={f"k{i}": i for i in range(1001)}))


@pytest.mark.parametrize(
    "metadata",
    [{"xs": tuple(range(1001))}, {"k": ((((((((((1,),),),),),),),),),)}],
    ids=["1001-items-in-a-tuple", "ten-deep-tuples"],
)
def test_tuples_cannot_smuggle_metadata_past_the_limits(intake: Intake, metadata: dict[str, Any]) -> None:
    refused(intake, metadata=metadata)


def test_metadata_serialising_to_exactly_64_kib_is_accepted_and_one_more_byte_is_refused(intake: Intake) -> None:
    overhead = len(rfc8785.dumps({"b": ""}))
    at_limit = {"b": "x" * (MAX_BYTES - overhead)}
    assert len(rfc8785.dumps(at_limit)) == MAX_BYTES
    assert submit(intake.graph, "big", intake.source, metadata=at_limit).created
    refused(intake, text="bigger", metadata={"b": "x" * (MAX_BYTES - overhead + 1)})


@pytest.mark.parametrize(
    "metadata",
    [
        {"x": float("nan")},
        {"x": float("inf")},
        {"x": {1, 2}},
        {1: "one"},
        {"x": {("a", "b"): 1}},
        {"x": b"bytes"},
        {"x": 2**60},
        ["not", "an", "object"],
        "text",
    ],
    ids=["nan", "inf", "set", "int-key", "tuple-key", "bytes", "huge-int", "list", "str"],
)
def test_metadata_that_is_not_strict_json_is_refused(intake: Intake, metadata: Any) -> None:
    refused(intake, metadata=metadata)

"""contextmesh/formats/openlineage.py: the demo loop's ledger as OpenLineage events, validated against the schema.

The schemas are the published ones, vendored under tests/data/openlineage (see its README), and
ContextMesh's own facet schema docs/formats/openlineage-facets-v1.json; formats (uuid, uri,
date-time) are checked, and no schema is fetched.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from contextmesh.core.errors import InputError
from contextmesh.demo.execute import Walkthrough, run_walkthrough
from contextmesh.formats.openlineage import openlineage_events
from contextmesh.formats.run_ledger import RunLedger

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "tests" / "data" / "openlineage"
FACETS = ROOT / "docs" / "formats" / "openlineage-facets-v1.json"
NAMESPACE = "contextmesh.session/2ff00f21-ef01-45ee-873a-75371bcbba39"
STARTED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FLOW_RUN = "0b6f8e7c-3f0e-4a55-9a57-8d8f3c1e2a01"
TASK_RUN = "5d1c9a40-7e2b-4f43-8f7e-0c9b1d2e3f40"


def _schema(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


REGISTRY = Registry().with_resources(
    (schema["$id"], Resource.from_contents(schema))
    for schema in map(_schema, [*sorted(SCHEMAS.glob("*.json")), FACETS])
)


def validator(ref: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": ref}, registry=REGISTRY, format_checker=Draft202012Validator.FORMAT_CHECKER)


DOCUMENT = validator("https://openlineage.io/spec/2-0-2/OpenLineage.json")
# The document's oneOf names no field when it fails; the RunEvent definition says which one.
RUN_EVENT = validator("https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent")


def check(event: dict[str, Any]) -> None:
    errors = sorted(RUN_EVENT.iter_errors(event), key=str) + sorted(DOCUMENT.iter_errors(event), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]
    for facet in event["run"]["facets"].values():  # each facet against the schema its _schemaURL names
        errors = list(validator(facet["_schemaURL"]).iter_errors(facet))
        assert not errors, [f"{facet['_schemaURL']} {list(e.absolute_path)}: {e.message}" for e in errors]


@pytest.fixture(scope="module")
def demo() -> Walkthrough:
    return run_walkthrough()


@pytest.fixture(scope="module")
def events(demo: Walkthrough) -> list[dict[str, Any]]:
    return openlineage_events(
        demo.runner.ledger, demo.runner.graph, plan=demo.runner.name, namespace=NAMESPACE, started_at=STARTED
    )


def test_the_format_checks_are_live() -> None:
    # Without the format packages the "uri" and "date-time" checks would pass anything silently.
    checker = Draft202012Validator.FORMAT_CHECKER
    assert not checker.conforms("not a uri", "uri")
    assert not checker.conforms("yesterday", "date-time")
    assert not checker.conforms("not-a-uuid", "uuid")


def test_every_event_validates_against_the_published_schema(events: list[dict[str, Any]]) -> None:
    assert events
    for event in events:
        check(event)


def test_a_start_and_a_complete_per_task_run_in_ledger_order(demo: Walkthrough, events: list[dict[str, Any]]) -> None:
    runs = [e for e in demo.runner.ledger.entries if e.event == "executed"]
    assert len(events) == 2 * len(runs) == 16
    for (start, end), entry in zip(zip(events[::2], events[1::2], strict=True), runs, strict=True):
        assert (start["eventType"], end["eventType"]) == ("START", "COMPLETE")
        assert start["run"]["runId"] == end["run"]["runId"]
        assert start["job"] == {"namespace": NAMESPACE, "name": f"secure-authentication.{entry.task}"}
        assert start["run"]["facets"]["contextmesh_ledger"]["seq"] == entry.seq
        assert start["eventTime"] < end["eventTime"]
    times = [event["eventTime"] for event in events]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert len({event["run"]["runId"] for event in events}) == 8


def test_datasets_are_the_entities_a_run_needs_and_produces(events: list[dict[str, Any]]) -> None:
    routes = next(e for e in events if e["job"]["name"].endswith(".routes"))
    assert [d["name"] for d in routes["outputs"]] == ["entity:login-route-5882ad", "entity:signup-route-021076"]
    assert "entity:password-hasher-605979" in [d["name"] for d in routes["inputs"]]  # produced by hashing
    assert "entity:token-signer-190273" in [d["name"] for d in routes["inputs"]]  # produced by tokens


def test_the_re_ran_tasks_carry_the_disproof_and_no_first_run_does(events: list[dict[str, Any]]) -> None:
    with_facet = {
        (e["job"]["name"].split(".")[1], e["run"]["facets"]["contextmesh_ledger"]["round"])
        for e in events
        if "contextmesh_disproof" in e["run"]["facets"]
    }
    assert with_facet == {("hashing", 3), ("routes", 3), ("rate_limit", 3)}
    hashing = next(e for e in events if "contextmesh_disproof" in e["run"]["facets"])
    facet = hashing["run"]["facets"]["contextmesh_disproof"]
    assert facet["rejectedAssumption"]["statement"] == "argon2-cffi has no open advisory"
    assert facet["evidence"]["id"].startswith("evidence:disproof-from-hashing")
    assert facet["auditor"] == "auth.audit.advisory.v1"
    assert "CVE-2026-9999" in facet["reason"]
    assert facet["fallenDecision"] == "decision:secure-authentication-hashing-v1-48f81c"
    assert facet["reasonChain"].startswith("assumption(argon2-cffi has no open advisory) <-depends_on- hashing")
    assert facet["disproofSeq"] == 11
    rate = [e for e in events if e["job"]["name"].endswith(".rate_limit")][-1]
    assert rate["run"]["facets"]["contextmesh_disproof"]["reasonChain"].count("<-depends_on-") == 3


def test_the_export_is_deterministic(demo: Walkthrough, events: list[dict[str, Any]]) -> None:
    again = openlineage_events(
        demo.runner.ledger, demo.runner.graph, plan=demo.runner.name, namespace=NAMESPACE, started_at=STARTED
    )
    assert again == events


def test_prefect_ids_become_the_run_id_and_the_parent_and_a_failure_is_a_fail(demo: Walkthrough) -> None:
    ledger = RunLedger.load(demo.runner.ledger.dump())
    ledger.record(
        "failed",
        round=4,
        task="tokens",
        key="auth.tokens.v1",
        detail="worker raised: RuntimeError: key vault unreachable",
        run={"flow_run_id": FLOW_RUN, "task_run_id": TASK_RUN},
    )
    events = openlineage_events(
        ledger, demo.runner.graph, plan="secure-authentication", namespace=NAMESPACE, started_at=STARTED
    )
    start, fail = events[-2:]
    for event in (start, fail):
        check(event)
    assert (start["eventType"], fail["eventType"]) == ("START", "FAIL")
    assert fail["run"]["runId"] == TASK_RUN
    assert fail["run"]["facets"]["parent"]["run"]["runId"] == FLOW_RUN
    assert fail["run"]["facets"]["parent"]["job"] == {"namespace": NAMESPACE, "name": "secure-authentication"}
    assert fail["run"]["facets"]["errorMessage"]["message"].endswith("key vault unreachable")
    assert "errorMessage" not in start["run"]["facets"]
    assert uuid.UUID(events[0]["run"]["runId"]).version == 5


def test_a_naive_start_time_is_refused(demo: Walkthrough) -> None:
    with pytest.raises(InputError) as caught:
        openlineage_events(
            demo.runner.ledger, demo.runner.graph, plan="p", namespace=NAMESPACE, started_at=datetime(2026, 3, 1)
        )
    assert caught.value.path == "started_at"


@pytest.mark.parametrize(
    ("spoil", "where"),
    [
        (lambda e: e.update(eventType="DONE"), "eventType"),
        (lambda e: e["run"].update(runId="run-7"), "runId"),
        (lambda e: e.update(eventTime="yesterday"), "eventTime"),
        (lambda e: e["run"]["facets"]["contextmesh_ledger"].update(digest="abc"), "digest"),
        (lambda e: e["run"]["facets"]["contextmesh_disproof"].pop("reasonChain"), "reasonChain"),
    ],
    ids=["event-type", "run-id", "event-time", "ledger-digest", "disproof-without-chain"],
)
def test_the_validation_refuses_a_spoiled_event(spoil: Any, where: str, events: list[dict[str, Any]]) -> None:
    event = json.loads(json.dumps(next(e for e in events if "contextmesh_disproof" in e["run"]["facets"])))
    spoil(event)
    with pytest.raises(AssertionError) as caught:
        check(event)
    assert where in str(caught.value)

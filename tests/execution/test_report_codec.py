"""The report codec: every round and recheck report comes back equal, and a persisted report that is
not exactly what the codec writes is refused with the path of the first problem."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from execution_helpers import demo_runner

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import SnapshotError
from contextmesh.demo.auth import ADVISORY_TEXT, DEFAULT_KEYS, publish
from contextmesh.demo.execute import REPAIR_GROUND
from contextmesh.execution.plan import RecheckReport, RoundReport
from contextmesh.execution.report_codec import (
    RECHECK_FIELDS,
    ROUND_FIELDS,
    recheck_report_from_dict,
    round_report_from_dict,
    to_dict,
)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[RoundReport, RecheckReport, RoundReport]:
    """The demo's three reports: round 1, the recheck that disproves argon2, the round after repair."""
    feed = Path(tmp_path_factory.mktemp("codec")) / "feed.json"
    runner = demo_runner(feed)
    first = runner.run()
    publish(feed, "argon2-cffi", ADVISORY_TEXT)
    recheck = runner.recheck()
    runner.repair("hashing", assumes=REPAIR_GROUND, worker_key=DEFAULT_KEYS["bcrypt"], produces=["password hasher"])
    return first, recheck, runner.run()


def test_every_report_of_the_demo_round_trips_equal(reports: tuple[RoundReport, RecheckReport, RoundReport]) -> None:
    first, recheck, third = reports
    assert recheck.invalidations and recheck.invalidations[0].preserved_ids  # the receipt has something to lose
    assert round_report_from_dict(to_dict(first)) == first
    assert recheck_report_from_dict(to_dict(recheck)) == recheck
    assert round_report_from_dict(to_dict(third)) == third
    assert list(to_dict(first)) == list(ROUND_FIELDS) and list(to_dict(recheck)) == list(RECHECK_FIELDS)


def test_a_report_round_trips_through_canonical_json_with_run_references() -> None:
    report = RoundReport(
        4,
        layers=[["a"], ["b", "c"]],
        executed=["a", "b"],
        cached=["d"],
        blocked={"e": "its ground fell"},
        failed={"c": "ValueError: no"},
        stale=[],
        runs={
            "a": {"flow_run_id": "f1", "task_run_id": "t1"},
            "b": {"flow_run_id": "f1", "task_run_id": None},
            "c": None,
        },
    )
    wire = loads(file_bytes(to_dict(report)))
    assert round_report_from_dict(wire) == report
    assert json.loads(json.dumps(to_dict(report))) == to_dict(report)


def test_the_written_data_shares_nothing_with_the_report(
    reports: tuple[RoundReport, RecheckReport, RoundReport],
) -> None:
    _, recheck, _ = reports
    before = copy.deepcopy(recheck)
    data = to_dict(recheck)
    data["audited"].append("x")
    data["invalidations"][0]["preserved_ids"].clear()
    assert recheck == before


def _broken(data: dict[str, Any], change: Any) -> dict[str, Any]:
    broken = copy.deepcopy(data)
    change(broken)
    return broken


@pytest.mark.parametrize(
    ("change", "path", "rule"),
    [
        (lambda d: d.pop("runs"), "report.runs", "the field 'runs' is required"),
        (lambda d: d.update(extra=1), "report.extra", "the format lists every field it allows"),
        (lambda d: d.update(round=True), "report.round", "a whole number"),
        (lambda d: d.update(round=2.0), "report.round", "a whole number"),
        (lambda d: d.update(round=-1), "report.round", "a whole number"),
        (lambda d: d["layers"].append("hashing"), "report.layers[3]", "a list is required"),
        (lambda d: d["executed"].append(7), "report.executed[5]", "text is required"),
        (lambda d: d.update(blocked={"x": None}), "report.blocked.x", "text is required"),
        (lambda d: d.update(runs={"a": "f1"}), "report.runs.a", "a run reference"),
        (lambda d: d.update(runs={"a": {"flow_run_id": 3}}), "report.runs.a.flow_run_id", "text or null"),
        (lambda d: d.update(invalidations={}), "report.invalidations", "a list is required"),
    ],
)
def test_a_round_report_that_is_not_what_the_codec_writes_is_refused_naming_the_place(
    reports: tuple[RoundReport, RecheckReport, RoundReport], change: Any, path: str, rule: str
) -> None:
    first, _, _ = reports
    with pytest.raises(SnapshotError, match=rule) as caught:
        round_report_from_dict(_broken(to_dict(first), change))
    assert caught.value.path == path


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d["invalidations"][0].pop("preserved_ids"), "report.invalidations[0].preserved_ids"),
        (lambda d: d["invalidations"][0].update(blast_radius=8), "report.invalidations[0].blast_radius"),
        (lambda d: d["invalidations"][0]["preserved_ids"].insert(3, None), "report.invalidations[0].preserved_ids[3]"),
        (lambda d: d["invalidations"][0].update(evidence_id=5), "report.invalidations[0].evidence_id"),
        (lambda d: d["invalidations"][0].update(invalidated=[]), "report.invalidations[0].invalidated"),
        (lambda d: d.update(audit_errors=[]), "report.audit_errors"),
    ],
)
def test_a_recheck_report_that_is_not_what_the_codec_writes_is_refused_naming_the_place(
    reports: tuple[RoundReport, RecheckReport, RoundReport], change: Any, path: str
) -> None:
    _, recheck, _ = reports
    with pytest.raises(SnapshotError) as caught:
        recheck_report_from_dict(_broken(to_dict(recheck), change))
    assert caught.value.path == path


def test_a_report_is_read_as_its_own_kind_only(reports: tuple[RoundReport, RecheckReport, RoundReport]) -> None:
    first = reports[0]
    with pytest.raises(SnapshotError) as caught:
        recheck_report_from_dict(to_dict(first), path="artifact.report")
    assert caught.value.path == "artifact.report.audited"
    with pytest.raises(SnapshotError, match="an object is required") as refused:
        round_report_from_dict([to_dict(first)])
    assert refused.value.path == "report"

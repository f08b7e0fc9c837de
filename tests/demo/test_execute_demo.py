"""The bundled execute walk-through, pinned: round 1, an advisory, a recheck, repair, round 3.

Pinned figures were computed once from ``run_walkthrough()`` and are byte-stable: every id is a
content slug and the in-process ledger carries no run ids or timestamps.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import rfc8785
from execution_helpers import demo_runner

from contextmesh.belief.evidence import submit
from contextmesh.core.canonical import file_bytes
from contextmesh.core.ids import slug
from contextmesh.demo.auth import read_feed
from contextmesh.demo.execute import Walkthrough, run_walkthrough

PLAN = "secure-authentication"
HASHING_V1 = "decision:secure-authentication-hashing-v1-48f81c"
ROUTES_V1 = "decision:secure-authentication-routes-v1-4677c3"
RATE_LIMIT_V1 = "decision:secure-authentication-rate-limit-v1-d56def"
ARGON2_GROUND = "assumption:argon2-cffi-has-no-open-advisory-58ddef"
GROUND = "assumption(argon2-cffi has no open advisory)"
HASHING = f"{GROUND} <-depends_on- hashing ({PLAN})"
ROUTES = f"{HASHING} <-depends_on- routes ({PLAN})"
RATE_LIMIT = f"{ROUTES} <-depends_on- rate_limit ({PLAN})"
FALLEN = {
    HASHING_V1: HASHING,
    ROUTES_V1: ROUTES,
    "entity:argon2-parameters-94e11c": f"{HASHING} -produces-> argon2 parameters",
    "entity:password-hasher-605979": f"{HASHING} -produces-> password hasher",
    RATE_LIMIT_V1: RATE_LIMIT,
    "entity:login-route-5882ad": f"{ROUTES} -produces-> login route",
    "entity:signup-route-021076": f"{ROUTES} -produces-> signup route",
    "entity:login-rate-limiter-c5323c": f"{RATE_LIMIT} -produces-> login rate limiter",
}
PRESERVED_DIGEST = "1227592844d6324bec50575ab7da7deab920ad8e33650221445d4343ec70fd60"
NODES, EDGES, LEDGER_ENTRIES = 31, 38, 29
# Re-pinned when ADR 0021 widened edge ids: the ledger's entries digest content that names edges.
LEDGER_HEAD = "e65ae834b5a37308cabf24686debef3a9d1b64025f2103981c680577a2f6f1b9"


@pytest.fixture(scope="module")
def walk(tmp_path_factory: pytest.TempPathFactory) -> Walkthrough:
    return run_walkthrough(feed=tmp_path_factory.mktemp("feed") / "advisories.json")


# -- the rounds -----------------------------------------------------------------------------------


def test_round_one_executes_all_five_tasks_in_three_layers(walk: Walkthrough) -> None:
    first = walk.first
    assert first.layers == [["schema", "hashing", "tokens"], ["routes"], ["rate_limit"]]
    assert (len(first.executed), len(first.cached)) == (5, 0)
    assert first.blocked == {} and first.failed == {}


def test_the_recheck_has_a_blast_radius_of_eight_and_preserves_fifteen(walk: Walkthrough) -> None:
    (report,) = walk.recheck.invalidations
    assert report.assumption_id == ARGON2_GROUND
    assert report.blast_radius == 8 and report.preserved_count == 15
    assert {nid: " ".join(chain) for nid, chain in report.invalidated.items()} == FALLEN
    labels = {walk.runner.graph.node(nid).label for nid in report.invalidated}
    assert labels == {
        "hashing (secure-authentication)",
        "routes (secure-authentication)",
        "rate_limit (secure-authentication)",
        "password hasher",
        "argon2 parameters",
        "signup route",
        "login route",
        "login rate limiter",
    }
    assert slug(f"{PLAN}|hashing|v1", "decision") == HASHING_V1
    assert walk.recheck.stale == ["hashing", "routes", "rate_limit"]


def test_round_three_executes_only_the_stale_closure_and_caches_the_rest(walk: Walkthrough) -> None:
    third = walk.third
    assert third.executed == ["hashing", "routes", "rate_limit"]
    assert third.cached == ["schema", "tokens"]
    assert third.layers == [["hashing"], ["routes"], ["rate_limit"]]
    assert third.blocked == {} and third.failed == {}
    assert walk.runner.tasks["hashing"].output["package"] == "bcrypt"
    assert walk.runner.tasks["routes"].output["hasher"] == "bcrypt"


def test_the_argon2_parameters_artefact_stays_invalidated(walk: Walkthrough) -> None:
    graph = walk.runner.graph
    assert graph.node("entity:argon2-parameters-94e11c").invalidated
    assert graph.is_live("entity:password-hasher-605979")
    assert walk.to_dict()["artefacts"]["gone"] == ["argon2 parameters"]


def test_node_edge_and_ledger_counts_are_pinned(walk: Walkthrough) -> None:
    runner = walk.runner
    assert (len(runner.graph), len(runner.graph.edges), len(runner.ledger)) == (NODES, EDGES, LEDGER_ENTRIES)
    assert Counter(e.event for e in runner.ledger.entries) == {
        "executed": 8,
        "audited": 9,
        "disproved": 1,
        "invalidated": 8,
        "repaired": 1,
        "cached": 2,
    }
    assert runner.ledger.head == LEDGER_HEAD


def test_the_ledger_verifies(walk: Walkthrough) -> None:
    assert walk.runner.ledger.verify()
    assert walk.to_dict()["ledger"] == {"entries": LEDGER_ENTRIES, "head": LEDGER_HEAD, "verified": True}


def test_the_lineage_shows_the_rejected_ground_and_its_replacement(walk: Walkthrough) -> None:
    assert [(r["statement"], r["status"], r["version"]) for r in walk.lineage] == [
        ("argon2-cffi has no open advisory", "rejected", 1),
        ("bcrypt has no open advisory", "active", 2),
    ]


# -- the receipt ----------------------------------------------------------------------------------


def test_the_receipt_read_off_the_ledger_alone_names_everything(walk: Walkthrough) -> None:
    (receipt,) = walk.runner.ledger.receipts()
    receipt = json.loads(json.dumps(receipt))  # plain data only: nothing here reaches back into the graph
    assert receipt["ground"] == {"assumption_id": ARGON2_GROUND, "statement": "argon2-cffi has no open advisory"}
    assert receipt["evidence_id"] == slug(
        "disproof from hashing: argon2-cffi has an open advisory — "
        "CVE-2026-9999: memory-hard parameters silently downgraded",
        "evidence",
    )
    assert receipt["auditor"] == "auth.audit.advisory.v1" and receipt["task"] == "hashing"
    assert "CVE-2026-9999" in receipt["reason"]
    assert receipt["blast_radius"] == 8
    assert {item["id"]: item["chain"] for item in receipt["invalidated"]} == FALLEN
    assert receipt["preserved_count"] == 15 == len(receipt["preserved"])
    assert receipt["preserved"] == sorted(receipt["preserved"])
    assert not set(receipt["preserved"]) & set(FALLEN)
    independent = hashlib.sha256(rfc8785.dumps(sorted(receipt["preserved"]))).hexdigest()
    assert receipt["preserved_digest"] == independent == PRESERVED_DIGEST
    assert len(receipt["invalidated_edges"]) == 8


# -- the auditor reads submitted evidence ---------------------------------------------------------


def test_the_advisory_auditor_disproves_from_submitted_evidence_and_cites_it(tmp_path: Path) -> None:
    feed = tmp_path / "empty-feed.json"
    runner = demo_runner(feed)
    runner.run()
    source = runner.graph.add_node(
        "source", "OSV advisory mirror", attrs={"origin": "osv.dev", "retrieved_at": None}
    ).id
    evidence = submit(
        runner.graph,
        "GHSA-0000-test: argon2-cffi silently lowers its memory cost",
        source,
        metadata={"kind": "advisory", "package": "argon2-cffi"},
    ).node.id
    report = runner.recheck()
    assert read_feed(feed) == []  # nothing came from the feed
    (invalidation,) = report.invalidations
    assert invalidation.evidence_id == evidence and invalidation.blast_radius == 8
    (receipt,) = runner.ledger.receipts()
    assert receipt["evidence_id"] == evidence
    assert "GHSA-0000-test" in receipt["reason"]
    assert runner.graph.find_edge(evidence, "contradicts", ARGON2_GROUND) is not None
    assert not [n for n in runner.graph.by_type("evidence") if n.attrs.get("kind") == "disproof"]
    assert report.stale == ["hashing", "routes", "rate_limit"]


def test_submitted_evidence_about_another_package_disproves_nothing(tmp_path: Path) -> None:
    runner = demo_runner(tmp_path / "feed.json")
    runner.run()
    submit(
        runner.graph,
        "an advisory for left-pad",
        runner.source_id,
        metadata={"kind": "advisory", "package": "left-pad"},
    )
    report = runner.recheck()
    assert report.invalidations == [] and report.stale == []


# -- the command line -----------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextmesh", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_execute_json_equals_the_in_process_walkthrough(walk: Walkthrough, tmp_path: Path) -> None:
    done = _cli("execute", "--executor", "in-process", "--json", "--feed", str(tmp_path / "feed.json"))
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)
    ours = json.loads(file_bytes(walk.to_dict()))
    assert theirs["rounds"][0]["layers"] == [["schema", "hashing", "tokens"], ["routes"], ["rate_limit"]]
    assert theirs["rounds"][1]["invalidations"][0]["blast_radius"] == 8
    assert theirs["rounds"][1]["invalidations"][0]["preserved_count"] == 15
    assert theirs["rounds"][2]["executed"] == ["hashing", "routes", "rate_limit"]
    assert theirs["rounds"][2]["cached"] == ["schema", "tokens"]
    assert (theirs["nodes"], theirs["edges"]) == (NODES, EDGES)
    assert theirs["ledger"] == {"entries": LEDGER_ENTRIES, "head": LEDGER_HEAD, "verified": True}
    assert theirs == ours


def test_the_advisory_command_publishes_and_withdraws_in_the_feed_file(tmp_path: Path) -> None:
    feed = tmp_path / "feeds" / "advisories.json"
    done = _cli("demo", "advisory", "publish", "argon2-cffi", "TEXT", "--feed", str(feed))
    assert done.returncode == 0, done.stderr
    assert read_feed(feed) == [{"package": "argon2-cffi", "text": "TEXT"}]
    assert json.loads(feed.read_bytes()) == {"advisories": [{"package": "argon2-cffi", "text": "TEXT"}]}
    done = _cli("demo", "advisory", "withdraw", "argon2-cffi", "--feed", str(feed), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"feed": str(feed), "advisories": [], "next": []}  # nothing serves it
    assert read_feed(feed) == []

"""The command line: pinned output, ``--json`` everywhere, clear refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contextmesh.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
MULTIHOP = "Did recall stay within half a point once HNSW was partitioned, or was there a loss?"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextmesh", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_multi_hop_answer_is_printed_exactly_as_pinned() -> None:
    result = run("ask", MULTIHOP)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (DATA / "ask_multihop.txt").read_text()


def test_ask_prints_hops_score_and_tokens_against_flat(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "What made the sharding rule wrong?"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Q: What made the sharding rule wrong?\nA: The sharding rule was wrong")
    assert "(1 hop, score " in out and " tokens against " in out and " flat)" in out
    assert "<-[mentions]- (claim)" in out


def test_dead_end_names_its_reason_and_what_it_tried(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "What is the refund policy for annual plans?"]) == 0
    out = capsys.readouterr().out
    assert "A: dead end — entity_unresolved" in out
    assert "no mention resolved to a canonical entity: 'refund', 'policy', 'annual', 'plans'" in out


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (["schema"], "edge_types"),
        (["ask", "What made the sharding rule wrong?"], "answer_id"),
        (["health", "--rounds", "1"], "signals"),
        (["invalidate", "--dry-run", "--rounds", "0"], "blast_radius"),
        (["demo", "--rounds", "1", "--executor", "in-process"], "build"),
    ],
)
def test_every_command_prints_one_json_document(args: list[str], key: str) -> None:
    result = run(*args, "--json")
    assert result.returncode == 0, result.stderr
    assert key in json.loads(result.stdout)


def test_demo_prints_stage_counts_tokens_and_the_break() -> None:
    result = run("demo", "--rounds", "2", "--executor", "in-process")  # the Prefect half: tests/demo
    assert result.returncode == 0, result.stderr
    for stage in ("CHUNK", "EXTRACT", "RESOLVE", "LINK", "EMBED", "PRUNE"):
        assert f"       {stage}" in result.stdout
    assert "TOKENS median path/flat" in result.stdout
    assert "THE GROUND MOVED" in result.stdout and "INVALIDATED (" in result.stdout
    assert "PRESERVED (" in result.stdout and "ASSUMPTION LINEAGE" in result.stdout


def test_invalidate_prints_chains_preserved_and_lineage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["invalidate", "--rounds", "0"]) == 0
    out = capsys.readouterr().out
    assert "rejected assumption: Shard count grows linearly with corpus size" in out
    assert "INVALIDATED (4)" in out
    assert "because: assumption(Shard count grows linearly with corpus size) <-depends_on- Rebuild the index" in out
    assert "v1 [rejected] Shard count grows linearly with corpus size" in out


def test_dry_run_reports_without_rejecting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["invalidate", "--dry-run", "--rounds", "0", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["blast_radius"] == 4 and data["evidence_id"] is None


def test_bad_date_is_refused_with_the_value_and_the_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "What made the sharding rule wrong?", "--as-of", "2026-13-01"]) == 2  # a usage error
    err = capsys.readouterr().err
    assert "'2026-13-01'" in err and "YYYY-MM-DD" in err


def test_unknown_policy_edge_type_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "What made the sharding rule wrong?", "--policy", "mentions,links_to"]) == 2
    err = capsys.readouterr().err
    assert "names 'links_to', which is not an edge type" in err and "derived_from" in err  # legal names listed


def test_negative_rounds_are_refused_by_the_parser() -> None:
    result = run("health", "--rounds", "-1")
    assert result.returncode == 2
    assert "negative" in result.stderr

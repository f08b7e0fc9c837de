"""``contextmesh ingest``: a folder into a session in one command, incrementally, byte-identical across processes.

Each test runs the command over a temporary copy of the container-terminal corpus or the water
corpus: through ``main()`` in the test's process (``run_main``), and in fresh interpreters under three
hash seeds (``run_cli``) where the test is about processes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import failure_document, one_line, run_cli, run_main

DATA = Path(__file__).resolve().parents[1] / "data"
TERMINAL = DATA / "documents" / "terminal" / "docs"
WATER = DATA / "corpora" / "water" / "docs"
CAPACITY = "plans/capacity-2026.md"


def _copy(tmp_path: Path, corpus: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(corpus, folder)
    return folder


def _graph_bytes(session: Path) -> bytes:
    """The graph file the session's current manifest names."""
    manifest = json.loads((session / "session.json").read_text())
    return (session / manifest["graph"]["name"]).read_bytes()


def test_one_command_ingests_a_folder_and_names_every_drop(tmp_path: Path) -> None:
    folder = _copy(tmp_path, TERMINAL)
    done = run_main("ingest", str(folder), "--session", str(tmp_path / "s"), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["created"] and data["generation"] == 1
    assert [d["status"] for d in data["documents"]] == ["new"] * 16
    text = run_main("ingest", str(folder), "--session", str(tmp_path / "t")).stdout
    for stage in data["stages"]:
        for drop in stage["drops"]:
            assert drop["item"] in text, drop  # the text report names every drop too


def test_unchanged_commits_nothing_and_a_revision_supersedes_one_claim(tmp_path: Path) -> None:
    folder, session = _copy(tmp_path, TERMINAL), tmp_path / "s"
    assert run_main("ingest", str(folder), "--session", str(session)).returncode == 0
    before = sorted(p.name for p in session.rglob("*"))
    again = run_main("ingest", str(folder), "--session", str(session))
    assert again.returncode == 0 and "nothing changed; nothing committed" in again.stdout
    assert sorted(p.name for p in session.rglob("*")) == before
    plan = folder / CAPACITY
    plan.write_text(plan.read_text().replace("sustain 58 moves", "sustain 61 moves"))
    dry = run_main("ingest", str(folder), "--session", str(session), "--dry-run")
    assert "would supersede: plans/capacity-2026.md: STS-04 and STS-07 together sustain 58" in dry.stdout
    assert sorted(p.name for p in session.rglob("*")) == before
    real = json.loads(run_main("ingest", str(folder), "--session", str(session), "--json").stdout)
    assert real["generation"] == 2 and len(real["superseded"]) == 1
    answer = run_main("ask", "How many moves per hour do STS-04 and STS-07 sustain?", "--session", str(session))
    assert "61 moves per hour" in answer.stdout and "58 moves" not in answer.stdout


@pytest.mark.parametrize("corpus", [TERMINAL, WATER], ids=["terminal", "water"])
def test_a_build_is_byte_identical_across_processes_and_hash_seeds(tmp_path: Path, corpus: Path) -> None:
    folder = _copy(tmp_path, corpus)
    graphs = []
    for seed in ("0", "1", "4242"):
        session = tmp_path / f"s{seed}"
        done = run_cli("ingest", str(folder), "--session", str(session), env={"PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr
        graphs.append(_graph_bytes(session))
    assert graphs[0] == graphs[1] == graphs[2]


def test_bad_input_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    missing = run_main("ingest", str(tmp_path / "nowhere"), "--session", str(tmp_path / "s"))
    assert missing.returncode != 0
    assert "nowhere' does not exist; the rule is a document file or a folder" in one_line(missing.stderr)
    assert not (tmp_path / "s").exists()
    folder = _copy(tmp_path, TERMINAL)
    (folder / "broken.md").write_bytes(b"---\ntitle: [unclosed\n---\nText here.\n")
    broken = run_main("ingest", str(folder), "--session", str(tmp_path / "s"), "--json")
    assert broken.returncode != 0
    assert failure_document(broken.stdout)["path"] is not None
    assert not (tmp_path / "s").exists()
    both = run_main("ingest", str(folder), "--suggest-entities", str(tmp_path / "e.json"), "--dry-run")
    assert "--suggest-entities" in one_line(both.stderr)


def test_suggest_entities_writes_an_editable_file_that_ingest_takes_back(tmp_path: Path) -> None:
    folder = _copy(tmp_path, TERMINAL)
    out = tmp_path / "entities.json"
    assert run_main("ingest", str(folder), "--suggest-entities", str(out)).returncode == 0
    names = [e["name"] for e in json.loads(out.read_text())["entities"]]
    assert "Harlow Point Container Terminal" in names and "STS-04" in names
    done = run_main("ingest", str(folder), "--session", str(tmp_path / "s"), "--entities", str(out), "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["new_entities"]) >= len(names)


def test_evidence_add_brings_its_document_as_a_source_and_a_revision_supersedes(tmp_path: Path) -> None:
    session = tmp_path / "s"
    assert run_main("session", "save", str(session), "--rounds", "0").returncode == 0
    document = tmp_path / "inc-7.md"
    document.write_text("---\ntitle: Incident 7\n---\nThe Token Service rejected every login for twelve minutes.\n")
    args = ("evidence", "add", "logins failed", "--session", str(session), "--document", str(document), "--json")
    first = json.loads(run_main(*args, "--name", "incidents/inc-7.md").stdout)
    assert (
        first["evidence_created"]
        and first["generation"] == 2
        and first["source_id"].startswith("source:incidents-inc-7")
    )
    replay = json.loads(run_main(*args, "--name", "incidents/inc-7.md").stdout)
    assert not replay["evidence_created"] and replay["generation"] == 2
    document.write_text(document.read_text().replace("twelve", "fourteen"))
    revised = json.loads(run_main(*args, "--name", "incidents/inc-7.md").stdout)
    assert revised["generation"] == 3 and len(revised["superseded"]) == 1
    neither = run_main("evidence", "add", "x", "--session", str(session))
    assert neither.returncode == 2 and "or --document FILE" in one_line(neither.stderr)

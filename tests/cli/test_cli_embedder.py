"""A project's embedder (``[project] embedder``, ``--embedder``; ADR 0031), through the CLI, in-process.

A project configured with ``model:DIR`` (the tiny BERT ``tests/knowledge/test_sentence_model.py``
builds; nothing is downloaded) builds its session, answers and ingests with that model, and its
session records which embedder made the vectors; a command that would embed with another one is
refused in one line (a JSON document under ``--json``) before anything is written. A bad setting is
one line naming the value, the file and key, and the rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import failure_document, one_line
from knowledge.test_sentence_model import HIDDEN, tiny_model
from test_cli_project import Cli, tree

from contextmesh.core import vectors
from contextmesh.project.project import load_project
from contextmesh.session.session import Session

QUESTION = "What does the Summary Step assume?"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cli:
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CONTEXTMESH_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    return Cli(capsys)


def _configure(root: Path, line: str) -> None:
    file = root / "contextmesh.toml"
    file.write_text(file.read_text().replace('documents = ["docs"]', f'documents = ["docs"]\n{line}'))


def _dimensions(session_dir: Path) -> set[int]:
    graph = Session.open_readonly(session_dir).graph
    return {len(vectors.decode(n.embedding)) for n in graph if n.embedding is not None}


def test_a_project_configured_with_a_model_builds_answers_and_ingests_with_it(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("init", "weekly")
    root = tmp_path / "weekly"
    tiny_model(root / "model")
    _configure(root, 'embedder = "model:model"')
    monkeypatch.chdir(root)

    answer = cli.json("ask", QUESTION)
    assert answer["dead_end"] is None and answer["path"]
    session_dir = root / ".contextmesh" / "session"
    assert _dimensions(session_dir) == {HIDDEN}  # every vector is the model's (the hashed default has 256)
    recorded = json.loads((session_dir / "embedder.json").read_text())
    assert recorded == {"embedder": f"model-model-{HIDDEN}", "spec": f"model:{root / 'model'}"}

    (root / "more").mkdir()
    (root / "more" / "rota.md").write_text("# Rota\n\nThe Summary Step runs every Monday before the Publish Step.\n")
    ingested = cli.json("ingest", "more", "--session", str(session_dir))
    assert ingested["wrote"] is True and ingested["new_claims"] >= 1
    assert _dimensions(session_dir) == {HIDDEN}  # the ingested claims too
    assert cli.json("ask", "When does the Summary Step run?")["dead_end"] is None
    assert cli.json("ask", QUESTION, "--as-of", "2030-01-01")["walk"]["question"] == QUESTION


def test_a_session_is_never_asked_or_ingested_with_another_embedder(cli: Cli, tmp_path: Path) -> None:
    tiny_model(tmp_path / "model")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "plan.md").write_text("# Plan\n\nThe Index Builder depends on the Shard Map.\n")
    session_dir = tmp_path / "s"
    made = cli.json("ingest", "docs", "--session", str(session_dir), "--embedder", "model:model")
    assert made["created"] is True and _dimensions(session_dir) == {HIDDEN}
    asked = ("ask", "What does the Index Builder depend on?", "--session", str(session_dir))
    assert cli.json(*asked, "--embedder", "model:model")["committed"] is True  # the same model: walked

    before = tree(session_dir)
    for argv, other in (
        (asked, "'hashed-512' (hashed)"),  # no option, no project: the hashed default
        ((*asked, "--as-of", "2030-01-01"), "'hashed-512' (hashed)"),
        (("ingest", "docs", "--session", str(session_dir), "--embedder", "hashed-64"), "'hashed-64' (hashed-64)"),
    ):
        _, err = cli(*argv, code=1)
        line = one_line(err)
        assert f"was built with embedder 'model-model-{HIDDEN}' (model:{tmp_path / 'model'})" in line, line
        assert f"this command embeds with {other}" in line and f"--embedder model:{tmp_path / 'model'}" in line
        out, _ = cli(*argv, "--json", code=1)
        document = failure_document(out)
        assert document["type"] == "EmbedderMismatchError" and document["path"] == str(session_dir / "embedder.json")
    assert tree(session_dir) == before  # a refused command wrote nothing

    # A session with no record (every session made before ADR 0031) is the hashed default's.
    plain = tmp_path / "plain"
    cli.json("ingest", "docs", "--session", str(plain))
    (plain / "embedder.json").unlink()
    _, err = cli(
        "ask", "What does the Index Builder depend on?", "--session", str(plain), "--embedder", "model:model", code=1
    )
    assert "was built with embedder 'hashed-512' (hashed), this command embeds with 'model-model-8'" in one_line(err)


def test_a_bad_embedder_setting_or_model_is_one_line_and_changes_nothing(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("init", "weekly")
    root = tmp_path / "weekly"
    monkeypatch.chdir(root)
    _configure(root, 'embedder = "hashed-0"')
    before = tree(root)
    _, err = cli("ask", QUESTION, code=1)
    assert one_line(err).startswith(f"contextmesh: {root / 'contextmesh.toml'}:project.embedder: 'hashed-0'; ")
    document = failure_document(cli("ask", QUESTION, "--json", code=1)[0])
    assert document["path"] == f"{root / 'contextmesh.toml'}:project.embedder"

    (root / "contextmesh.toml").write_text((root / "contextmesh.toml").read_text().replace("hashed-0", "model:model"))
    (root / "model").mkdir()  # a folder, but no model in it
    _, err = cli("ask", QUESTION, code=1)
    assert one_line(err) == (
        f"contextmesh: {root / 'model' / 'modules.json'}: no such file; "
        "a sentence-transformers model directory holds modules.json"
    )
    _, err = cli("ask", QUESTION, "--embedder", "hashed-", code=2)
    assert "'hashed-' is not an embedder; the rule is an embedder is hashed" in one_line(err)
    assert tree(root) == {**before, "contextmesh.toml": (root / "contextmesh.toml").read_bytes()}
    assert not (root / ".contextmesh").exists()  # no session was made by a refused command


def test_a_served_session_keeps_the_projects_embedder_across_a_reload(cli: Cli, tmp_path: Path) -> None:
    cli("init", "weekly")
    root = tmp_path / "weekly"
    tiny_model(root / "model")
    _configure(root, 'embedder = "model:model"')
    project = load_project(root)
    served = project.open_session(policy="never")  # as `contextmesh mcp` opens it
    assert served.walker.embedder is project.embedder() and served.embedder is project.embedder()
    other = load_project(root).open_session()
    other.ask(QUESTION)  # another writer commits a generation (every-ask)
    assert served.refresh() is True and served.generation == other.generation
    assert served.walker.embedder is project.embedder()  # the reload walks with the same model
    assert served.ask(QUESTION).dead_end is None

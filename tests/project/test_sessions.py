"""A project's session: made on first use, opened with the project's registry, or read with none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from contextmesh import ProjectError, init_project, load_project
from contextmesh.demo.saved import save_demo_session
from contextmesh.session.commit import latest_generation


def test_the_first_open_makes_the_session_from_the_documents_and_the_plan(tmp_path: Path) -> None:
    project = load_project(init_project(tmp_path / "p").root)
    assert not project.session.exists()  # type: ignore[union-attr]
    session = project.open_session()
    assert session.generation == 1 and latest_generation(project.session) == 1  # type: ignore[arg-type]
    assert session.runner is not None and session.runner.round == 0
    assert {n.attrs.get("origin") for n in session.graph.by_type("source")} == {
        "wiki:reports/weekly-howto",
        "wiki:finance/pricing",
        "plan:p",
    }
    assert session.flat is not None and session.walker.flat is session.flat
    assert project.open_session().generation == 1  # opened, not made again


def test_two_processes_opening_a_new_project_at_once_make_one_session(tmp_path: Path) -> None:
    root = init_project(tmp_path / "p").root
    code = f"from contextmesh import load_project\nprint(load_project({str(root)!r}).open_session().session_id)\n"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e.decode() for _, e in outs]
    assert len({o.decode().strip() for o, _ in outs}) == 1 and latest_generation(root / ".contextmesh" / "session") == 1


def test_a_session_whose_keys_the_project_cannot_resolve_is_read_with_no_registry(tmp_path: Path) -> None:
    demo_session = tmp_path / "demo"
    save_demo_session(demo_session, rounds=0, feed=tmp_path / "feed.json")
    project = load_project(init_project(tmp_path / "p").root)
    with pytest.raises(Exception, match="every key must be registered here"):
        project.open_session(demo_session)
    reader = project.open_readonly(demo_session)
    assert reader.read_only and reader.runner is not None and reader.runner.name == "secure-authentication"
    assert "auth.schema.v1" in project.unresolved_keys(reader) and len(project.unresolved_keys(reader)) == 6
    assert project.unresolved_keys(project.open_session()) == []


def test_a_project_with_no_session_of_its_own_asks_for_one(tmp_path: Path) -> None:
    root = init_project(tmp_path / "p").root
    toml = root / "contextmesh.toml"
    toml.write_text(toml.read_text().replace('session = ".contextmesh/session"', ""))
    with pytest.raises(ProjectError) as caught:
        load_project(root).open_session()
    assert caught.value.path.endswith(":project.session") and "--session DIR" in caught.value.rule


def test_a_broken_document_refuses_the_first_open_naming_it_and_leaves_no_session(tmp_path: Path) -> None:
    root = init_project(tmp_path / "p").root
    (root / "docs" / "bad.md").write_bytes(b"---\ntitle: never closed\n")
    with pytest.raises(Exception, match=r"docs/bad\.md"):
        load_project(root).open_session()
    assert not (root / ".contextmesh" / "session").exists()

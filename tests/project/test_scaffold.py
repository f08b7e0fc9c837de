"""``init_project`` writes a runnable project and never clobbers: it adds only what is missing."""

from __future__ import annotations

import json
import py_compile
from pathlib import Path

import pytest

from contextmesh import ProjectError, init_project, load_project
from contextmesh.project.scaffold import planned_files

EXPECTED = {
    "contextmesh.toml",
    "README.md",
    ".gitignore",
    "world.json",
    "weekly_report/__init__.py",
    "weekly_report/plan.py",
    "docs/weekly-report.md",
    "docs/pricing.md",
    "docs/entities.json",
    "flows/__init__.py",
    "flows/plan.py",
    "flows/recheck.py",
    "flows/repair.py",
}


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_a_new_folder_gets_a_project_that_loads_runs_and_audits_against_its_world(tmp_path: Path) -> None:
    made = init_project(tmp_path / "weekly-report")
    assert (made.name, made.module) == ("weekly-report", "weekly_report")
    assert listing(made.root) == EXPECTED == set(made.to_dict()["written"])
    for source in made.root.rglob("*.py"):
        py_compile.compile(str(source), doraise=True)
    project = load_project(made.root)
    assert project.name == "weekly-report" and project.session == made.root / ".contextmesh" / "session"
    assert project.documents == (made.root / "docs",) and project.deploy.prefix == "weekly-report"
    session = project.open_session()
    assert session.corpus == "project:weekly-report" and len(session.graph.by_type("source")) == 3  # 2 docs + plan
    first = session.apply(lambda s: s.runner.run())
    assert first.executed == ["load", "summarise", "publish"] and first.failed == {}
    world = made.root / "world.json"
    world.write_text(json.dumps({**json.loads(world.read_text()), "currency": "USD"}))
    recheck = session.apply(lambda s: s.runner.recheck())
    assert recheck.stale == ["summarise", "publish"]
    assert [r.statement for r in recheck.invalidations] == ["prices are in euros"]


def test_running_init_again_writes_nothing_and_a_partial_project_gets_only_what_it_lacks(tmp_path: Path) -> None:
    made = init_project(tmp_path / "p")
    assert init_project(tmp_path / "p").written == ()
    (made.root / "flows" / "repair.py").unlink()
    (made.root / "docs" / "pricing.md").unlink()
    again = init_project(tmp_path / "p")
    assert {str(p.relative_to(made.root)) for p in again.written} == {"flows/repair.py", "docs/pricing.md"}
    assert len(again.kept) == len(EXPECTED) - 2


def test_dot_entries_at_the_top_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "p" / ".git").mkdir(parents=True)
    (tmp_path / "p" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    made = init_project(tmp_path / "p")
    assert (made.root / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n" and len(made.written) == len(EXPECTED)


@pytest.mark.parametrize(
    ("prepare", "where", "found"),
    [
        (lambda root: (root / "notes.txt").write_text("mine"), "{root}", "it holds 'notes.txt'"),
        (lambda root: (root / "docs").mkdir() or (root / "docs" / "x.md").write_text("x"), "{root}", "'docs/x.md'"),
        (lambda root: (root / "world.json").write_text("{}"), "{root}/world.json", "differs from what `init` writes"),
        (lambda root: (root / "flows").write_text("a file"), "{root}", "it holds 'flows'"),
    ],
)
def test_anything_else_in_the_folder_is_refused_and_nothing_is_written(
    tmp_path: Path, prepare: object, where: str, found: str
) -> None:
    root = tmp_path / "p"
    root.mkdir()
    prepare(root)  # type: ignore[operator]
    before = listing(root)
    with pytest.raises(ProjectError) as caught:
        init_project(root, name="p")
    assert caught.value.path == where.format(root=root) and found in caught.value.found
    assert "never overwrites" in caught.value.rule
    assert listing(root) == before


def test_a_link_in_place_of_a_file_is_refused_without_reading_through_it(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    target = tmp_path / "elsewhere.json"
    target.write_bytes(planned_files("p", "p")[Path("world.json")])
    (root / "world.json").symlink_to(target)
    with pytest.raises(ProjectError, match=r"it holds 'world\.json'"):
        init_project(root, name="p")


def test_the_name_comes_from_the_folder_or_must_be_given(tmp_path: Path) -> None:
    assert init_project(tmp_path / "My Sales_Report").name == "my-sales-report"
    with pytest.raises(ProjectError) as caught:
        init_project(tmp_path / "___")
    assert caught.value.path == "--name" and "give one with --name NAME" in caught.value.rule
    with pytest.raises(ProjectError, match="a name is 1 to 63"):
        init_project(tmp_path / "q", name="Bad Name")
    assert not (tmp_path / "q").exists() and not (tmp_path / "___").exists()


@pytest.mark.parametrize(
    ("name", "module"), [("json", "json_project"), ("2fa", "project_2fa"), ("flows", "flows_project")]
)
def test_the_code_package_never_takes_an_installed_modules_name(tmp_path: Path, name: str, module: str) -> None:
    made = init_project(tmp_path / name)
    assert made.module == module
    assert load_project(made.root).registry().describe()["auditors"] == ["report.audit.world.v1"]

"""Every command on a user's project: found from the working directory or ``--project``, in-process.

``contextmesh init`` makes the project; the commands then find it (the nearest ``contextmesh.toml``
at or above the working directory, or ``--project DIR``) and load its own session with its own
registry — the user's keys, never the demo's. These run with ``--local`` (no Prefect); the same
commands on a real Prefect server are ``tests/orchestration/test_project_on_prefect.py``.

A bad project (a broken ``contextmesh.toml``, a plan attribute that is missing, a key the registry
does not hold, a project path that is a file) is one line on stderr naming the value, the file and
the rule — a JSON error document under ``--json`` — and changes nothing on disk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import failure_document, one_line
from session_helpers import build_demo_template, clone

from contextmesh.cli import main


class Cli:
    """``main(argv)`` in this process, its exit status, stdout and stderr."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *argv: str, code: int = 0) -> tuple[str, str]:
        status = main(list(argv))
        captured = self.capsys.readouterr()
        assert status == code, f"{argv}: exit {status}\nstdout: {captured.out}\nstderr: {captured.err}"
        return captured.out, captured.err

    def json(self, *argv: str) -> dict[str, Any]:
        out, _ = self(*argv, "--json")
        document = json.loads(out)
        assert isinstance(document, dict)
        return document


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cli:
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CONTEXTMESH_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    return Cli(capsys)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_command_works_on_a_project_found_from_the_working_directory(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = cli.json("init", "weekly")["project"]
    assert made["name"] == "weekly" and "weekly/plan.py" in made["written"]
    monkeypatch.chdir(tmp_path / "weekly" / "docs")  # found from a folder below the root, as git finds .git
    first = cli.json("run", "--local")
    assert first["executor"] == "in-process" and first["report"]["executed"] == ["load", "summarise", "publish"]
    assert first["project"]["name"] == "weekly" and first["project"]["bundled"] is False
    assert Path(first["session_dir"]) == tmp_path / "weekly" / ".contextmesh" / "session"

    world = tmp_path / "weekly" / "world.json"
    world.write_text(world.read_text().replace('"EUR"', '"USD"'))
    added = cli.json("evidence", "add", "Finance quotes every price in USD from June", "--source", "mail:finance/1")
    assert added["source_created"] is True and added["origin"] == "mail:finance/1"
    again = cli.json("evidence", "add", "Finance quotes every price in USD from June", "--source", "mail:finance/1")
    assert again["source_created"] is False and again["evidence_id"] == added["evidence_id"]

    out, _ = cli("recheck", "--local")  # the run's own report: what was disproved, why, and what fell
    assert "DISPROVED prices are in euros" in out and "auditor: prices are in USD, not EUR" in out
    assert (
        f"evidence: {added['evidence_id']}" in out
        and "now stale, waiting for repair or resume: summarise, publish" in out
    )
    rechecked = cli.json("recheck", "--local")  # the next one finds every remaining ground standing
    assert rechecked["report"]["audited"] == ["load"] and rechecked["report"]["invalidations"] == []
    assert set(rechecked["blocked"]) == {"summarise", "publish"}

    radius = cli.json("blast-radius", "orders export")  # part of exactly one live statement
    assert radius["status"] == "active" and radius["blast_radius"] >= 2
    assert any("load (weekly)" in fallen["chain"] for fallen in radius["invalidated"])
    assert cli.json("session", "verify")["generation"] == rechecked["generation"]  # blast-radius changed nothing

    repaired = cli.json(
        "repair",
        "summarise",
        "--worker-key",
        "report.summarise.usd.v1",
        "--assumes",
        "prices are in US dollars",
        "--local",
    )
    assert repaired["worker_key"] == "report.summarise.usd.v1" and repaired["states"]["summarise"] == "stale"
    resumed = cli.json("resume", "--local")
    assert resumed["report"]["executed"] == ["summarise", "publish"] and resumed["report"]["cached"] == ["load"]
    assert resumed["states"] == {"load": "done", "summarise": "done", "publish": "done"}

    answer = cli.json("ask", "What does the Summary Step assume?")
    assert answer["committed"] is True and "euros" in json.dumps(answer)
    assert cli.json("health")["nodes_live"] > 0
    shown = cli.json("session", "show")
    assert shown["plan"] == {"name": "weekly", "round": resumed["report"]["round"], "states": resumed["states"]}
    verified = cli.json("session", "verify")
    assert verified["ledger_verified"] is True and verified["generation"] == answer["generation"]
    exported = cli.json("export", "--out", str(tmp_path / "dash"))
    assert exported["source"]["kind"] == "session" and exported["source"]["plan"] == "weekly"


def test_project_names_a_project_from_anywhere_and_a_session_of_another_plan_is_read_but_not_run(
    cli: Cli, tmp_path: Path
) -> None:
    cli("init", "weekly")
    project = str(tmp_path / "weekly")
    assert cli.json("run", "--local", "--project", project)["report"]["executed"] == ["load", "summarise", "publish"]
    demo_session, _ = build_demo_template(tmp_path / "demo")
    other = clone(demo_session, tmp_path / "other")
    before = tree(other)
    # Shown and verified with no registry: this project's registry need not hold the demo's keys.
    assert cli.json("session", "show", str(other), "--project", project)["generation"] >= 1
    assert cli.json("session", "verify", str(other), "--project", project)["ledger_verified"] is True
    out, _err = cli("recheck", "--local", "--session", str(other), "--project", project, "--json", code=1)
    error = failure_document(out)
    assert "auth." in error["message"] and "registered" in error["message"], error
    assert tree(other) == before


def test_with_no_project_a_command_says_it_used_the_bundled_demo_and_one_that_needs_one_refuses(
    cli: Cli, tmp_path: Path
) -> None:
    out, err = cli("ask", "What made the sharding rule wrong?")
    assert err.splitlines()[0].startswith("contextmesh: no contextmesh.toml in ")
    assert "bundled demo" in err and "contextmesh init" in err and out.startswith("Q: ")
    out, err = cli("run", "--local", "--json", code=1)
    error = failure_document(out)
    assert error["type"] == "ProjectError" and "contextmesh init" in error["message"]
    assert one_line(err).startswith("contextmesh: ")
    assert not (tmp_path / ".contextmesh").exists()


def _break(kind: str, root: Path, module: str) -> str:
    """Break a fresh project one way; return what the error must name."""
    toml = root / "contextmesh.toml"
    plan = root / module / "plan.py"
    if kind == "not-toml":
        toml.write_text(toml.read_text() + "\n[project\n")
        return "not TOML"
    if kind == "unknown-key":
        toml.write_text(toml.read_text().replace("[settings]", 'sesion = "x"\n\n[settings]'))
        return "project.sesion"
    if kind == "missing-plan-attribute":
        toml.write_text(toml.read_text().replace(f"{module}.plan:declare", f"{module}.plan:nothere"))
        return "'nothere'"
    if kind == "unregistered-key":
        plan.write_text(plan.read_text().replace("worker_key=SUMMARISE,", 'worker_key="report.nope.v1",'))
        return "report.nope.v1"
    if kind == "registry-not-a-registry":
        toml.write_text(toml.read_text().replace(f"{module}.plan:build_registry", f"{module}.plan:ORDERS"))
        return "a dict"
    if kind == "key-is-no-import":
        # A key that names importable code is still only a key: looked up in the registry, never imported.
        plan.write_text(plan.read_text().replace("worker_key=SUMMARISE,", 'worker_key="os.system",'))
        return "os.system"
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind",
    [
        "not-toml",
        "unknown-key",
        "missing-plan-attribute",
        "unregistered-key",
        "registry-not-a-registry",
        "key-is-no-import",
    ],
)
def test_a_bad_project_is_one_line_naming_value_file_and_rule_and_changes_nothing(
    cli: Cli, tmp_path: Path, kind: str
) -> None:
    # The code's package is "weekly" unless a module of that name is already imported in this process.
    module = cli.json("init", "weekly")["project"]["module"]
    root = tmp_path / "weekly"
    named = _break(kind, root, module)
    before = tree(root)
    for command in (["run", "--local"], ["ask", "What does the Summary Step assume?"], ["session", "show"]):
        out, err = cli(*command, "--project", str(root), code=1)
        line = one_line(err)
        assert named in line and "contextmesh.toml" in line, line
        assert "; " in line, f"no rule after the value: {line}"
        out, err = cli(*command, "--project", str(root), "--json", code=1)
        error = failure_document(out)
        assert error["type"] == "ProjectError" and "contextmesh.toml" in str(error["path"]), error
        assert named in error["message"]
    assert tree(root) == before, "a refused project changed on disk"
    assert not (root / ".contextmesh").exists()


def test_a_project_path_that_is_a_file_is_a_usage_error_naming_it(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a project\n")
    for command in (["run"], ["recheck"], ["evidence", "add", "x", "--source", "y"], ["init"]):
        argv = [*command, str(tmp_path / "a-file")] if command == ["init"] else [*command, "--project", "a-file"]
        out, err = cli(*argv, "--json", code=2)
        error = failure_document(out)
        assert error["type"] == "UsageError" and "a-file" in error["message"] and "regular file" in error["message"]
    out, err = cli("run", "--project", str(tmp_path), code=1)  # a folder with no contextmesh.toml
    assert "no contextmesh.toml" in one_line(err) and "contextmesh init" in err
    assert (tmp_path / "a-file").read_text() == "not a project\n"

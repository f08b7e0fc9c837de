"""A project's ``[project] extension`` adds its own commands to ``contextmesh`` (ADR 0023).

The bundled demo's commands come in this way; so do a user's. A project made by ``contextmesh
init`` gets an extension module registering one command, which uses the command line's kit (an
option type, a usage error, a renderer); run from inside the project the command is there, checks
its value like any option, and prints. A command word another command already has is refused in
one line naming the project's file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextmesh.cli import main
from contextmesh.project.scaffold import init_project

EXTENSION = """
from contextmesh import RoundReport


class Extension:
    def register(self, commands, kit):
        self.kit = kit
        sub = commands.add_parser("{word}", help="a command of this project's own")
        sub.add_argument("--rounds", type=kit.rounds, default=1)
        sub.set_defaults(handler=self.handle)

    def handle(self, args):
        report = RoundReport(args.rounds, executed=["load"], cached=["publish"])
        return {{"round": args.rounds}}, self.kit.render("round", report)


EXTENSION = Extension()
"""


def _project(root: Path, word: str) -> Path:
    made = init_project(root / "weekly")
    (made.root / made.module / "own_commands.py").write_text(EXTENSION.format(word=word), encoding="utf-8")
    toml = made.root / "contextmesh.toml"
    text = toml.read_text(encoding="utf-8")
    reference = f'extension = "{made.module}.own_commands:EXTENSION"'
    toml.write_text(text.replace("[project]\n", f"[project]\n{reference}\n", 1), encoding="utf-8")
    return made.root


def test_a_projects_extension_adds_its_own_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(_project(tmp_path, "weekly-digest"))
    assert main(["weekly-digest", "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ROUND 2 · 1 executed, 1 cached") and "cached publish" in out
    assert main(["weekly-digest", "--rounds", "-1", "--json"]) == 2  # the kit's option type refused it
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["type"] == "UsageError" and "--rounds" in error["message"]


def test_the_command_is_not_there_outside_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, "weekly-digest")
    monkeypatch.chdir(tmp_path)
    assert main(["weekly-digest"]) == 2


def test_a_command_word_already_taken_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = _project(tmp_path, "ask")
    monkeypatch.chdir(directory)
    assert main(["schema"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "contextmesh.toml:project.extension" in err and "ask" in err

"""contextmesh.toml is read strictly: every refusal names the file and the key, and says the rule."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from contextmesh.project.config import ProjectError, load_config

GOOD = """
[project]
name = "weekly-report"
registry = "weekly.plan:build_registry"
plan = "weekly.plan:declare"
session = ".contextmesh/session"
documents = ["docs", "notes/more"]
flat = "weekly.plan:flat"

[settings]
world = "world.json"
threshold = 0.25
retries = 3
strict = true
regions = ["north", "south"]

[deploy]
prefix = "weekly"
work_pool = "pool-a"
recheck_interval = 90

[run]
executor = "in-process"
"""

HEAD = '[project]\nname = "p"\nregistry = "m:r"\nplan = "m:d"\n'


def write(root: Path, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    file = root / "contextmesh.toml"
    file.write_text(textwrap.dedent(text))
    return file


def refusal(root: Path, text: str) -> ProjectError:
    file = write(root, text)
    with pytest.raises(ProjectError) as caught:
        load_config(file)
    return caught.value


def test_a_full_file_loads_with_every_value_checked_and_paths_resolved(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "p", GOOD))
    root = (tmp_path / "p").resolve()
    assert (config.root, config.name, config.registry, config.plan) == (
        root,
        "weekly-report",
        "weekly.plan:build_registry",
        "weekly.plan:declare",
    )
    assert config.session == root / ".contextmesh" / "session"
    assert config.documents == (root / "docs", root / "notes" / "more")
    assert config.flat == "weekly.plan:flat" and config.executor == "in-process"
    assert dict(config.settings) == {
        "world": "world.json",
        "threshold": 0.25,
        "retries": 3,
        "strict": True,
        "regions": ("north", "south"),
    }
    assert (config.deploy.prefix, config.deploy.work_pool, config.deploy.recheck_interval) == ("weekly", "pool-a", 90.0)


def test_the_defaults_of_the_optional_tables(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "p", HEAD))
    assert config.session is None and config.documents == () and config.flat is None
    assert dict(config.settings) == {} and config.executor == "prefect"
    assert (config.deploy.prefix, config.deploy.work_pool, config.deploy.recheck_interval) == (
        "p",
        "contextmesh",
        600.0,
    )


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        (HEAD + "sesion = 's'\n", "project.sesion", ["unknown key 'sesion'", "[project] holds name, registry"]),
        (HEAD + "[deploy]\nschedule = 3\n", "deploy.schedule", ["unknown key 'schedule'"]),
        (HEAD + "[run]\nwhere = 'x'\n", "run.where", ["unknown key 'where'"]),
        (HEAD + "[deployment]\nprefix = 'x'\n", "deployment", ["unknown table or key 'deployment'"]),
        ("[project]\nname = 'p'\nregistry = 'm:r'\n", "project.plan", ["[project] needs 'plan'"]),
        ("[settings]\nworld = 'w'\n", "project", ["no [project] table"]),
        (HEAD.replace('"p"', '"Weekly Report"'), "project.name", ["'Weekly Report'", "lower-case letters"]),
        (HEAD.replace('"p"', "7"), "project.name", ["7", "a name is 1 to 63"]),
        (HEAD.replace('"m:r"', '"m.r"'), "project.registry", ["'m.r'", "module:attribute"]),
        (HEAD.replace('"m:r"', '"../m:r"'), "project.registry", ["module:attribute"]),
        (HEAD.replace('"m:d"', '"m:d:e"'), "project.plan", ["module:attribute"]),
        (HEAD + "session = '/var/s'\n", "project.session", ["'/var/s'", "relative to the project root"]),
        (HEAD + "session = '../s'\n", "project.session", ["resolves to", "inside the project root"]),
        (HEAD + "session = '.'\n", "project.session", ["a folder below the root"]),
        (HEAD + "session = '~/s'\n", "project.session", ["relative to the project root"]),
        (HEAD + "session = ''\n", "project.session", ["is empty"]),
        (HEAD + 'session = "a\\u0000b"\n', "project.session", ["control or unassigned character"]),
        (HEAD + "documents = 'docs'\n", "project.documents", ["a str", "a list of folders"]),
        (HEAD + "documents = ['docs', '../x']\n", "project.documents[1]", ["inside the project root"]),
        (HEAD + "documents = ['docs', 'docs/']\n", "project.documents", ["each folder is named once"]),
        (HEAD + "[settings]\n[settings.nested]\nx = 1\n", "settings.nested", ["a dict", "no tables"]),
        (HEAD + "[settings]\nwhen = 2026-01-01\n", "settings.when", ["a date", "no dates"]),
        (HEAD + "[settings]\nlist = [1, {a = 1}]\n", "settings.list.[1]", ["a dict"]),
        (HEAD + "[settings]\nratio = nan\n", "settings.ratio", ["finite"]),
        (HEAD + "[settings]\nbig = 9007199254740993\n", "settings.big", ["at most 2**53"]),
        (HEAD + "[deploy]\nrecheck_interval = 0\n", "deploy.recheck_interval", ["positive number of seconds"]),
        (HEAD + "[deploy]\nrecheck_interval = inf\n", "deploy.recheck_interval", ["positive number of seconds"]),
        (HEAD + "[deploy]\nrecheck_interval = true\n", "deploy.recheck_interval", ["True"]),
        (HEAD + "[deploy]\nrecheck_interval = 2592001\n", "deploy.recheck_interval", ["at most 2,592,000"]),
        (HEAD + "[deploy]\nwork_pool = 'a pool'\n", "deploy.work_pool", ["'a pool'", "work pool name"]),
        (HEAD + "[deploy]\nprefix = 'A'\n", "deploy.prefix", ["'A'", "lower-case"]),
        (HEAD + "[run]\nexecutor = 'dask'\n", "run.executor", ["'dask'", "prefect, in-process"]),
        (HEAD + "[run]\nexecutor = 1\n", "run.executor", ["a int", "text"]),
    ],
)
def test_each_refusal_names_the_file_and_the_key_path(tmp_path: Path, text: str, key: str, words: list[str]) -> None:
    error = refusal(tmp_path / "p", text)
    assert error.path == f"{tmp_path / 'p' / 'contextmesh.toml'}:{key}", error
    message = str(error)
    assert "\n" not in message
    for word in words:
        assert word in message, message


def test_a_path_that_leaves_the_root_through_a_link_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "docs").symlink_to(outside)
    error = refusal(tmp_path / "p", HEAD + "documents = ['docs']\n")
    assert error.path.endswith(":project.documents[0]") and str(outside) in error.found


def test_a_file_that_is_not_toml_utf8_or_small_is_refused_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    file = root / "contextmesh.toml"
    file.write_text("[project\nname = 'x'\n")
    with pytest.raises(ProjectError, match=r"not TOML \(.*line 1"):
        load_config(file)
    file.write_bytes(b"[project]\nname = '\xff'\n")
    with pytest.raises(ProjectError, match=r"not UTF-8 \(byte 18\)"):
        load_config(file)
    file.write_text(HEAD + "# " + "x" * 70_000 + "\n")
    with pytest.raises(ProjectError, match="more than 65,536 bytes"):
        load_config(file)
    file.unlink()
    file.mkdir()
    with pytest.raises(ProjectError, match="not a regular file"):
        load_config(file)


def test_a_fifo_in_the_files_place_is_refused_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    os.mkfifo(root / "contextmesh.toml")
    code = (
        "from pathlib import Path\nfrom contextmesh.project.config import ProjectError, load_config\n"
        f"try:\n    load_config(Path({str(root / 'contextmesh.toml')!r}))\n"
        "except ProjectError as e:\n    print(e.found)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False)
    assert done.stdout.strip() == "not a regular file", done.stderr


def test_a_missing_file_says_what_a_project_is(tmp_path: Path) -> None:
    with pytest.raises(ProjectError) as caught:
        load_config(tmp_path / "contextmesh.toml")
    assert caught.value.found == "no such file" and "contextmesh.toml" in caught.value.rule

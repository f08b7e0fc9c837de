"""``contextmesh-mcp --project DIR``: a project's session served with the project's own registry.

No launcher to copy: the MCP server reads the project's ``contextmesh.toml``, binds its registry from
the project's code and serves its own session (made on first use). A real MCP SDK client over
stdio, started with a minimal environment (the README's client config), asks and rechecks; with no
``contextmesh serve`` serving the session, the server says on stderr — loudly, naming where it
looked — that recheck and resume run in its own process.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import PYTHON

from contextmesh.cli import main

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

MCP = str(Path(PYTHON).parent / "contextmesh-mcp")


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    monkeypatch.setenv("CONTEXTMESH_HOME", str(tmp_path / "home"))
    assert main(["init", str(tmp_path / "weekly")]) == 0
    assert main(["run", "--local", "--project", str(tmp_path / "weekly")]) == 0
    capsys.readouterr()
    return tmp_path / "weekly"


def _minimal_env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CONTEXTMESH_HOME": str(tmp_path / "home")}


async def _call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(name, arguments or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def test_a_client_asks_and_rechecks_a_project_served_by_contextmesh_mcp_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path, monkeypatch, capsys)
    world = root / "world.json"
    world.write_text(world.read_text().replace('"EUR"', '"USD"'))
    server = StdioServerParameters(
        command=MCP, args=["--project", str(root)], cwd=str(tmp_path), env=_minimal_env(tmp_path)
    )
    async with Client(server, read_timeout_seconds=120) as client:
        described = json.loads((await client.read_resource("contextmesh://session")).contents[0].text)  # type: ignore[union-attr]
        assert "project weekly" in json.dumps(described)
        answer = await _call(client, "mesh_ask", {"question": "What does the Summary Step assume?"})
        assert "euros" in json.dumps(answer)
        observed = {"text": "Finance quotes every price in USD from June", "origin": "mail:finance/2026-06-02"}
        stored = await _call(client, "mesh_submit_evidence", {**observed, "title": "Finance's note on currency"})
        assert stored["created"] and stored["source_created"] and stored["committed"]
        again = await _call(client, "mesh_submit_evidence", observed)  # the same source, found by its origin
        assert again["evidence_id"] == stored["evidence_id"] and not again["source_created"] and not again["committed"]
        both = await client.call_tool("mesh_submit_evidence", {**observed, "source_id": stored["node"]["source_id"]})
        assert both.is_error and "exactly once" in both.content[0].text  # type: ignore[union-attr]
        # Tools that take a node take its label (an assumption's statement) where it names exactly one.
        radius = await _call(client, "mesh_blast_radius", {"assumption_id": "The orders export lists every region"})
        assert radius["statement"] == "the orders export lists every region" and radius["blast_radius"] >= 2
        entity = await _call(client, "mesh_get_node", {"node_id": "summary step"})
        assert entity["type"] == "entity" and entity["label"] == "Summary Step"
        recheck = await _call(client, "mesh_recheck")
        assert recheck["stale"] == ["summarise", "publish"]
        (fallen,) = recheck["invalidations"]
        assert fallen["statement"] == "prices are in euros" and fallen["evidence_id"] == stored["evidence_id"]


def test_with_no_serve_the_project_server_says_loudly_that_writes_run_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path, monkeypatch, capsys)
    done = subprocess.run(
        [MCP, "--project", str(root)],
        stdin=subprocess.DEVNULL,  # the client goes away at once: the server stops after its banner
        capture_output=True,
        text=True,
        env=_minimal_env(tmp_path),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    loud = [line for line in done.stderr.splitlines() if "IN THIS PROCESS" in line]
    assert len(loud) == 1 and str(tmp_path / "home" / "served") in loud[0], done.stderr
    assert str(root / ".contextmesh" / "session") in loud[0]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--project", "{root}", "--demo"], "argument --demo: not allowed with argument --project"),
        (["--dispatch", "never", "--session", "{root}"], "--dispatch and --dispatch-wait work with --project"),
        (["--project", "{missing}"], "no contextmesh.toml"),
        (["--project", "{file}"], "a file, not a folder; a project is a folder holding contextmesh.toml"),
    ],
)
def test_bad_project_arguments_are_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    root = _project(tmp_path, monkeypatch, capsys)
    (tmp_path / "empty").mkdir()
    (tmp_path / "a-file").write_text("not a project\n")
    args = [a.format(root=root, missing=tmp_path / "empty", file=tmp_path / "a-file") for a in argv]
    done = subprocess.run(
        [MCP, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_minimal_env(tmp_path),
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert said in done.stderr.strip().splitlines()[-1], done.stderr


def test_a_label_two_live_nodes_carry_is_refused_naming_both() -> None:
    from contextmesh.core.graph import ContextGraph
    from contextmesh.mcp.labels import AmbiguousLabelError, resolve

    graph = ContextGraph()
    one = graph.add_node("source", "Twin", id="source:one", attrs={"origin": "a", "retrieved_at": None})
    two = graph.add_node("source", "twin", id="source:two", attrs={"origin": "b", "retrieved_at": None})
    with pytest.raises(AmbiguousLabelError, match="names 2 live nodes") as refused:
        resolve(graph, "TWIN")
    assert one.id in str(refused.value) and two.id in str(refused.value)
    assert resolve(graph, "source:one") == one.id and resolve(graph, "no such label") == "no such label"
    assert resolve(graph, "Twin", "entity") == "Twin"  # of another kind: nothing named, passed on unchanged

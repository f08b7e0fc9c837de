"""``mesh_rerun_from`` in-process, through the real MCP SDK client: preview, run, refusals (ADR 0019 §7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_helpers import dir_bytes, served_session

from contextmesh.mcp.rerun_tool import ASKED_BY
from contextmesh.mcp.server import build_server
from contextmesh.mcp.write_tools import FORBIDDEN_INPUT_NAMES
from contextmesh.session.session import Session

pytestmark = pytest.mark.anyio


async def _call(client: Client, arguments: dict[str, Any]) -> Any:
    return await client.call_tool("mesh_rerun_from", arguments)


async def test_a_dry_run_predicts_the_closure_and_changes_nothing(session_dir: Path, feed: Path) -> None:
    served = served_session(session_dir, feed)
    before = dir_bytes(session_dir)
    async with Client(build_server(served)) as client:
        result = await _call(client, {"task": "hashing", "dry_run": True})
    assert not result.is_error, result.content
    out = result.structured_content
    assert out is not None
    assert out["closure"] == ["hashing", "routes", "rate_limit"] and out["predicted"] == out["closure"]
    assert out["dry_run"] is True and out["exact"] is None and out["changed"] is False
    assert dir_bytes(session_dir) == before


async def test_a_rerun_runs_exactly_the_predicted_closure_and_commits_who_asked(session_dir: Path, feed: Path) -> None:
    served = served_session(session_dir, feed)
    generation = served.session.generation
    async with Client(build_server(served)) as client:
        result = await _call(client, {"task": "routes"})
    assert not result.is_error, result.content
    out = result.structured_content
    assert out is not None
    assert out["predicted"] == ["routes", "rate_limit"] and out["executed"] == ["routes", "rate_limit"]
    assert out["exact"] is True and out["changed"] is True and out["generation"] == generation + 1
    assert sorted(out["cached"]) == ["hashing", "schema", "tokens"]
    reloaded = Session.load(session_dir, registry=served.session.registry)
    assert reloaded.runner is not None
    asked = [e for e in reloaded.runner.ledger.entries if e.event == "requested"]
    assert [e.task for e in asked] == ["routes", "rate_limit"]
    assert asked[0].detail == f"rerun from routes, asked by {ASKED_BY} (closure: routes, rate_limit)"


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"task": "routs"}, "TASK: 'routs'; a rerun starts from a task of plan"),
        ({"task": ""}, "task"),
        ({"task": "routes", "worker_key": "x"}, "worker_key"),
    ],
)
async def test_bad_input_is_refused_in_one_line_and_changes_nothing(
    session_dir: Path, feed: Path, arguments: dict[str, Any], said: str
) -> None:
    served = served_session(session_dir, feed)
    before = dir_bytes(session_dir)
    async with Client(build_server(served)) as client:
        result = await _call(client, arguments)
    assert result.is_error
    text = str(result.content[0].text)  # type: ignore[union-attr]
    assert said in text and "Traceback" not in text
    assert dir_bytes(session_dir) == before


async def test_its_schema_names_a_task_and_a_dry_run_only(session_dir: Path, feed: Path) -> None:
    served = served_session(session_dir, feed)
    async with Client(build_server(served)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    schema = tools["mesh_rerun_from"].input_schema
    assert set(schema["properties"]) == {"task", "dry_run"} and schema["required"] == ["task"]
    assert not set(schema["properties"]) & FORBIDDEN_INPUT_NAMES
    assert tools["mesh_rerun_from"].annotations is not None
    assert tools["mesh_rerun_from"].annotations.read_only_hint is False

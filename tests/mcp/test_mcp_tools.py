"""The seven read tools and the resources, through the SDK's in-memory client (both protocol eras)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp_helpers import QUESTIONS, dir_bytes, served_session, state_bytes, structure, telemetry

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.invalidation import blast_radius, render_chain
from contextmesh.belief.reconstruct import reconstruct_decision
from contextmesh.belief.temporal import explain_as_of
from contextmesh.core.ids import slug
from contextmesh.demo.knowledge import load_demo, load_demo_break
from contextmesh.mcp.read_tools import READ_TOOLS
from contextmesh.mcp.served_session import ServedSession
from contextmesh.mcp.server import build_server
from contextmesh.mcp.write_tools import FORBIDDEN_INPUT_NAMES, WRITE_TOOLS

pytestmark = pytest.mark.anyio
MODES = ["auto", "legacy"]
READS = sorted(t.name for t in READ_TOOLS)
WRITES = sorted(t.name for t in WRITE_TOOLS)


def sizing_assumption() -> str:
    _, sidecar = load_demo()
    statement = load_demo_break().statement(sidecar)
    return slug(statement, "assumption")


def property_names(schema: Any) -> set[str]:
    """Every property name anywhere in a JSON schema ($defs included)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                found |= set(value)
            found |= property_names(value)
    elif isinstance(schema, list):
        for item in schema:
            found |= property_names(item)
    return found


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(name, arguments or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


async def refusal(client: Client, name: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error
    return str(result.content[0].text)  # type: ignore[union-attr]


@pytest.fixture
def served(session_dir: Path, feed: Path) -> ServedSession:
    return served_session(session_dir, feed)


# -- what is published ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_twelve_tools_four_resources_two_templates_are_published(served: ServedSession, mode: str) -> None:
    async with Client(build_server(served), mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == sorted([*READS, *WRITES, "mesh_flow_run"])
        for name, tool in tools.items():
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is (name in READS or name == "mesh_flow_run")
            assert tool.output_schema is not None and tool.description
        resources = sorted(str(r.uri) for r in (await client.list_resources()).resources)
        assert resources == [
            "contextmesh://assumptions",
            "contextmesh://health",
            "contextmesh://schema",
            "contextmesh://session",
        ]
        templates = sorted(t.uri_template for t in (await client.list_resource_templates()).resource_templates)
        assert templates == ["contextmesh://assumption/{assumption_id}", "contextmesh://node/{node_id}"]


async def test_published_inputs_are_each_functions_parameters_minus_the_session(served: ServedSession) -> None:
    async with Client(build_server(served)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for spec in (*READ_TOOLS, *WRITE_TOOLS):
        schema = tools[spec.name].input_schema
        parameters = spec.parameters()
        assert set(schema.get("properties", {})) == {p.name for p in parameters}
        required = {p.name for p in parameters if p.default is p.empty}
        assert set(schema.get("required", [])) == required
    assert not tools["mesh_recheck"].input_schema.get("properties")
    assert not tools["mesh_resume"].input_schema.get("properties")


async def test_no_write_input_schema_names_an_edge_a_verdict_a_target_or_code(served: ServedSession) -> None:
    async with Client(build_server(served)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in WRITES:
        names = property_names(tools[name].input_schema)
        assert not names & FORBIDDEN_INPUT_NAMES, (name, names & FORBIDDEN_INPUT_NAMES)


def test_no_read_tool_name_says_it_writes() -> None:
    words = ("invalidate", "reject", "repair", "execute", "add_node", "add_edge", "supersede", "assume", "recheck")
    for name in READS:
        assert not any(word in name for word in (*words, "prune", "write", "delete")), name


# -- mesh_ask -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_mesh_ask_answers_with_its_path_and_moves_only_telemetry(
    served: ServedSession, session_dir: Path, mode: str
) -> None:
    before = structure(served.session)
    walks_before, _ = telemetry(served.session)
    generation = served.session.generation
    async with Client(build_server(served), mode=mode) as client:
        answer = await call(client, "mesh_ask", {"question": QUESTIONS[0]})
    assert answer["answered"] and answer["dead_end"] is None
    assert answer["answer_id"].startswith("claim:")
    assert [s["node_id"] for s in answer["path"]][-1] == answer["answer_id"]
    # every-ask commits after the reply (ADR 0028): the answer was read from `generation`, and its
    # telemetry lands in the next one
    assert answer["generation"] == generation and answer["telemetry_generation"] == generation + 1
    assert answer["pending"] == 1
    deadline = time.monotonic() + 30
    while served.call(lambda current: current.session.generation) == generation and time.monotonic() < deadline:
        await asyncio.sleep(0.01)  # each served request lands a written commit (ADR 0028)
    assert served.session.generation == generation + 1 and served.session.pending == 0
    assert structure(served.session) == before
    walks_after, _ = telemetry(served.session)
    assert walks_after - walks_before == len(answer["path"])
    assert json.loads((session_dir / "session.json").read_bytes())["generation"] == generation + 1


async def test_mesh_ask_names_a_dead_end_and_takes_a_policy(served: ServedSession) -> None:
    async with Client(build_server(served)) as client:
        lost = await call(client, "mesh_ask", {"question": "What about the quantum teapot?"})
        narrow = await call(client, "mesh_ask", {"question": QUESTIONS[0], "policy": ["resolves_to"]})
        bad_policy = await refusal(client, "mesh_ask", {"question": QUESTIONS[0], "policy": ["teleports_to"]})
    assert not lost["answered"] and lost["dead_end"]["reason"] == "entity_unresolved"
    assert narrow["dead_end"] is not None
    assert "teleports_to" in bad_policy


# -- the other reads change nothing ------------------------------------------------------------------


async def test_every_read_but_ask_changes_nothing_at_all(served: ServedSession, session_dir: Path) -> None:
    graph = served.session.graph
    decision = next(n.id for n in graph.by_type("decision"))
    node = next(n.id for n in graph.by_type("claim"))
    assumption = sizing_assumption()
    calls = [
        ("mesh_get_node", {"node_id": node}),
        ("mesh_get_node", {"node_id": assumption}),
        ("mesh_health", {}),
        ("mesh_lineage", {"assumption_id": assumption}),
        ("mesh_blast_radius", {"assumption_id": assumption}),
        ("mesh_explain_as_of", {"question": QUESTIONS[0], "as_of": "2026-03-01"}),
        ("mesh_reconstruct_decision", {"decision_id": decision}),
        ("mesh_reconstruct_decision", {"decision_id": decision, "as_of": "2026-12-31", "depth": 2}),
    ]
    uris = [
        "contextmesh://schema",
        "contextmesh://health",
        "contextmesh://session",
        "contextmesh://assumptions",
        f"contextmesh://node/{node}",
        f"contextmesh://assumption/{assumption}",
    ]
    before, on_disk, walks = state_bytes(served.session), dir_bytes(session_dir), telemetry(served.session)
    async with Client(build_server(served)) as client:
        for name, arguments in calls:
            await call(client, name, arguments)
        for uri in uris:
            assert (await client.read_resource(uri)).contents
    assert state_bytes(served.session) == before
    assert telemetry(served.session) == walks
    assert dir_bytes(session_dir) == on_disk


async def test_explain_as_of_and_reconstruct_return_exactly_what_the_engine_returns(served: ServedSession) -> None:
    session = served.session
    decision = next(n.id for n in session.graph.by_type("decision"))
    engine_as_of = explain_as_of(session.graph, session.resolver, QUESTIONS[1], "2026-02-01").to_dict()
    engine_reconstruct = reconstruct_decision(session.graph, decision, depth=3).to_dict()
    async with Client(build_server(served)) as client:
        as_of = await call(client, "mesh_explain_as_of", {"question": QUESTIONS[1], "as_of": "2026-02-01"})
        rebuilt = await call(client, "mesh_reconstruct_decision", {"decision_id": decision})
        bad_date = await refusal(client, "mesh_explain_as_of", {"question": QUESTIONS[1], "as_of": "2026-02-31"})
        missing = await refusal(client, "mesh_reconstruct_decision", {"decision_id": "decision:nope"})
    assert as_of == json.loads(json.dumps(engine_as_of))
    assert rebuilt == json.loads(json.dumps(engine_reconstruct))
    assert "as_of" in bad_date
    assert "no decision 'decision:nope'" in missing


async def test_blast_radius_is_a_dry_run_with_each_chain_and_the_preserved_complement(served: ServedSession) -> None:
    graph = served.session.graph
    assumption = sizing_assumption()
    engine = blast_radius(graph, assumption)
    async with Client(build_server(served)) as client:
        radius = await call(client, "mesh_blast_radius", {"assumption_id": assumption})
    assert radius["hypothetical"] is True and radius["status"] == "active" and radius["note"] is None
    assert radius["blast_radius"] == engine.blast_radius > 0
    assert [f["id"] for f in radius["would_invalidate"]] == sorted(engine.invalidated)
    for fallen in radius["would_invalidate"]:
        assert fallen["because"] == render_chain(engine.invalidated[fallen["id"]])
        assert fallen["because"].startswith("assumption(")
    assert radius["would_preserve"] == sorted(engine.preserved_ids)
    assert radius["would_preserve_count"] + radius["blast_radius"] + 1 == sum(1 for n in graph if n.live)
    assert graph.assumptions[assumption].status == "active" and graph.is_live(assumption)


async def test_get_node_lineage_and_health_describe_the_graph(served: ServedSession) -> None:
    graph = served.session.graph
    assumption = sizing_assumption()
    async with Client(build_server(served)) as client:
        node = await call(client, "mesh_get_node", {"node_id": assumption})
        lineage = await call(client, "mesh_lineage", {"assumption_id": assumption})
        health = await call(client, "mesh_health")
        no_node = await refusal(client, "mesh_get_node", {"node_id": assumption + "x"})
        no_assumption = await refusal(client, "mesh_lineage", {"assumption_id": "assumption:nope"})
    assert node["type"] == "assumption" and node["assumption"]["status"] == "active"
    assert len(node["in_edges"]) == len(graph.in_edges(assumption, live_only=False))
    assert lineage["chain"][0]["id"] == assumption and lineage["depth"] == 1
    chain = Assumptions(graph).lineage(assumption)
    assert [r["id"] for r in lineage["chain"]] == [r.id for r in chain]
    assert health["nodes_live"] == sum(1 for n in graph if n.live)
    assert {s["kind"] for s in health["signals"]} >= {"untyped_edges", "dead_ends", "invalidated_nodes"}
    assert next(s for s in health["signals"] if s["kind"] == "untyped_edges")["count"] == 0
    assert f"no node '{assumption}x'" in no_node and "look close" in no_node
    assert f"the graph has {len(graph.assumptions)}" in no_assumption


# -- resources --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_resources_read_the_ontology_health_session_and_records(served: ServedSession, mode: str) -> None:
    assumption = sizing_assumption()
    async with Client(build_server(served), mode=mode) as client:
        schema = (await client.read_resource("contextmesh://schema")).contents[0]
        health = json.loads((await client.read_resource("contextmesh://health")).contents[0].text)  # type: ignore[union-attr]
        session = json.loads((await client.read_resource("contextmesh://session")).contents[0].text)  # type: ignore[union-attr]
        records = json.loads((await client.read_resource("contextmesh://assumptions")).contents[0].text)  # type: ignore[union-attr]
        node = json.loads((await client.read_resource(f"contextmesh://node/{assumption}")).contents[0].text)  # type: ignore[union-attr]
        one = json.loads((await client.read_resource(f"contextmesh://assumption/{assumption}")).contents[0].text)  # type: ignore[union-attr]
        with pytest.raises(MCPError) as missing:
            await client.read_resource("contextmesh://node/claim:nope")
        with pytest.raises(MCPError):
            await client.read_resource("contextmesh://assumption/assumption:nope")
    assert schema.mime_type == "text/markdown"
    assert "# GRAPH.md" in schema.text and "untyped_edges == 0" in schema.text  # type: ignore[union-attr]
    assert health["status"] in {"ok", "warn", "error"}
    assert session["persistent"] is True and session["served"]["ephemeral"] is False
    assert session["served"]["writes"] == "controlled" and "Restored from disk" in session["note"]
    assert "nodes" not in session and session["plan"]["name"] == "secure-authentication"
    assert records["count"] == len(served.session.graph.assumptions)
    assert node["id"] == assumption
    assert one["assumption"]["id"] == assumption and one["lineage"] == [assumption] and one["blast_radius"] > 0
    assert missing.value.error.code == -32602


# -- bad input ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_bad_arguments_are_tool_errors_and_change_nothing(
    served: ServedSession, session_dir: Path, mode: str
) -> None:
    before, on_disk = state_bytes(served.session), dir_bytes(session_dir)
    async with Client(build_server(served), mode=mode) as client:
        assert "unknown tool 'mesh_teleport'; the tools are mesh_ask" in await refusal(client, "mesh_teleport", {})
        assert "valid string" in await refusal(client, "mesh_get_node", {"node_id": 42})
        assert "valid integer" in await refusal(
            client, "mesh_reconstruct_decision", {"decision_id": "decision:x", "depth": "deep"}
        )
        assert "question is empty" in await refusal(client, "mesh_ask", {"question": "   "})
        assert "at least 1" in await refusal(client, "mesh_ask", {"question": ""})
        unheard = await refusal(client, "mesh_submit_evidence", {"text": "x", "source_id": "s", "verdict": "reject"})
        assert "takes no argument 'verdict'" in unheard
        assert "takes no argument 'assumption_id'" in await refusal(
            client, "mesh_recheck", {"assumption_id": "assumption:x"}
        )
        assert (await client.call_tool("mesh_health", {})).is_error is False  # still serving
    assert state_bytes(served.session) == before
    assert dir_bytes(session_dir) == on_disk

"""Following a long write by its handle: ``mesh_flow_run``.

On a served deployment (:mod:`contextmesh.mcp.deployment_dispatcher`) ``mesh_recheck`` and
``mesh_resume`` return at once: the flow run they started, as ``flow_run`` (its id, its address in
the Prefect UI, its state, ``completed`` false). The run goes on in the deployment's own process
and commits to the session directory itself. ``mesh_flow_run`` reads that run again — one read of
its state, nothing started, nothing committed — and once it has ended returns the report the
write would have returned had it waited. A subscriber of ``contextmesh://session`` (or of what the
run changed) is told when the run commits, so it knows when to ask.

The MCP tasks mechanism (task-augmented ``tools/call``) would be the protocol's own way to do this;
the installed SDK carries its types but serves none of it, so this is a plain, documented tool.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from contextmesh.mcp.models import FlowRunReport
from contextmesh.mcp.read_tools import MeshToolError, ToolSpec
from contextmesh.mcp.served_session import ServedSession

__all__ = ["HANDLE_TOOLS", "mesh_flow_run"]

FlowRunId = Annotated[
    str,
    Field(min_length=1, max_length=100, description="flow_run.id, as mesh_recheck or mesh_resume returned it"),
]


def mesh_flow_run(served: ServedSession, flow_run_id: FlowRunId) -> FlowRunReport:
    """Follow a recheck or resume by its handle. mesh_recheck and mesh_resume dispatched to a
    Prefect deployment return at once with flow_run (id, url, state, completed false); call this
    with that id until flow_run.completed is true: then `recheck` or `resume` holds the report the
    write would have returned had it waited. Reads only: it starts and commits nothing."""
    dispatcher = served.dispatcher
    if dispatcher is None:
        raise MeshToolError(
            "this server runs mesh_recheck and mesh_resume in-process, so each call's answer is its whole "
            "report and there is no flow run to follow"
        )
    return dispatcher.follow(flow_run_id, served.session)


HANDLE_TOOLS: tuple[ToolSpec, ...] = (ToolSpec("mesh_flow_run", mesh_flow_run, False, "Follow a recheck or resume"),)

"""What the server tells a client about itself: its instructions and each tool's behaviour hints.

Plain data, kept apart from the SDK wiring in :mod:`contextmesh.mcp.server`, which turns each hint
set into the SDK's ``ToolAnnotations``. A hint says what a tool does to the world: an ask moves walk
telemetry (read-only for the world, not idempotent); a disproof rejects an assumption for good (a
rejected assumption is never revived), so ``mesh_recheck`` is destructive; ``mesh_flow_run`` changes
nothing but its answer moves on.
"""

from __future__ import annotations

__all__ = ["INSTRUCTIONS", "READ_ONLY_HINTS", "TOOL_HINTS"]

INSTRUCTIONS = (
    "ContextMesh: a typed context graph that keeps why things hold. Ask it questions (mesh_ask) and read "
    "nodes, health, assumption lineage and blast radius; answer as of a date; reconstruct a decision. "
    "Belief changes only through evidence: submit an observation (mesh_submit_evidence), let the "
    "deployment's registered auditors interpret it (mesh_recheck), repair fallen work onto a registered "
    "key (mesh_repair) and run only what fell (mesh_resume). Dispatched to a deployment, mesh_recheck and "
    "mesh_resume return at once with a flow-run handle; follow it with mesh_flow_run. contextmesh://schema is "
    "the ontology."
)

READ_ONLY_HINTS = {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True, "open_world_hint": False}


def _hints(*, read_only: bool, destructive: bool, idempotent: bool, open_world: bool) -> dict[str, bool]:
    return {
        "read_only_hint": read_only,
        "destructive_hint": destructive,
        "idempotent_hint": idempotent,
        "open_world_hint": open_world,
    }


TOOL_HINTS: dict[str, dict[str, bool]] = {
    "mesh_ask": _hints(read_only=True, destructive=False, idempotent=False, open_world=False),
    "mesh_submit_evidence": _hints(read_only=False, destructive=False, idempotent=True, open_world=False),
    "mesh_recheck": _hints(read_only=False, destructive=True, idempotent=False, open_world=True),
    "mesh_repair": _hints(read_only=False, destructive=False, idempotent=False, open_world=False),
    "mesh_resume": _hints(read_only=False, destructive=False, idempotent=False, open_world=True),
    "mesh_rerun_from": _hints(read_only=False, destructive=False, idempotent=False, open_world=True),
    "mesh_flow_run": _hints(read_only=True, destructive=False, idempotent=False, open_world=True),
}

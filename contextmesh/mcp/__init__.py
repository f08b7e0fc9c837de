"""The MCP surface: the graph as an agent's memory, and four controlled writes.

Modules, all plain Python except the last:

* :mod:`~contextmesh.mcp.tools` — the seven read tools over a :class:`~contextmesh.session.session.Session`
  (``mesh_ask``, ``mesh_get_node``, ``mesh_health``, ``mesh_lineage``, ``mesh_blast_radius``,
  ``mesh_explain_as_of``, ``mesh_reconstruct_decision``) and their typed results;
* :mod:`~contextmesh.mcp.writes` — the four controlled writes (``mesh_submit_evidence``,
  ``mesh_recheck``, ``mesh_repair``, ``mesh_resume``), each committed through a lossless clone;
* :mod:`~contextmesh.mcp.dispatch` — the :class:`~contextmesh.mcp.dispatch.Dispatcher` hook through
  which a Prefect deployment takes over ``mesh_recheck`` and ``mesh_resume``, and its cached probe;
* :mod:`~contextmesh.mcp.served` — the served session: one lock, reload on another writer's commit;
* :mod:`~contextmesh.mcp.resources` — ``contextmesh://`` resources;
* :mod:`~contextmesh.mcp.server` — ``contextmesh-mcp``: the only module that imports the MCP SDK.

This ``__init__`` imports nothing, so ``import contextmesh.mcp.tools`` never pulls in the SDK.
"""

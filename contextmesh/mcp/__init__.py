"""The MCP surface: the graph as an agent's memory, and five controlled writes.

Modules, none importing the MCP SDK except the last:

* :mod:`~contextmesh.mcp.read_tools` — the seven read tools over a :class:`~contextmesh.session.session.Session`
  (``mesh_ask``, ``mesh_get_node``, ``mesh_health``, ``mesh_lineage``, ``mesh_blast_radius``,
  ``mesh_explain_as_of``, ``mesh_reconstruct_decision``) and their typed results;
* :mod:`~contextmesh.mcp.write_tools` — the five controlled writes (``mesh_submit_evidence``,
  ``mesh_recheck``, ``mesh_repair``, ``mesh_resume``; ``mesh_rerun_from`` in :mod:`~contextmesh.mcp.rerun_tool`),
  each committed through a lossless clone;
* :mod:`~contextmesh.mcp.write_dispatch` — the :class:`~contextmesh.mcp.write_dispatch.Dispatcher` hook through
  which a Prefect deployment takes over ``mesh_recheck`` and ``mesh_resume``, and its cached probe;
* :mod:`~contextmesh.mcp.served_session` — the served session: one lock, reload on another writer's commit;
* :mod:`~contextmesh.mcp.resources` — ``contextmesh://`` resources;
* :mod:`~contextmesh.mcp.quoting` — how a refusal shows a client's value (a short prefix, its length);
* :mod:`~contextmesh.mcp.command` — the command line's arguments, usage rules and the session they name;
* :mod:`~contextmesh.mcp.exposure` — loopback by default; beyond it only by opt-in with a bearer token;
* :mod:`~contextmesh.mcp.http_guard` — the ASGI layers before the SDK: token, POST only, JSON-RPC ids;
* :mod:`~contextmesh.mcp.connections` — uvicorn's h11 protocol with a read deadline and a per-client cap;
* :mod:`~contextmesh.mcp.stdio_guard` — the stdio wire, with impossible request ids answered;
* :mod:`~contextmesh.mcp.log_lines` — one clipped log line per record, never a traceback;
* :mod:`~contextmesh.mcp.server` — ``contextmesh-mcp``: the only module that imports the MCP SDK.

This ``__init__`` imports nothing, so ``import contextmesh.mcp.read_tools`` never pulls in the SDK.
"""

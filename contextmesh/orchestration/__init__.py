"""Orchestration on Prefect: the executor, the flow factories, the managed local server.

The only package of the engine that imports ``prefect``; nothing in ``contextmesh`` imports it
(``import contextmesh`` stays Prefect-free). Import the modules by path:

* :mod:`contextmesh.orchestration.settings` — the environment every Prefect process here gets;
* :mod:`contextmesh.orchestration.local_server` — the managed local server (``start`` / ``status`` /
  ``stop`` / ``ensure_server``);
* :mod:`contextmesh.orchestration.prefect_executor` — :class:`PrefectExecutor`;
* :mod:`contextmesh.orchestration.flow_bodies` — ``make_plan_flow(registry)``, ``make_recheck_flow(registry)``;
* :mod:`contextmesh.orchestration.announce` — the disproof event, its receipt artifact and the outbox;
* :mod:`contextmesh.orchestration.flow_steps` — a session's plan worked step by step, each round and
  recheck a flow run (:class:`FlowRunSteps`; the command line runs the demo's walk-through on it);
* :mod:`contextmesh.orchestration.commands` — a Prefect API for one command (``prefect_for_command``)
  and ``contextmesh server start|status|stop``.

This ``__init__`` imports nothing, so ``settings`` and ``server`` can run before Prefect is imported.
"""

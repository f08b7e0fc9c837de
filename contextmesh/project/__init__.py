"""A user's project: ``contextmesh.toml``, the plan and registry it names in its own code, its session.

Layer 7 (docs/architecture.md): above the session layer, below the public API, so the root can
re-export it and orchestration and the command line can build on it. Each concept has its module:

* :mod:`~contextmesh.project.config` — the strict loader of ``contextmesh.toml``;
* :mod:`~contextmesh.project.project` — a :class:`Project`, found at or above a folder, or loaded;
* :mod:`~contextmesh.project.binding` — ``module:attribute`` to the project's registry, plan and
  flat baseline, imported with the project root first on ``sys.path`` (ADR 0009 §2);
* :mod:`~contextmesh.project.sessions` — its session, opened with its registry, created on first use;
* :mod:`~contextmesh.project.sourced_evidence` — an observation from a new (or known) source, in one call;
* :mod:`~contextmesh.project.scaffold` — ``contextmesh init``: a runnable project in a new folder.
"""

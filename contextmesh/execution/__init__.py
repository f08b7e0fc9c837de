"""The execution engine: decisions as tasks keyed through a registry, audited, repaired, resumed.

Synchronous and Prefect-free. :class:`~contextmesh.execution.plan.Plan` binds units of work to
the graph's own vocabulary — a task *is* a decision node, its ground a ``depends_on`` edge to an
assumption, its needs ``depends_on`` edges to other decisions, its outputs ``produces`` edges to
entities — and hands each ready layer to an :class:`~contextmesh.execution.calls.Executor`.
"""

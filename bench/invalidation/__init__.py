"""InvalidationBench: which work re-runs after a belief changes, ContextMesh on Prefect vs plain Prefect.

Modules, one concept each:

* :mod:`world` — the seeded generator: a world of facts, a layered plan whose tasks each declare
  one assumption (a statement about a fact), read other tasks' outputs (indirect reads) and now and
  then a fact they never declared (undeclared reads); the task function itself; the named cases.
* :mod:`truth` — ground truth from re-evaluating the task functions on the changed world; nothing
  of ContextMesh is imported there.
* :mod:`mesh` — the ContextMesh contender: a session run by the plan flow; evidence, the recheck
  flow (disproof), repair, the resume flow.
* :mod:`plain` — the plain-Prefect contender: the same function as a Prefect task with input-keyed
  result caching and an assumption-version parameter threaded by hand.
* :mod:`score` — counts against the ground truth; :mod:`scale` — the 10^6-node receipt figures;
  :mod:`run` — one run of everything on one Prefect server, printed as tables.

Run it through ``bench/run_all.py`` (``--only invalidation`` for this part alone).
"""

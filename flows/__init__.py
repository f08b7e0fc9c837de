"""This repository's flow entrypoints (``flows/plan_flow.py:plan``, ``flows/recheck_flow.py:recheck``,
``flows/repair_flow.py:repair``), built from the library's flow bodies with this deployment's registry
(``registry/``). ``deployments/prefect.yaml`` and ``deployments/serve.py`` deploy them."""

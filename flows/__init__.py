"""This repository's flow entrypoints (``flows/plan.py:plan``, ``flows/recheck.py:recheck``,
``flows/repair.py:repair``), built from the library's flow bodies with this deployment's registry
(``registry/``). ``deployments/prefect.yaml`` and ``deployments/serve.py`` deploy them."""

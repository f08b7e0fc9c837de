"""The ``contextmesh`` command line: parse, make one library call, render.

Every command accepts ``--json`` and then prints one JSON document and nothing else — on failure
too (``{"error": {"type", "message", "path"}}``). A failure is one line on stderr; the exit status is
2 for a usage error and 1 for a refused operation (:mod:`contextmesh.cli.failure`). Every option's
value is checked when the arguments are parsed (:mod:`contextmesh.cli.options`). Commands that need
Prefect import it lazily, so ``ask`` starts fast.
"""

from contextmesh.cli.run import main

__all__ = ["main"]

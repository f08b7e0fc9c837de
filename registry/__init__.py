"""This deployment's registry: the table from a key to the code it means, built by code we own.

Every process that runs this deployment's work builds the same table from here — the flow-run
process a worker or ``serve`` starts, the MCP launcher, each Dask worker of a wide layer — because
a process-local table does not travel. Keys are the only thing a session, an MCP request or a
flow-run parameter can name; this module decides what each key runs.

The bundled demo registers its workers and the advisory auditor (``contextmesh.demo.auth``); a
deployment of your own replaces the body of :func:`build_registry` with its registrations.
"""

from __future__ import annotations

import os
from pathlib import Path

from contextmesh.demo.auth import register_demo
from contextmesh.demo.saved import default_feed
from contextmesh.execution.task_registry import TaskRegistry

__all__ = ["FEED_ENV", "build_registry", "feed_path"]

FEED_ENV = "CONTEXTMESH_DEMO_FEED"


def feed_path(feed: str | Path | None = None) -> Path:
    """The advisory feed the auditor reads: ``feed``, else ``$CONTEXTMESH_DEMO_FEED``, else the demo default."""
    if feed:
        return Path(feed)
    named = os.environ.get(FEED_ENV)
    return Path(named) if named else default_feed()


def build_registry(feed: str | Path | None = None) -> TaskRegistry:
    """This deployment's key → callable table (workers and auditors), bound to the advisory ``feed``.

    The table carries its recipe, ``build_registry(<the feed's absolute path>)``: a Dask or Ray
    worker process that receives it imports this module and builds the same table here, reading the
    same feed whatever its own working directory or environment says.
    """
    path = feed_path(feed).absolute()
    registry = TaskRegistry(recipe=(build_registry, (path,)))
    register_demo(registry, feed=path)
    return registry

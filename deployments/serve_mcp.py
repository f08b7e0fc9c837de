"""Serve a session over MCP with this deployment's registry embedded: the launcher for ``contextmesh-mcp``.

    python deployments/serve_mcp.py --session ./session [--feed FILE] [contextmesh-mcp options …]

A session holding an execution plan names worker and auditor *keys*; only the deployment that
serves it can say which code a key means. The plain ``contextmesh-mcp`` command therefore refuses
such a session, and this launcher supplies the registry: the bundled demo's workers and advisory
auditor, registered under this deployment's keys by :func:`contextmesh.demo.auth.register_demo`
(the one registration function the CLI also calls). The auditor reads the advisory feed named by
``--feed FILE``, else ``$CONTEXTMESH_DEMO_FEED``, else the demo's default under
``$CONTEXTMESH_HOME``. Every other argument goes to ``contextmesh-mcp`` unchanged.

A deployment of your own copies this file and registers its own implementations instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from contextmesh.demo.auth import register_demo
from contextmesh.demo.session import default_feed
from contextmesh.execution.registry import TaskRegistry
from contextmesh.mcp.server import main as mcp_main

FEED_ENV = "CONTEXTMESH_DEMO_FEED"


def feed_path(argv: Sequence[str]) -> Path:
    """The advisory feed: ``--feed FILE`` in the arguments, else ``$CONTEXTMESH_DEMO_FEED``, else the default."""
    for index, arg in enumerate(argv):
        if arg == "--feed" and index + 1 < len(argv):
            return Path(argv[index + 1])
        if arg.startswith("--feed="):
            return Path(arg.partition("=")[2])
    named = os.environ.get(FEED_ENV)
    return Path(named) if named else default_feed()


def deployment_registry(feed: Path) -> TaskRegistry:
    """This deployment's key → callable table (workers and auditors)."""
    registry = TaskRegistry()
    register_demo(registry, feed=feed)
    return registry


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``contextmesh-mcp`` with this deployment's registry."""
    args = list(sys.argv[1:] if argv is None else argv)
    return mcp_main(args, registry=deployment_registry(feed_path(args)))


if __name__ == "__main__":
    raise SystemExit(main())

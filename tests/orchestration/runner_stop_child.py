"""Child process of ``test_runner_loop.py``: serve gets SIGTERM while it is still registering its deployments.

Registration is held (``Runner.aadd_deployment`` waits first) so the signal lands before Prefect's
runner has started and installed its own handler. Prints ``registering`` when the signal may come,
and ``cleaned up`` from the ``finally`` a serving process's clean-up lives in (stopping the reactor,
draining Prefect's log and event workers, removing the served record).

    python runner_stop_child.py API_URL
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

os.environ["PREFECT_API_URL"] = sys.argv[1]

from prefect import flow
from prefect.runner import Runner

from contextmesh.orchestration.runner_loop import serve_deployments

_register = Runner.aadd_deployment


async def held_registration(self: Runner, deployment: Any) -> Any:
    print("registering", flush=True)
    await asyncio.sleep(60)
    return await _register(self, deployment)


Runner.aadd_deployment = held_registration  # type: ignore[method-assign]


@flow(name="cm-test-runner-stop")
def probe() -> None:
    """A flow to deploy; it never runs."""


def main() -> None:
    try:
        serve_deployments([probe.to_deployment(name=f"stop-{os.getpid()}")], limit=1, query_seconds=3600)
    finally:
        print("cleaned up", flush=True)


if __name__ == "__main__":
    main()

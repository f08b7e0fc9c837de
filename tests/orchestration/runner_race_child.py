"""Child process of ``test_runner_loop.py``: serve registering its deployments while a warm run takes its first slot.

Forces the interleaving of issue 20's hang instead of waiting for it: a coroutine on Prefect's
run-sync loop stands for a warm run inside ``concurrency()`` — it holds that loop's thread until the
serving side is waiting on the run-sync loop from ``RunnerDeployment._get_deployment_version_info``
(seen in the thread stacks), then needs the global loop, as the acquisition service's first start
does. ``serve_deployments`` (what ``contextmesh serve`` and ``deployments/serve.py`` run) serves in
the main thread. Prints ``RESULT no deadlock`` and exits 0 once the warm side finished; after 30 s
prints ``RESULT DEADLOCK`` and every thread's stack, and exits 3.

    python runner_race_child.py API_URL
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time

os.environ["PREFECT_API_URL"] = sys.argv[1]

from prefect import flow
from prefect.concurrency.services import ConcurrencySlotAcquisitionWithLeaseService
from prefect.utilities.asyncutils import run_coro_as_sync

from contextmesh.orchestration.runner_loop import serve_deployments

WAITING_FRAME = "_get_deployment_version_info"
busy, release, done = threading.Event(), threading.Event(), threading.Event()


@flow(name="cm-test-runner-race")
def probe() -> None:
    """A flow to deploy; it never runs."""


async def first_slot_of_a_warm_run() -> None:
    busy.set()
    release.wait(30)  # the run-sync loop's thread is taken, as by a coroutine running synchronous code
    ConcurrencySlotAcquisitionWithLeaseService.instance(frozenset([f"cm-race-{os.getpid()}"]))


def registration_waits_on_the_run_sync_loop() -> bool:
    for frame in sys._current_frames().values():
        at = frame
        while at is not None:
            if at.f_code.co_name == WAITING_FRAME:
                return True
            at = at.f_back
    return False


def release_when_registration_waits() -> None:
    deadline = time.monotonic() + 30
    while not registration_waits_on_the_run_sync_loop() and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.2)  # it has submitted its call to the run-sync loop and waits for it
    release.set()


def warm() -> None:
    run_coro_as_sync(first_slot_of_a_warm_run())
    done.set()


def verdict() -> None:
    if done.wait(30):
        print("RESULT no deadlock", flush=True)
        os._exit(0)
    print("RESULT DEADLOCK", flush=True)
    faulthandler.dump_traceback(file=sys.stdout, all_threads=True)
    os._exit(3)


def main() -> None:
    deployment = probe.to_deployment(name=f"race-{os.getpid()}")
    threading.Thread(target=warm, daemon=True).start()
    busy.wait(30)
    threading.Thread(target=release_when_registration_waits, daemon=True).start()
    threading.Thread(target=verdict, daemon=True).start()
    serve_deployments([deployment], limit=1, prefetch_seconds=0, query_seconds=3600)


if __name__ == "__main__":
    main()

"""The plain-Prefect contender: what a careful Prefect 3.9 user does today, with the same information.

The same task function runs as one Prefect ``@task`` per plan task, layer by layer on the same
thread pool width as the ContextMesh plan flow. Reuse is Prefect's own: ``cache_policy=INPUTS``
(the cache key is a hash of the task's parameters) with result persistence into a storage folder
the benchmark owns (Prefect's local storage path pointed at a temporary directory, never the
user's home).
The parameters are the task's name, the outputs of the tasks it needs (the indirect reads, as data)
and **an assumption version threaded by hand**: each task gets the version of the one statement it
declares, with the same information the ContextMesh side has (a fact read in buckets is declared
as its bucket, ADR 0026; in the *exact* variant of case (c) every fact is declared at its exact
value, on both sides). A world change bumps the version of every fact whose declared statement
changed (for a coarse fact, only when it leaves its bucket) and the whole flow runs again:
a task re-executes when its version or one of its inputs changed, and is served from
the cache otherwise — which is Prefect's own early cutoff: a task re-run to an unchanged output
stops the cascade there, because its dependents' cache keys are unchanged.

Counts come from the task function's own calls (a cache hit never calls it).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from invalidation.mesh import Calls
from invalidation.world import WorldPlan, evaluate, ground


def make_flow(plan: WorldPlan, world: Mapping[str, int], calls: Calls, delay: float, width: int) -> Any:
    """The plain flow over ``plan``; run it with :func:`run_flow`."""
    from prefect import flow, task
    from prefect.cache_policies import INPUTS
    from prefect.task_runners import ThreadPoolTaskRunner

    @task(
        cache_policy=INPUTS,
        persist_result=True,
        result_serializer="json",
        task_run_name="{name}",
    )
    def work(name: str, inputs: dict[str, Any], version: int) -> dict[str, str]:
        time.sleep(delay)
        calls.add(name)
        return evaluate(plan.spec(name), world, inputs)

    layers = plan.by_layer()

    @flow(name="invalidation-plain", task_runner=ThreadPoolTaskRunner(max_workers=width), persist_result=False)
    def plain_plan(versions: dict[str, int]) -> dict[str, dict[str, str]]:
        outputs: dict[str, dict[str, str]] = {}
        for layer in layers:
            futures = {
                spec.name: work.submit(spec.name, {n: outputs[n] for n in spec.needs}, versions[spec.fact])
                for spec in layer
            }
            for name, future in futures.items():
                outputs[name] = future.result()
        return outputs

    return plain_plan


def bump(
    versions: Mapping[str, int], change: Mapping[str, int], world: Mapping[str, int], coarse: frozenset[str]
) -> dict[str, int]:
    """The careful user's step: every fact whose declared statement changed from ``world`` gets the
    next version (a fact observed again at the value it had, or a coarse fact moved inside its
    bucket, keeps its version, so nothing re-runs for it)."""

    def stated(fact: str, value: int) -> str:
        return ground(fact, value, coarse=fact in coarse)

    return {
        fact: version + (1 if fact in change and stated(fact, change[fact]) != stated(fact, world[fact]) else 0)
        for fact, version in versions.items()
    }


def run_flow(fl: Any, versions: Mapping[str, int], storage: Path) -> tuple[dict[str, dict[str, str]], str]:
    """Call the plain flow with its results and cache records kept in ``storage``; its outputs and
    its flow run id. (An unsaved ``LocalFileSystem`` cannot be given to ``@task`` in Prefect 3.9 —
    it wants a block saved server-side — so the default local storage path is pointed there.)"""
    import prefect.settings as ps

    storage.mkdir(parents=True, exist_ok=True)
    with ps.temporary_settings(updates={ps.PREFECT_LOCAL_STORAGE_PATH: str(storage)}):
        state = fl(versions=dict(versions), return_state=True)
    return state.result(), str(state.state_details.flow_run_id)

"""A third domain end to end: a nightly churn model (seven tasks, two auditors) as a user's project.

``contextmesh init`` makes the project; its plan module, world file and documents are replaced by
the churn pipeline's (``tests/data/projects/churn/``). Round 1 runs on a real Prefect server, then
``contextmesh serve`` serves its deployments with a recheck every 4 s. Every command of issue 17's
list works on it under ``--json``; Cloud Ops cut the GPU quota, the next scheduled recheck
disproves ``train``'s ground (citing the submitted evidence) and starts a resume that waits for
repair; ``repair`` and ``resume`` dispatch to the served deployments, and Prefect's API shows the
resume executed exactly ``train``, ``evaluate`` and ``publish``, with the other four ``Cached``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from orch_helpers import by_role, pause_schedules, resume_schedules, task_runs
from project_helpers import Served, cm, deployments, flow_runs, init_project, project_env, serve, stop, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CHURN = Path(__file__).resolve().parents[1] / "data" / "projects" / "churn"
TASKS = ["extract", "features", "split", "report", "train", "evaluate", "publish"]
STALE = ["train", "evaluate", "publish"]


@pytest.fixture(scope="module")
def churn(prefect_api: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], Served]]:
    where = tmp_path_factory.mktemp("churn")
    env = project_env(prefect_api, where / "home")
    root = init_project(env, where, "churn-nightly", 4)
    module = next(p.parent.name for p in root.glob("*/plan.py") if p.parent.name != "flows")
    shutil.copy(CHURN / "plan.py", root / module / "plan.py")
    shutil.copy(CHURN / "world.json", root / "world.json")
    shutil.rmtree(root / "docs")
    shutil.copytree(CHURN / "docs", root / "docs")
    first = cm(env, "run", "--project", str(root))
    assert sorted(first["report"]["executed"]) == sorted(TASKS) and first["report"]["failed"] == {}
    assert first["executor"] == "prefect" and first["flow_run"]["url"].endswith(first["flow_run"]["flow_run_id"])
    served = serve(env, root)
    try:
        # Only the scheduled-recheck test reads the 4 s schedule; it resumes it (ADR 0040).
        pause_schedules(prefect_api, _recheck_id(prefect_api, served))
        yield env, served
    finally:
        stop(served)


def _recheck_id(api: str, served: Served) -> str:
    return str(deployments(api)[f"contextmesh-recheck/{served.name}"]["id"])


def test_every_command_reads_the_churn_project_under_json(churn: tuple[dict[str, str], Served]) -> None:
    env, served = churn
    at = ["--project", str(served.root)]
    answer = cm(env, "ask", "Who sets the GPU quota?", *at)
    assert "Cloud Ops" in str(answer) and answer["committed"] is True
    assert cm(env, "health", *at)["nodes_live"] > 0
    shown = cm(env, "session", "show", *at)
    assert shown["plan"]["name"] == "churn-nightly" and set(shown["plan"]["states"].values()) == {"done"}
    assert cm(env, "session", "verify", *at)["ledger_verified"] is True
    exported = cm(env, "export", "--out", str(served.root.parent / "dash"), *at)
    assert exported["source"]["plan"] == "churn-nightly"
    radius = cm(env, "blast-radius", "the GPU quota is 8 GPUs", *at)
    fallen = " ".join(node["chain"] for node in radius["invalidated"])
    assert all(f"{task} (churn-nightly)" in fallen for task in STALE)
    assert not any(f"{task} (churn-nightly)" in fallen for task in ("extract", "features", "split", "report"))


def test_a_scheduled_recheck_disproves_the_quota_and_resume_reruns_exactly_the_stale_closure(
    churn: tuple[dict[str, str], Served], prefect_api: str
) -> None:
    env, served = churn
    at = ["--project", str(served.root)]
    resume_schedules(prefect_api, _recheck_id(prefect_api, served))
    world = served.root / "world.json"
    world.write_text(world.read_text().replace('"gpu_quota": 8', '"gpu_quota": 4'))
    added = cm(env, "evidence", "add", "Cloud Ops cut the quota to 4 GPUs", "--source", "ticket:OPS-4411", *at)
    assert added["source_created"] is True
    plan_id = deployments(prefect_api)[f"contextmesh-plan/{served.name}"]["id"]

    def resumed_by_recheck() -> list[dict[str, Any]]:
        tagged = {"flow_runs": {"tags": {"all_": ["cm.trigger:recheck"]}, "state": {"type": {"any_": ["COMPLETED"]}}}}
        return flow_runs(prefect_api, [plan_id], **tagged)

    wait_for("the resume the quota's disproof starts", resumed_by_recheck, timeout=240)
    # The scheduled recheck has done its part; the rest of the module asks for its runs by name, so the
    # 4 s schedule stops here instead of at the module's end (ADR 0040).
    pause_schedules(prefect_api, _recheck_id(prefect_api, served))
    shown = cm(env, "session", "show", *at)
    assert {t for t, state in shown["plan"]["states"].items() if state == "stale"} == set(STALE)

    repaired = cm(
        env, "repair", "train", "--worker-key", "churn.train.small.v1", "--assumes", "the GPU quota is 4 GPUs", *at
    )
    assert repaired["dispatched"]["deployment"] == f"contextmesh-repair/{served.name}"
    resumed = cm(env, "resume", "--wait", "240", *at)
    assert resumed["dispatched"]["deployment"] == f"contextmesh-plan/{served.name}"
    report = resumed["report"]
    assert report["executed"] == STALE and sorted(report["cached"]) == sorted(set(TASKS) - set(STALE))
    runs = task_runs(prefect_api, resumed["dispatched"]["flow_run_id"], 3 + 3 + 4)
    assert set(by_role(runs, "worker")) == set(STALE)
    cached = {r["name"]: r["state_name"] for r in by_role(runs, "cached").values()}
    assert cached == {f"{t} · cached": "Cached" for t in TASKS if t not in STALE}
    rechecked = cm(env, "recheck", "--wait", "240", *at)
    assert rechecked["dispatched"]["state"] in {"COMPLETED", "CANCELLED"}  # CANCEL_NEW when a scheduled one runs
    assert cm(env, "session", "verify", *at)["ledger_verified"] is True

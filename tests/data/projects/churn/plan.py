"""A nightly churn model in seven tasks, two auditors: a third domain, beside the demo and ``init``'s.

    extract   churn.extract.v1   the events warehouse is refreshed nightly   data auditor
    features  churn.features.v1  the feature schema is v3                    data auditor  (needs extract)
    split     churn.split.v1     the holdout is ten percent of accounts      data auditor  (needs features)
    report    churn.report.v1    the dashboard reads the churn features      data auditor  (needs features)
    train     churn.train.v1     the GPU quota is 8 GPUs                     quota auditor (needs split)
    evaluate  churn.evaluate.v1  the holdout AUC must reach 0.80             data auditor  (needs train)
    publish   churn.publish.v1   the model registry accepts uploads          data auditor  (needs evaluate)

Both auditors read the project's world file (``[settings] world``). A cut GPU quota disproves
``train``'s ground, citing the submitted evidence that names the new quota; ``churn.train.small.v1``
is the worker to repair ``train`` onto.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextmesh import AuditContext, Plan, Project, RunContext, TaskRegistry, Verdict

DATA_AUDIT = "churn.audit.data.v1"
QUOTA_AUDIT = "churn.audit.quota.v1"
TASKS = (
    ("extract", "churn.extract.v1", DATA_AUDIT, (), "the events warehouse is refreshed nightly"),
    ("features", "churn.features.v1", DATA_AUDIT, ("extract",), "the feature schema is v3"),
    ("split", "churn.split.v1", DATA_AUDIT, ("features",), "the holdout is ten percent of accounts"),
    ("report", "churn.report.v1", DATA_AUDIT, ("features",), "the dashboard reads the churn features"),
    ("train", "churn.train.v1", QUOTA_AUDIT, ("split",), "the GPU quota is 8 GPUs"),
    ("evaluate", "churn.evaluate.v1", DATA_AUDIT, ("train",), "the holdout AUC must reach 0.80"),
    ("publish", "churn.publish.v1", DATA_AUDIT, ("evaluate",), "the model registry accepts uploads"),
)


def declare(plan: Plan) -> None:
    """The seven tasks, each on the one statement about the world it assumes."""
    for name, worker, auditor, needs, assumes in TASKS:
        plan.task(name, worker_key=worker, auditor_key=auditor, needs=list(needs), assumes=assumes, produces=[name])


def _train(gpus: int) -> Any:
    def train(ctx: RunContext) -> dict[str, Any]:
        rows = ctx.inputs["split"]["train_rows"]
        return {"gpus": gpus, "epochs": 12 if gpus >= 8 else 20, "rows": rows}

    return train


def build_registry(project: Project) -> TaskRegistry:
    """Workers that compute small deterministic results; two auditors reading the world file."""
    world_file: Path = project.path("world")
    registry = TaskRegistry()
    registry.register_worker("churn.extract.v1", lambda ctx: {"events": 120_000})
    registry.register_worker("churn.features.v1", lambda ctx: {"schema": "v3", "rows": ctx.inputs["extract"]["events"]})
    registry.register_worker("churn.split.v1", lambda ctx: {"train_rows": 108_000, "holdout_rows": 12_000})
    registry.register_worker("churn.report.v1", lambda ctx: {"panel": "churn-features"})
    registry.register_worker("churn.train.v1", _train(8))
    registry.register_worker("churn.train.small.v1", _train(4))
    registry.register_worker("churn.evaluate.v1", lambda ctx: {"auc": 0.83, "epochs": ctx.inputs["train"]["epochs"]})
    registry.register_worker("churn.publish.v1", lambda ctx: {"model": "churn@nightly"})

    def world() -> dict[str, Any]:
        data: dict[str, Any] = json.loads(world_file.read_text(encoding="utf-8"))
        return data

    def cite(ctx: AuditContext, value: str) -> str | None:
        return next((e.id for e in ctx.evidence if value.lower() in e.text.lower()), None)

    @registry.auditor(QUOTA_AUDIT)
    def quota(ctx: AuditContext) -> Verdict:
        gpus = int(world()["gpu_quota"])
        if ctx.output["gpus"] <= gpus:
            return ctx.ok(f"{ctx.output['gpus']} GPUs fit the quota of {gpus}")
        return ctx.disproved(f"the GPU quota is {gpus} GPUs, not {ctx.output['gpus']}", cite=cite(ctx, f"{gpus} GPUs"))

    @registry.auditor(DATA_AUDIT)
    def data(ctx: AuditContext) -> Verdict:
        facts = world()
        if ctx.task == "features" and facts["feature_schema"] != ctx.output["schema"]:
            schema = facts["feature_schema"]
            return ctx.disproved(f"the feature schema is {schema}", cite=cite(ctx, f"schema {schema}"))
        if ctx.task == "publish" and not facts["registry_accepts_uploads"]:
            return ctx.fail("the model registry refused the upload")
        return ctx.ok(f"{ctx.assumption}: holds")

    return registry

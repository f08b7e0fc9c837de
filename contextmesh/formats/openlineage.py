"""The run ledger as OpenLineage RunEvents (spec 2-0-2): lineage other tools read, including why a run re-ran.

Every task run the ledger records — an ``executed`` entry (the run completed) or a ``failed`` one —
becomes two events of one run: ``START`` then ``COMPLETE`` or ``FAIL``. The job is
``<namespace>`` / ``<plan>.<task>``; the inputs are the graph entities the run's decision needs
(those produced by the decisions it ``depends_on``), the outputs the entities it ``produces``, each a
dataset named by the entity's graph id. Run facets:

* ``contextmesh_ledger`` — the ledger entry behind the event (its ``seq``, ``round``, ``event``,
  ``digest``, the worker key): a proof bundle of that entry (``docs/formats/proofs-v1.md``) proves it.
* ``contextmesh_disproof`` — on a run that re-ran because a disproof made its previous decision
  fall: the rejected assumption, the evidence, the auditor and reason, the fallen decision and its
  reason chain, and the ledger ``seq`` of the disproof. No other lineage producer records this.
* ``parent`` (standard) — the Prefect flow run, when the orchestrator ran the task.
* ``errorMessage`` (standard) — on ``FAIL``, the entry's detail.

The ledger records no clock (it is byte-identical across runs), so event times are ``started_at``
plus the entry's position: ``START`` of entry *s* at ``2(s − 1)`` ms, its end at ``2(s − 1) + 1`` ms.
They order the events as the ledger does; they are not wall-clock times. A run's id is the Prefect
task run's id when there is one, else a UUID derived from the namespace, plan and ``seq``: the same
export gives the same ids. The custom facets' JSON schema is ``docs/formats/openlineage-facets-v1.json``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import metadata
from typing import Any

from contextmesh.core.errors import InputError
from contextmesh.core.graph import ContextGraph
from contextmesh.formats.run_ledger import LedgerEntry, RunLedger

__all__ = [
    "DISPROOF_FACET_SCHEMA_URL",
    "EVENT_SCHEMA_URL",
    "LEDGER_FACET_SCHEMA_URL",
    "PRODUCER",
    "openlineage_events",
]

EVENT_SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
PARENT_FACET_SCHEMA_URL = "https://openlineage.io/spec/facets/1-2-0/ParentRunFacet.json#/$defs/ParentRunFacet"
ERROR_FACET_SCHEMA_URL = (
    "https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet"
)
FACETS_SCHEMA_ID = "urn:contextmesh:openlineage-facets:1"  # the $id of docs/formats/openlineage-facets-v1.json
DISPROOF_FACET_SCHEMA_URL = f"{FACETS_SCHEMA_ID}#/$defs/ContextmeshDisproofRunFacet"
LEDGER_FACET_SCHEMA_URL = f"{FACETS_SCHEMA_ID}#/$defs/ContextmeshLedgerRunFacet"


def _version() -> str:
    try:
        return metadata.version("contextmesh")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "0"


PRODUCER = f"urn:contextmesh:{_version()}"
# Run ids the ledger does not carry are name-based (RFC 9562 version 5) under this namespace.
_RUN_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:contextmesh:openlineage:run")
_RUNS = ("executed", "failed")


@dataclass(frozen=True)
class _Fall:
    """Why a task's decision fell: the disproof entry and the task's own invalidated entry."""

    disproof: LedgerEntry
    invalidated: LedgerEntry


def openlineage_events(
    ledger: RunLedger,
    graph: ContextGraph,
    *,
    plan: str,
    namespace: str,
    started_at: datetime,
    producer: str = PRODUCER,
) -> list[dict[str, Any]]:
    """Every task run of ``ledger`` as OpenLineage RunEvents, in ledger order."""
    if started_at.tzinfo is None or started_at.utcoffset() is None:
        raise InputError(
            "started_at", repr(started_at), "event times are written with a time zone: pass an aware datetime"
        )
    events: list[dict[str, Any]] = []
    fallen: dict[str, _Fall] = {}  # task -> why its last decision fell, until it runs again
    disproof: LedgerEntry | None = None
    for entry in ledger.entries:
        if entry.event == "disproved":
            disproof = entry
        elif entry.event == "fact_changed":
            disproof = None  # what falls next fell to a changed fact (ADR 0018), not to the last disproof
        elif entry.event == "invalidated" and entry.task is not None and disproof is not None:
            fallen[entry.task] = _Fall(disproof, entry)
        elif entry.event in _RUNS and entry.task is not None:
            fall = fallen.pop(entry.task, None)
            events.extend(_run_events(entry, fall, graph, plan, namespace, started_at, producer))
    return events


def _run_events(
    entry: LedgerEntry,
    fall: _Fall | None,
    graph: ContextGraph,
    plan: str,
    namespace: str,
    started_at: datetime,
    producer: str,
) -> list[dict[str, Any]]:
    assert entry.task is not None
    facets = _run_facets(entry, fall, plan, namespace, producer)
    run_id = _run_id(entry, namespace, plan)
    job = {"namespace": namespace, "name": f"{plan}.{entry.task}"}
    inputs, outputs = _datasets(graph, entry.decision_id, namespace)
    start = started_at + timedelta(milliseconds=2 * (entry.seq - 1))
    end_facets = dict(facets)
    if entry.event == "failed":
        end_facets["errorMessage"] = {
            "_producer": producer,
            "_schemaURL": ERROR_FACET_SCHEMA_URL,
            "message": entry.detail,
            "programmingLanguage": "PYTHON",
        }
    return [
        _event("START", start, run_id, facets, job, inputs, outputs, producer),
        _event(
            "COMPLETE" if entry.event == "executed" else "FAIL",
            start + timedelta(milliseconds=1),
            run_id,
            end_facets,
            job,
            inputs,
            outputs,
            producer,
        ),
    ]


def _event(
    kind: str,
    at: datetime,
    run_id: str,
    facets: dict[str, Any],
    job: dict[str, str],
    inputs: list[dict[str, str]],
    outputs: list[dict[str, str]],
    producer: str,
) -> dict[str, Any]:
    return {
        "eventType": kind,
        "eventTime": at.isoformat(timespec="milliseconds"),
        "producer": producer,
        "schemaURL": EVENT_SCHEMA_URL,
        "run": {"runId": run_id, "facets": facets},
        "job": dict(job),
        "inputs": [dict(d) for d in inputs],
        "outputs": [dict(d) for d in outputs],
    }


def _canonical_uuid(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        parsed = uuid.UUID(text)
    except ValueError:
        return None
    return str(parsed) if str(parsed) == text else None


def _run_id(entry: LedgerEntry, namespace: str, plan: str) -> str:
    given = _canonical_uuid(entry.run.get("task_run_id")) if entry.run else None
    return given or str(uuid.uuid5(_RUN_NAMESPACE, f"{namespace}\n{plan}\n{entry.seq}"))


def _run_facets(entry: LedgerEntry, fall: _Fall | None, plan: str, namespace: str, producer: str) -> dict[str, Any]:
    facets: dict[str, Any] = {
        "contextmesh_ledger": {
            "_producer": producer,
            "_schemaURL": LEDGER_FACET_SCHEMA_URL,
            "seq": entry.seq,
            "round": entry.round,
            "event": entry.event,
            "digest": entry.digest,
            "workerKey": entry.key,
            "decision": entry.decision_id,
        }
    }
    flow_run = _canonical_uuid(entry.run.get("flow_run_id")) if entry.run else None
    if flow_run is not None:
        facets["parent"] = {
            "_producer": producer,
            "_schemaURL": PARENT_FACET_SCHEMA_URL,
            "run": {"runId": flow_run},
            "job": {"namespace": namespace, "name": plan},
        }
    if fall is not None:
        facets["contextmesh_disproof"] = _disproof_facet(fall, producer)
    return facets


def _disproof_facet(fall: _Fall, producer: str) -> dict[str, Any]:
    receipt = fall.disproof.receipt or {}
    found = receipt.get("ground")
    ground: dict[str, Any] = found if isinstance(found, dict) else {}
    return {
        "_producer": producer,
        "_schemaURL": DISPROOF_FACET_SCHEMA_URL,
        "rejectedAssumption": {"id": ground.get("assumption_id"), "statement": ground.get("statement")},
        "evidence": {"id": receipt.get("evidence_id")},
        "auditor": fall.disproof.key,
        "reason": fall.disproof.detail,
        "fallenDecision": fall.invalidated.decision_id,
        "reasonChain": fall.invalidated.detail,
        "disproofSeq": fall.disproof.seq,
        "blastRadius": receipt.get("blast_radius") if type(receipt.get("blast_radius")) is int else None,
    }


def _datasets(
    graph: ContextGraph, decision: str | None, namespace: str
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(inputs, outputs): the entities the decision's upstream decisions produce, and those it produces."""
    if decision is None or decision not in graph.nodes:
        return [], []
    outputs = _produced(graph, decision)
    inputs: list[str] = []
    for edge in graph.out_edges(decision, ("depends_on",), live_only=False):
        if edge.dst in graph.nodes and graph.nodes[edge.dst].type == "decision":
            inputs.extend(entity for entity in _produced(graph, edge.dst) if entity not in inputs)
    return (
        [{"namespace": namespace, "name": entity} for entity in inputs],
        [{"namespace": namespace, "name": entity} for entity in outputs],
    )


def _produced(graph: ContextGraph, decision: str) -> list[str]:
    return [edge.dst for edge in graph.out_edges(decision, ("produces",), live_only=False)]

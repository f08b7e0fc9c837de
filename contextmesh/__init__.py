"""ContextMesh: a typed context graph that keeps why things hold, and what to redo when they stop.

This module is the public API: every name in ``__all__`` is what a user writes code against, and
``docs/api.md`` documents each one with an example. Names resolve on first use (PEP 562
``__getattr__``), so ``import contextmesh`` costs this file and nothing else — no graph library, no
Prefect, no MCP SDK — and a program pays only for the layers it touches. Type checkers and IDEs
read the ``TYPE_CHECKING`` imports below, which name the same objects as :data:`_EXPORTS` (a test
holds the two equal).

Orchestration (Prefect) and the MCP server are not re-exported: import them by path,
``contextmesh.orchestration`` and ``contextmesh.mcp``.
"""

from __future__ import annotations

import importlib

# typing.TYPE_CHECKING without importing typing (it brings some thirty modules); mypy and the IDEs
# read any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from contextmesh.belief.assumptions import Assumptions
    from contextmesh.belief.decisions import DecisionLog
    from contextmesh.belief.evidence import EvidenceIntakeError
    from contextmesh.belief.evidence import submit as submit_evidence
    from contextmesh.belief.invalidation import InvalidationReport, blast_radius
    from contextmesh.belief.temporal import TemporalError
    from contextmesh.core.canonical import file_bytes as json_bytes
    from contextmesh.core.canonical import loads as parse_json
    from contextmesh.core.errors import (
        BeliefError,
        CanonicalError,
        ContextMeshError,
        ExecutionError,
        IdentityError,
        InputError,
        NotFoundError,
        OntologyError,
        ProofError,
        SessionError,
        SnapshotError,
    )
    from contextmesh.core.graph import ContextGraph
    from contextmesh.core.home import contextmesh_home
    from contextmesh.core.ids import slug
    from contextmesh.core.model import AssumptionRecord, EdgeRecord, NodeRecord, Provenance
    from contextmesh.core.ontology import ONTOLOGY, EdgeType, NodeType, Ontology
    from contextmesh.execution.boundary import AuditContractError, TaskCodeError
    from contextmesh.execution.calls import Executor, TaskTimeoutError
    from contextmesh.execution.context import AuditContext, EvidenceView, RunContext, Verdict
    from contextmesh.execution.in_process import InProcessExecutor
    from contextmesh.execution.plan import Plan
    from contextmesh.execution.reports import RecheckReport, RoundReport
    from contextmesh.execution.rerun import RerunError, RerunPreview
    from contextmesh.execution.task_registry import RegistryError, TaskRegistry
    from contextmesh.execution.watch import WatchContext, WatchError
    from contextmesh.formats.signed_note import NoteSigner, NoteVerifier
    from contextmesh.knowledge.corpus import Corpus, CorpusError, Sidecar, load_corpus, load_sidecar
    from contextmesh.knowledge.decoding import DocumentError
    from contextmesh.knowledge.embed import Embedder, HashedEmbedder
    from contextmesh.knowledge.flat_baseline import FlatBaseline
    from contextmesh.knowledge.folder import read_folder
    from contextmesh.knowledge.pipeline import BuildResult, Chunk
    from contextmesh.knowledge.pipeline import build as build_graph
    from contextmesh.knowledge.sentence_model import SentenceModelEmbedder, embedder_for
    from contextmesh.knowledge.traverse import Walk, Walker, WalkerSettings
    from contextmesh.project.config import ProjectError
    from contextmesh.project.embedding import EmbedderMismatchError
    from contextmesh.project.project import Project, find_project, load_project
    from contextmesh.project.scaffold import init_project
    from contextmesh.session.commit import CommitConflictError
    from contextmesh.session.files import SessionFileError
    from contextmesh.session.lock import SessionLockedError
    from contextmesh.session.plan_check import NoPlanError
    from contextmesh.session.session import Session

__version__ = "0.2.0"

__all__ = [
    "ONTOLOGY",
    "AssumptionRecord",
    "Assumptions",
    "AuditContext",
    "AuditContractError",
    "BeliefError",
    "BuildResult",
    "CanonicalError",
    "Chunk",
    "CommitConflictError",
    "ContextGraph",
    "ContextMeshError",
    "Corpus",
    "CorpusError",
    "DecisionLog",
    "DocumentError",
    "EdgeRecord",
    "EdgeType",
    "Embedder",
    "EmbedderMismatchError",
    "EvidenceIntakeError",
    "EvidenceView",
    "ExecutionError",
    "Executor",
    "FlatBaseline",
    "HashedEmbedder",
    "IdentityError",
    "InProcessExecutor",
    "InputError",
    "InvalidationReport",
    "NoPlanError",
    "NodeRecord",
    "NodeType",
    "NotFoundError",
    "NoteSigner",
    "NoteVerifier",
    "Ontology",
    "OntologyError",
    "Plan",
    "Project",
    "ProjectError",
    "ProofError",
    "Provenance",
    "RecheckReport",
    "RegistryError",
    "RerunError",
    "RerunPreview",
    "RoundReport",
    "RunContext",
    "SentenceModelEmbedder",
    "Session",
    "SessionError",
    "SessionFileError",
    "SessionLockedError",
    "Sidecar",
    "SnapshotError",
    "TaskCodeError",
    "TaskRegistry",
    "TaskTimeoutError",
    "TemporalError",
    "Verdict",
    "Walk",
    "Walker",
    "WalkerSettings",
    "WatchContext",
    "WatchError",
    "blast_radius",
    "build_graph",
    "contextmesh_home",
    "embedder_for",
    "find_project",
    "init_project",
    "json_bytes",
    "load_corpus",
    "load_project",
    "load_sidecar",
    "parse_json",
    "read_folder",
    "slug",
    "submit_evidence",
]

# Public name -> (module, attribute). The only route from a name to its object at run time.
_EXPORTS: dict[str, tuple[str, str]] = {
    "ONTOLOGY": ("contextmesh.core.ontology", "ONTOLOGY"),
    "AssumptionRecord": ("contextmesh.core.model", "AssumptionRecord"),
    "Assumptions": ("contextmesh.belief.assumptions", "Assumptions"),
    "AuditContext": ("contextmesh.execution.context", "AuditContext"),
    "AuditContractError": ("contextmesh.execution.boundary", "AuditContractError"),
    "BeliefError": ("contextmesh.core.errors", "BeliefError"),
    "BuildResult": ("contextmesh.knowledge.pipeline", "BuildResult"),
    "CanonicalError": ("contextmesh.core.errors", "CanonicalError"),
    "Chunk": ("contextmesh.knowledge.pipeline", "Chunk"),
    "CommitConflictError": ("contextmesh.session.commit", "CommitConflictError"),
    "ContextGraph": ("contextmesh.core.graph", "ContextGraph"),
    "ContextMeshError": ("contextmesh.core.errors", "ContextMeshError"),
    "Corpus": ("contextmesh.knowledge.corpus", "Corpus"),
    "CorpusError": ("contextmesh.knowledge.corpus", "CorpusError"),
    "DecisionLog": ("contextmesh.belief.decisions", "DecisionLog"),
    "DocumentError": ("contextmesh.knowledge.decoding", "DocumentError"),
    "EdgeRecord": ("contextmesh.core.model", "EdgeRecord"),
    "EdgeType": ("contextmesh.core.ontology", "EdgeType"),
    "EvidenceIntakeError": ("contextmesh.belief.evidence", "EvidenceIntakeError"),
    "EvidenceView": ("contextmesh.execution.context", "EvidenceView"),
    "ExecutionError": ("contextmesh.core.errors", "ExecutionError"),
    "Executor": ("contextmesh.execution.calls", "Executor"),
    "FlatBaseline": ("contextmesh.knowledge.flat_baseline", "FlatBaseline"),
    "HashedEmbedder": ("contextmesh.knowledge.embed", "HashedEmbedder"),
    "Embedder": ("contextmesh.knowledge.embed", "Embedder"),
    "EmbedderMismatchError": ("contextmesh.project.embedding", "EmbedderMismatchError"),
    "SentenceModelEmbedder": ("contextmesh.knowledge.sentence_model", "SentenceModelEmbedder"),
    "embedder_for": ("contextmesh.knowledge.sentence_model", "embedder_for"),
    "IdentityError": ("contextmesh.core.errors", "IdentityError"),
    "InProcessExecutor": ("contextmesh.execution.in_process", "InProcessExecutor"),
    "InputError": ("contextmesh.core.errors", "InputError"),
    "InvalidationReport": ("contextmesh.belief.invalidation", "InvalidationReport"),
    "NodeRecord": ("contextmesh.core.model", "NodeRecord"),
    "NodeType": ("contextmesh.core.ontology", "NodeType"),
    "NoPlanError": ("contextmesh.session.plan_check", "NoPlanError"),
    "NoteSigner": ("contextmesh.formats.signed_note", "NoteSigner"),
    "NoteVerifier": ("contextmesh.formats.signed_note", "NoteVerifier"),
    "NotFoundError": ("contextmesh.core.errors", "NotFoundError"),
    "Ontology": ("contextmesh.core.ontology", "Ontology"),
    "OntologyError": ("contextmesh.core.errors", "OntologyError"),
    "Plan": ("contextmesh.execution.plan", "Plan"),
    "Project": ("contextmesh.project.project", "Project"),
    "ProjectError": ("contextmesh.project.config", "ProjectError"),
    "Provenance": ("contextmesh.core.model", "Provenance"),
    "RecheckReport": ("contextmesh.execution.reports", "RecheckReport"),
    "RegistryError": ("contextmesh.execution.task_registry", "RegistryError"),
    "RoundReport": ("contextmesh.execution.reports", "RoundReport"),
    "RunContext": ("contextmesh.execution.context", "RunContext"),
    "Session": ("contextmesh.session.session", "Session"),
    "SessionError": ("contextmesh.core.errors", "SessionError"),
    "SessionFileError": ("contextmesh.session.files", "SessionFileError"),
    "SessionLockedError": ("contextmesh.session.lock", "SessionLockedError"),
    "Sidecar": ("contextmesh.knowledge.corpus", "Sidecar"),
    "ProofError": ("contextmesh.core.errors", "ProofError"),
    "SnapshotError": ("contextmesh.core.errors", "SnapshotError"),
    "TaskCodeError": ("contextmesh.execution.boundary", "TaskCodeError"),
    "TaskRegistry": ("contextmesh.execution.task_registry", "TaskRegistry"),
    "TaskTimeoutError": ("contextmesh.execution.calls", "TaskTimeoutError"),
    "TemporalError": ("contextmesh.belief.temporal", "TemporalError"),
    "Verdict": ("contextmesh.execution.context", "Verdict"),
    "Walk": ("contextmesh.knowledge.traverse", "Walk"),
    "WatchContext": ("contextmesh.execution.watch", "WatchContext"),
    "WatchError": ("contextmesh.execution.watch", "WatchError"),
    "RerunError": ("contextmesh.execution.rerun", "RerunError"),
    "RerunPreview": ("contextmesh.execution.rerun", "RerunPreview"),
    "Walker": ("contextmesh.knowledge.traverse", "Walker"),
    "WalkerSettings": ("contextmesh.knowledge.traverse", "WalkerSettings"),
    "blast_radius": ("contextmesh.belief.invalidation", "blast_radius"),
    "build_graph": ("contextmesh.knowledge.pipeline", "build"),
    "contextmesh_home": ("contextmesh.core.home", "contextmesh_home"),
    "find_project": ("contextmesh.project.project", "find_project"),
    "init_project": ("contextmesh.project.scaffold", "init_project"),
    "json_bytes": ("contextmesh.core.canonical", "file_bytes"),
    "load_corpus": ("contextmesh.knowledge.corpus", "load_corpus"),
    "load_project": ("contextmesh.project.project", "load_project"),
    "load_sidecar": ("contextmesh.knowledge.corpus", "load_sidecar"),
    "parse_json": ("contextmesh.core.canonical", "loads"),
    "read_folder": ("contextmesh.knowledge.folder", "read_folder"),
    "slug": ("contextmesh.core.ids", "slug"),
    "submit_evidence": ("contextmesh.belief.evidence", "submit"),
}

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there, not Any

    def __getattr__(name: str) -> Any:
        """Import the module behind a public name on first use, and keep the object here."""
        try:
            module, attribute = _EXPORTS[name]
        except KeyError:
            raise AttributeError(f"module 'contextmesh' has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

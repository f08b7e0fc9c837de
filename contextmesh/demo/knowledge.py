"""Build the demo world: the corpus graph, its recorded decisions and assumptions, walk rounds.

``build_world`` is deterministic: the same rounds give the same graph and resolver bytes in any
process. ``break_sizing_assumption`` submits the postmortem's observation as evidence and rejects
the sizing assumption through it — the demo's selective invalidation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.belief.evidence import submit
from contextmesh.belief.invalidation import InvalidationReport
from contextmesh.core.canonical import loads
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.core.model import Provenance
from contextmesh.demo import CORPUS_PATH, QUESTIONS_PATH, SIDECAR_PATH
from contextmesh.knowledge.corpus import Corpus, Sidecar, load_corpus, load_sidecar
from contextmesh.knowledge.embed import HashedEmbedder
from contextmesh.knowledge.pipeline import BuildResult, Progress, build
from contextmesh.knowledge.traverse import FlatBaseline, Walker, WalkerSettings

__all__ = [
    "REPLACEMENT",
    "DemoWorld",
    "break_in_graph",
    "break_sizing_assumption",
    "build_world",
    "load_demo",
    "round_questions",
]

REPLACEMENT = "Shard count follows the largest tenant's share of the corpus"


@dataclass
class DemoWorld:
    """Everything the demo built, kept together for the CLI, sessions and the dashboard."""

    corpus: Corpus
    sidecar: Sidecar
    result: BuildResult
    walker: Walker
    assumption_ids: dict[str, str] = field(default_factory=dict)
    decision_ids: dict[str, str] = field(default_factory=dict)
    walk_rounds: int = 0

    @property
    def graph(self) -> ContextGraph:
        """The demo graph."""
        return self.result.graph


def load_demo() -> tuple[Corpus, Sidecar]:
    """The bundled corpus and sidecar, checked."""
    corpus = load_corpus(CORPUS_PATH)
    return corpus, load_sidecar(SIDECAR_PATH, corpus)


def round_questions() -> list[str]:
    """The fixed question mix each walk round asks."""
    data = loads(QUESTIONS_PATH.read_bytes())
    return [str(q) for q in data["rounds"]]


def record_sidecar(world: DemoWorld) -> None:
    """Record the sidecar's assumptions and decisions through the belief APIs, with provenance."""
    graph = world.result.graph
    ledger = Assumptions(graph)
    log = DecisionLog(graph)
    sources = {n.attrs.get("key"): n.id for n in graph.by_type("source")}
    claims = {n.attrs.get("key"): n.id for n in graph.by_type("claim")}
    for assumption in world.sidecar.assumptions:
        world.assumption_ids[assumption.key] = ledger.assume(assumption.statement, created_by="demo").id
    for spec in world.sidecar.decisions:
        record = log.decide(
            spec.title,
            rationale=spec.rationale,
            provenance=Provenance(source_id=sources[spec.source], extractor="sidecar", recorded_at_build=graph.build),
            id=slug(f"demo|{spec.key}", "decision"),
            rests_on=[claims[key] for key in spec.rests_on],
            assumptions=[world.assumption_ids[key] for key in spec.assumptions],
            needs=[world.decision_ids[key] for key in spec.needs],
            produces=[slug(name, "entity") for name in spec.produces],
            cites=[sources[key] for key in spec.cites],
            supersedes=None if spec.supersedes is None else world.decision_ids[spec.supersedes],
        )
        world.decision_ids[spec.key] = record.id
    embedder = HashedEmbedder()
    for node in graph:
        if node.embedding is None:
            node.embedding = embedder.embed(node.label)


def build_world(
    rounds: int = 8, *, progress: Progress | None = None, settings: WalkerSettings | None = None
) -> DemoWorld:
    """Build the demo graph, record its sidecar and run ``rounds`` walk rounds."""
    corpus, sidecar = load_demo()
    embedder = HashedEmbedder()
    result = build(corpus, embedder=embedder, progress=progress)
    walker = Walker(
        result.graph, result.resolver, embedder=embedder, settings=settings, flat=FlatBaseline(result.chunks, embedder)
    )
    world = DemoWorld(corpus, sidecar, result, walker)
    record_sidecar(world)
    run_rounds(world, rounds)
    return world


def run_rounds(world: DemoWorld, rounds: int) -> None:
    """Ask the fixed question mix ``rounds`` times (walk telemetry, dead ends, hop histogram)."""
    questions = round_questions()
    for _ in range(rounds):
        for question in questions:
            world.walker.ask(question)
        world.walk_rounds += 1


def break_sizing_assumption(world: DemoWorld, *, dry_run: bool = False) -> InvalidationReport:
    """Reject the sizing assumption through the postmortem's observation (or only report it)."""
    return break_in_graph(world.result.graph, world.sidecar, dry_run=dry_run)


def break_in_graph(graph: ContextGraph, sidecar: Sidecar, *, dry_run: bool = False) -> InvalidationReport:
    """The demo's break on any graph built from the demo corpus (a saved session's, too)."""
    ledger = Assumptions(graph)
    statement = next(a.statement for a in sidecar.assumptions if a.key == sidecar.break_assumption)
    target = slug(statement, "assumption")
    if dry_run:
        return ledger.blast_radius(target)
    source_id = next(n.id for n in graph.by_type("source") if n.attrs.get("key") == sidecar.break_source)
    evidence = submit(graph, sidecar.break_evidence, source_id, external_id="postmortem-233/observation-1")
    return ledger.reject(target, evidence_id=evidence.node.id, replacement=REPLACEMENT, created_by="demo")

"""Build the demo world: the corpus graph, its recorded decisions and assumptions, walk rounds.

``build_world`` is deterministic: the same rounds give the same graph and resolver bytes in any
process. ``break_sizing_assumption`` submits the postmortem's observation as evidence and rejects
the sizing assumption through it — the demo's selective invalidation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from contextmesh import (
    Assumptions,
    BuildResult,
    Chunk,
    ContextGraph,
    Corpus,
    DecisionLog,
    Embedder,
    FlatBaseline,
    HashedEmbedder,
    InvalidationReport,
    Provenance,
    Sidecar,
    Walker,
    WalkerSettings,
    build_graph,
    load_corpus,
    load_sidecar,
    parse_json,
    slug,
    submit_evidence,
)
from contextmesh.demo import BREAK_PATH, CORPUS_PATH, QUESTIONS_PATH, SIDECAR_PATH
from contextmesh.demo.scenario import BreakScenario, load_break

__all__ = [
    "DEMO_CORPUS",
    "REPLACEMENT",
    "DemoWorld",
    "break_in_graph",
    "break_sizing_assumption",
    "build_world",
    "demo_flat",
    "load_demo",
    "load_demo_break",
    "round_questions",
]

DEMO_CORPUS = "contextmesh.demo"  # the corpus label of a session built from the bundled corpus
REPLACEMENT = "Shard count follows the largest tenant's share of the corpus"
EVIDENCE_ID = "postmortem-233/observation-1"
Progress = Callable[[str, int, int], None]  # (stage, done, total), as build_graph reports it


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


def demo_flat() -> FlatBaseline:
    """Flat top-k over the bundled corpus's paragraphs (the walk's comparison figure)."""
    corpus, _ = load_demo()
    chunks = [Chunk(span.key, source.key, span.chunk) for source, span in corpus.spans()]
    return FlatBaseline(chunks, HashedEmbedder())


def load_demo_break(corpus: Corpus | None = None, sidecar: Sidecar | None = None) -> BreakScenario:
    """The demo's break scenario, checked against the bundled corpus and sidecar (or the ones given)."""
    if corpus is None or sidecar is None:
        corpus, sidecar = load_demo()
    return load_break(BREAK_PATH, corpus, sidecar)


def round_questions() -> list[str]:
    """The fixed question mix each walk round asks."""
    data = parse_json(QUESTIONS_PATH.read_bytes())
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
    embedder = world.walker.embedder  # the one that built the graph: one embedder's vectors per graph
    for node in graph:
        if node.embedding is None:
            node.embedding = embedder.embed(node.label)


def build_world(
    rounds: int = 8,
    *,
    progress: Progress | None = None,
    settings: WalkerSettings | None = None,
    embedder: Embedder | None = None,
) -> DemoWorld:
    """Build the demo graph (with ``embedder``, default hashed), record its sidecar and run ``rounds`` walk rounds."""
    corpus, sidecar = load_demo()
    embedder = embedder or HashedEmbedder()
    result = build_graph(corpus, embedder=embedder, progress=progress)
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
    return break_in_graph(world.result.graph, dry_run=dry_run, corpus=world.corpus, sidecar=world.sidecar)


def break_in_graph(
    graph: ContextGraph, *, dry_run: bool = False, corpus: Corpus | None = None, sidecar: Sidecar | None = None
) -> InvalidationReport:
    """The demo's break on any graph built from the demo corpus (a saved session's, too)."""
    if corpus is None or sidecar is None:
        corpus, sidecar = load_demo()
    scenario = load_demo_break(corpus, sidecar)
    ledger = Assumptions(graph)
    target = slug(scenario.statement(sidecar), "assumption")
    if dry_run:
        return ledger.blast_radius(target)
    source_id = next(n.id for n in graph.by_type("source") if n.attrs.get("key") == scenario.source)
    evidence = submit_evidence(graph, scenario.evidence_text, source_id, external_id=EVIDENCE_ID)
    return ledger.reject(target, evidence_id=evidence.node.id, replacement=REPLACEMENT, created_by="demo")

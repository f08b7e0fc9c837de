"""Assumptions: versioned records, rejected only through live evidence, never revived."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from belief_graphs import add_claim, add_evidence, add_source, snapshot

from contextmesh.belief.assumptions import Assumptions
from contextmesh.belief.decisions import DecisionLog
from contextmesh.core.errors import BeliefError, NotFoundError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ids import slug
from contextmesh.core.model import Provenance
from contextmesh.formats.graph_file import dump_graph, load_graph

# Two statements with the same slug id (same readable body, same 6-hex SHA-1 tail), found offline.
COLLIDING = ("thE CAChe is warm", "The CAcHE Is Warm")


class World:
    """A graph with a source, a claim, a decision on assumption A, and evidence against A."""

    def __init__(self) -> None:
        self.graph = ContextGraph()
        self.ledger = Assumptions(self.graph)
        self.source = add_source(self.graph).id
        self.claim = add_claim(self.graph, "argon2 is recommended", self.source).id
        self.a = self.ledger.assume("argon2 is available everywhere").id
        self.decision = (
            DecisionLog(self.graph)
            .decide(
                "use argon2",
                rationale="recommended and available",
                provenance=Provenance(source_id=self.source),
                assumptions=[self.a],
                rests_on=[self.claim],
            )
            .id
        )
        self.evidence = add_evidence(self.graph, "argon2 missing on host 7").id


@pytest.fixture
def world() -> World:
    return World()


# -- assume -----------------------------------------------------------------------------------


def test_assuming_the_same_statement_again_returns_the_same_record_and_writes_nothing(world: World) -> None:
    before = snapshot(world.graph)
    again = world.ledger.assume("argon2 is available everywhere")
    assert again.id == world.a
    assert again == world.ledger.record(world.a)
    assert snapshot(world.graph) == before


def test_a_new_assumption_is_active_version_one_mirrored_on_its_node(world: World) -> None:
    world.graph.next_build()
    record = world.ledger.assume("hosts have 4 GiB")
    assert record.id == slug("hosts have 4 GiB", "assumption")
    assert (record.status, record.version, record.created_at_build) == ("active", 1, 1)
    node = world.graph.node(record.id)
    assert (node.type, node.label, node.attrs) == ("assumption", "hosts have 4 GiB", {"status": "active", "version": 1})


def test_a_different_statement_under_the_same_slug_is_refused(world: World) -> None:
    first, second = COLLIDING
    assert first != second and slug(first, "assumption") == slug(second, "assumption")
    world.ledger.assume(first)
    before = snapshot(world.graph)
    with pytest.raises(BeliefError, match="refusing to treat"):
        world.ledger.assume(second)
    assert snapshot(world.graph) == before


# -- supersede --------------------------------------------------------------------------------


def test_supersede_marks_the_old_superseded_and_links_the_new_version(world: World) -> None:
    new = world.ledger.supersede(world.a, "argon2 is available on every linux host")
    old = world.ledger.record(world.a)
    assert old.status == "superseded"
    assert old.superseded_by == new.id
    assert world.graph.node(world.a).attrs["status"] == "superseded"
    assert (new.status, new.version, new.supersedes) == ("active", 2, world.a)
    assert world.graph.find_edge(new.id, "supersedes", world.a) is not None
    assert [r.id for r in world.ledger.lineage(new.id)] == [world.a, new.id]
    assert [r.id for r in world.ledger.lineage(world.a)] == [world.a, new.id]
    assert [r.id for r in world.ledger.active()] == [new.id]
    # Superseded is replacement, not falsity: nothing is invalidated.
    assert world.graph.is_live(world.a) and world.graph.is_live(world.decision)
    assert dump_graph(load_graph(dump_graph(world.graph))) == dump_graph(world.graph)


def test_lineage_over_three_versions_is_oldest_first(world: World) -> None:
    second = world.ledger.supersede(world.a, "argon2 on linux")
    third = world.ledger.supersede(second.id, "argon2 on linux x86")
    assert third.version == 3
    expected = [world.a, second.id, third.id]
    for member in expected:
        assert [r.id for r in world.ledger.lineage(member)] == expected


def test_superseding_a_superseded_assumption_is_refused(world: World) -> None:
    world.ledger.supersede(world.a, "argon2 on linux")
    before = snapshot(world.graph)
    with pytest.raises(BeliefError, match="not active"):
        world.ledger.supersede(world.a, "argon2 on bsd")
    assert snapshot(world.graph) == before


# -- reject: preconditions --------------------------------------------------------------------


def _missing(w: World) -> str:
    return "evidence:nothing-here"


def _a_claim(w: World) -> str:
    return w.claim


def _invalidated(w: World) -> str:
    node = add_evidence(w.graph, "an outdated benchmark")
    w.graph.invalidate([node.id])
    return node.id


def _pruned(w: World) -> str:
    node = add_evidence(w.graph, "a forgotten log line")
    w.graph.prune([node.id])
    return node.id


def _empty(w: World) -> str:
    return ""


@pytest.mark.parametrize(
    "evidence",
    [_missing, _a_claim, _invalidated, _pruned, _empty],
    ids=["missing", "not-evidence", "invalidated-evidence", "pruned-evidence", "empty-id"],
)
def test_reject_without_live_evidence_is_refused_and_writes_nothing(
    world: World, evidence: Callable[[World], str]
) -> None:
    evidence_id = evidence(world)
    before = snapshot(world.graph)
    with pytest.raises(BeliefError):
        world.ledger.reject(world.a, evidence_id=evidence_id)
    assert snapshot(world.graph) == before
    assert world.ledger.record(world.a).status == "active"


def test_reject_with_a_non_string_evidence_id_is_refused(world: World) -> None:
    before = snapshot(world.graph)
    with pytest.raises(BeliefError):
        world.ledger.reject(world.a, evidence_id=None)  # type: ignore[arg-type]
    assert snapshot(world.graph) == before


def test_rejecting_an_unknown_assumption_is_refused_and_writes_nothing(world: World) -> None:
    before = snapshot(world.graph)
    with pytest.raises(NotFoundError):
        world.ledger.reject("assumption:nope-000000", evidence_id=world.evidence)
    assert snapshot(world.graph) == before


def test_rejecting_a_rejected_assumption_is_refused_and_writes_nothing(world: World) -> None:
    world.ledger.reject(world.a, evidence_id=world.evidence)
    second = add_evidence(world.graph, "argon2 missing on host 9").id
    before = snapshot(world.graph)
    with pytest.raises(BeliefError, match="rejected, not active"):
        world.ledger.reject(world.a, evidence_id=second)
    assert snapshot(world.graph) == before


def test_rejecting_a_superseded_assumption_is_refused_and_writes_nothing(world: World) -> None:
    world.ledger.supersede(world.a, "argon2 on linux")
    before = snapshot(world.graph)
    with pytest.raises(BeliefError, match="superseded, not active"):
        world.ledger.reject(world.a, evidence_id=world.evidence)
    assert snapshot(world.graph) == before


def test_a_replacement_that_is_not_new_ground_is_refused_before_any_write(world: World) -> None:
    other = world.ledger.assume("redis is reachable").id
    world.ledger.supersede(other, "argon2 via libsodium")  # takes slug("argon2 via libsodium|v2")
    before = snapshot(world.graph)
    with pytest.raises(BeliefError, match="not new ground"):
        world.ledger.reject(world.a, evidence_id=world.evidence, replacement="argon2 via libsodium")
    assert snapshot(world.graph) == before
    assert world.ledger.record(world.a).status == "active"


def test_a_failure_inside_the_rejection_write_rolls_everything_back(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(world.graph)
    original = world.graph.sync_assumption
    calls = []

    def fail_once(record: object) -> None:
        calls.append(record)
        if len(calls) == 1:
            raise RuntimeError("disk full")
        original(record)  # type: ignore[arg-type]

    monkeypatch.setattr(world.graph, "sync_assumption", fail_once)
    with pytest.raises(RuntimeError, match="disk full"):
        world.ledger.reject(world.a, evidence_id=world.evidence)
    monkeypatch.undo()
    assert snapshot(world.graph) == before


# -- reject: effects --------------------------------------------------------------------------


def test_reject_writes_contradicts_status_build_mirror_and_invalidates_the_node(world: World) -> None:
    for _ in range(3):
        world.graph.next_build()
    report = world.ledger.reject(world.a, evidence_id=world.evidence)
    edge = world.graph.find_edge(world.evidence, "contradicts", world.a)
    assert edge is not None
    record = world.ledger.record(world.a)
    assert record.status == "rejected"
    assert record.rejected_at_build == 3
    assert world.evidence in record.evidence_ids
    node = world.graph.node(world.a)
    assert node.attrs == {"status": "rejected", "version": 1}
    assert node.invalidated
    assert report.evidence_id == world.evidence
    assert list(report.invalidated) == [world.decision]
    assert world.graph.is_live(world.evidence)
    assert world.graph.is_live(world.claim)


def test_a_rejected_assumption_is_never_active_again(world: World) -> None:
    world.ledger.reject(world.a, evidence_id=world.evidence)
    again = world.ledger.assume("argon2 is available everywhere")
    assert again.status == "rejected"
    assert world.a not in [r.id for r in world.ledger.active()]
    with pytest.raises(BeliefError):
        world.ledger.supersede(world.a, "argon2 somewhere")
    supports = world.graph.find_edge(world.claim, "supports", world.decision)
    assert supports is not None
    with pytest.raises(BeliefError):
        world.ledger.justifies(world.a, supports.id)
    with pytest.raises(BeliefError):
        DecisionLog(world.graph).decide(
            "retry argon2", rationale="again", provenance=Provenance(source_id=world.source), assumptions=[world.a]
        )
    loaded = load_graph(dump_graph(world.graph))
    assert loaded.assumptions[world.a].status == "rejected"
    assert not loaded.is_live(world.a)


def test_a_replacement_supersedes_the_rejected_assumption_which_stays_rejected(world: World) -> None:
    report = world.ledger.reject(world.a, evidence_id=world.evidence, replacement="bcrypt is available everywhere")
    assert report.replacement_id is not None
    new = world.ledger.record(report.replacement_id)
    old = world.ledger.record(world.a)
    assert (new.status, new.version, new.supersedes) == ("active", 2, world.a)
    assert new.statement == "bcrypt is available everywhere"
    assert (old.status, old.superseded_by) == ("rejected", new.id)
    assert world.graph.node(world.a).attrs["status"] == "rejected"
    assert world.graph.find_edge(new.id, "supersedes", world.a) is not None
    assert [r.id for r in world.ledger.lineage(new.id)] == [world.a, new.id]
    assert [r.id for r in world.ledger.lineage(world.a)] == [world.a, new.id]
    assert world.graph.is_live(new.id)
    assert new.id not in report.preserved_ids and new.id not in report.invalidated


def test_a_rejected_assumption_is_replaced_later_as_its_successor(world: World) -> None:
    world.ledger.reject(world.a, evidence_id=world.evidence)
    new = world.ledger.replace_rejected(world.a, "bcrypt is available everywhere", created_by="runner")
    old = world.ledger.record(world.a)
    assert (new.status, new.version, new.supersedes, new.created_by) == ("active", 2, world.a, "runner")
    assert (old.status, old.superseded_by) == ("rejected", new.id)
    assert world.graph.find_edge(new.id, "supersedes", world.a) is not None
    assert [r.id for r in world.ledger.lineage(world.a)] == [world.a, new.id]
    data = dump_graph(world.graph)
    assert dump_graph(load_graph(data)) == data


def test_replacing_ground_that_is_not_rejected_or_already_replaced_is_refused_and_writes_nothing(
    world: World,
) -> None:
    before = snapshot(world.graph)
    with pytest.raises(BeliefError, match="its status is active"):
        world.ledger.replace_rejected(world.a, "bcrypt is available everywhere")
    assert snapshot(world.graph) == before
    world.ledger.reject(world.a, evidence_id=world.evidence, replacement="bcrypt is available everywhere")
    before = snapshot(world.graph)
    with pytest.raises(BeliefError, match="already succeeds it"):
        world.ledger.replace_rejected(world.a, "scrypt is available everywhere")
    assert snapshot(world.graph) == before


@pytest.mark.parametrize("replacement", [None, "bcrypt is available everywhere"])
def test_the_file_still_loads_after_a_rejection(world: World, replacement: str | None) -> None:
    world.ledger.reject(world.a, evidence_id=world.evidence, replacement=replacement)
    data = dump_graph(world.graph)
    assert dump_graph(load_graph(data)) == data

"""One refusal for a session without a plan: the same sentence from a loaded session and from a directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextmesh.core.errors import ExecutionError
from contextmesh.core.graph import ContextGraph
from contextmesh.execution.plan import Plan
from contextmesh.knowledge.resolve import Resolver
from contextmesh.session.plan_check import NoPlanError, plan_of
from contextmesh.session.session import Session


def test_a_session_without_a_plan_is_refused_naming_where_and_what_to_do(tmp_path: Path) -> None:
    directory = tmp_path / "graph-only"
    session = Session.create(directory, Session(ContextGraph(), Resolver()))
    with pytest.raises(NoPlanError) as caught:
        plan_of(session, "mesh_recheck has nothing to run")
    assert str(caught.value) == f"{directory} holds no execution plan; mesh_recheck has nothing to run"
    assert isinstance(caught.value, ExecutionError) and caught.value.where == str(directory)
    with pytest.raises(NoPlanError, match=r"^this session holds no execution plan$"):
        plan_of(Session(ContextGraph(), Resolver()))


def test_a_session_with_a_plan_gives_its_plan() -> None:
    graph = ContextGraph()
    plan = Plan("p", graph)
    assert plan_of(Session(graph, Resolver(), runner=plan)) is plan

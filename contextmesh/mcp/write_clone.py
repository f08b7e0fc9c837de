"""The clone a controlled write mutates, and its commit (the commit-through-clone rule of
:mod:`contextmesh.mcp.write_tools`): the served session changes only once the clone has committed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from contextmesh.core.canonical import loads
from contextmesh.core.errors import SessionError
from contextmesh.execution.snapshot import dump_plan, restore_plan
from contextmesh.formats.graph_file import dump_graph, load_graph
from contextmesh.formats.resolver_file import dump_resolver, load_resolver
from contextmesh.formats.run_ledger import RunLedger
from contextmesh.mcp.read_tools import MeshToolError
from contextmesh.mcp.served_session import ServedSession
from contextmesh.session.commit import CommitConflictError
from contextmesh.session.lock import SessionLockedError
from contextmesh.session.session import Session

__all__ = ["ControlledWriteError", "clone_session", "commit_through_clone", "require_writable"]

_RETRIES = 3
T = TypeVar("T")


class ControlledWriteError(MeshToolError):
    """A controlled write was refused or could not commit; the served session is unchanged."""


def clone_session(session: Session) -> Session:
    """A lossless, independent copy: every companion restored from its own bytes."""
    graph = load_graph(dump_graph(session.graph))
    resolver = load_resolver(dump_resolver(session.resolver), graph)
    runner = None
    if session.runner is not None:
        if session.registry is None:
            raise ControlledWriteError("this session holds a plan but no registry; it cannot be cloned")
        ledger = RunLedger.load(session.runner.ledger.dump(), expect_head=session.runner.ledger.head)
        runner = restore_plan(
            loads(dump_plan(session.runner)),
            graph,
            session.registry,
            ledger=ledger,
            executor=session.runner.executor,
        )
    clone = replace(session, graph=graph, resolver=resolver, runner=runner)  # every other field as it is
    session.carry_journal(clone)  # its commit journals what changed, not a snapshot (ADR 0020)
    clone.walker.walks = list(session.walker.walks)
    for counter in ("pending", "commits", "contended", "conflicts", "bytes_written"):
        setattr(clone, counter, getattr(session, counter))
    return clone


def commit_through_clone(
    served: ServedSession, mutate: Callable[[Session], tuple[T, bool]], *, retries: int = _RETRIES
) -> tuple[T, bool]:
    """Run ``mutate`` on a clone, commit it, and only then serve the clone.

    ``mutate`` returns ``(result, changed)``; an unchanged clone commits nothing. The result comes
    back with whether a generation was committed.
    """
    require_writable(served)
    served.drain()  # this server's commit in flight lands first, or the clone's commit would conflict with it
    base = served.session
    for attempt in range(retries + 1):
        clone = clone_session(base)
        result, changed = mutate(clone)
        if not changed:
            return result, False
        try:
            clone.commit()
        except CommitConflictError as exc:
            if attempt == retries:
                raise ControlledWriteError(f"the write conflicted {retries + 1} times and was dropped: {exc}") from None
            directory = clone.directory
            assert directory is not None  # write_refusal() let only a durable session through
            base = Session.load(directory, registry=base.registry, flat=base.flat, policy=base.policy)
            base.embedder = served.session.embedder  # the clone made from it embeds as the served session does
            base.walker.walks = served.session.walker.walks
            continue
        except SessionLockedError as exc:
            raise ControlledWriteError(f"the write was dropped; another writer holds the session: {exc}") from None
        except SessionError as exc:
            raise ControlledWriteError(f"session commit failed, the write was dropped: {exc}") from None
        served.adopt(clone)
        return result, True
    raise AssertionError("unreachable")  # pragma: no cover


def require_writable(served: ServedSession) -> None:
    refusal = served.write_refusal()
    if refusal is not None:
        raise ControlledWriteError(refusal)

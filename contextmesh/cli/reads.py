"""The commands that read a graph: schema, ask, health, export, session show|verify.

With no project and no session, ``ask``, ``health`` and ``export`` read the bundled example project's
graph built in memory (its extension's ``example``, through :mod:`contextmesh.project.bundled`).

Each handler takes the parsed arguments and returns ``(data for --json, text for a person)``.
Options that do not go together are refused here as usage errors, before any work.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from contextmesh.cli.failure import UsageError, writing
from contextmesh.cli.projects import Using, reader, using, writer
from contextmesh.core.errors import SessionError

if TYPE_CHECKING:
    from contextmesh.session.session import Session

__all__ = ["ask", "export", "health", "schema", "session_show", "session_verify"]


def schema(_: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh schema``: the ontology GRAPH.md defines."""
    from contextmesh.core.ontology import ONTOLOGY, graph_md_path  # noqa: PLC0415

    data: dict[str, Any] = {
        "file": str(graph_md_path()),
        "node_types": {t: sorted(ONTOLOGY.must_carry[t]) for t in ONTOLOGY.node_types},
        "edge_types": {
            t: {"pairs": [f"{a}->{b}" for a, b in ONTOLOGY.legal_pairs(t)], "invalidation": ONTOLOGY.invalidation[t]}
            for t in ONTOLOGY.edge_types
        },
    }
    lines = [f"schema: {data['file']}", "", "NODE TYPES (must carry)"]
    lines += [f"  {t:<11} {', '.join(names) or '-'}" for t, names in data["node_types"].items()]
    lines += ["", "EDGE TYPES (invalidation: legal pairs)"]
    for t, spec in data["edge_types"].items():
        lines.append(f"  {t:<13} {spec['invalidation']:<8} {', '.join(spec['pairs'])}")
    return data, "\n".join(lines)


def _rounds(args: argparse.Namespace, default: int) -> int:
    return default if args.rounds is None else int(args.rounds)


def _world(args: argparse.Namespace, default_rounds: int) -> Any:
    """The bundled example project's graph built in memory (``graph``, ``result``, ``walker``)."""
    from contextmesh.cli.kit import progress  # noqa: PLC0415
    from contextmesh.project.bundled import bundled_project, extension_of  # noqa: PLC0415

    example = getattr(extension_of(bundled_project()), "example", None)
    if not callable(example):
        raise SessionError("the bundled example project builds no graph in memory; name a session with --session DIR")
    return example(_rounds(args, default_rounds), progress)


def _on_a_session(args: argparse.Namespace, command: str) -> Using | None:
    """The project and session a reading command works on, or None for the bundled example built in memory.

    A project (``--project``, or found above the working directory) or ``--session`` means a
    session; with neither, the command builds the bundled example project's graph (and says so).
    Options that would be silently ignored are refused: --rounds with a session, a setting of the
    bundled project (its auditor's) without a session.
    """
    from contextmesh.cli.extensions import given_settings  # noqa: PLC0415

    where = using(args)
    on_session = not where.bundled or args.session is not None
    if on_session and args.rounds is not None:
        raise UsageError(
            f"--rounds {args.rounds} builds the example graph in memory; a session's own rounds are used",
            prog=f"contextmesh {command}",
            path="--rounds",
        )
    for name, value in given_settings(args).items():
        if not on_session:
            raise UsageError(
                f"--{name} {str(value)!r} is a setting of a saved session's auditor; it goes with --session",
                prog=f"contextmesh {command}",
                path=f"--{name}",
            )
    return where if on_session else None


def _commit_outcome(session: Session) -> tuple[str, str | None]:
    """Commit what an ask taught the session: ``("committed", None)``, or ``("skipped"|"failed", why)``.

    A skip (another writer holds the lock, or committed first) is the design under contention; a
    failure is a :class:`SessionError` from the session layer. Either is said, never dropped.
    """
    try:
        landed = session.checkpoint()
    except SessionError as exc:
        return "failed", str(exc)
    if landed:
        return "committed", None
    return "skipped", session.last_skip or "nothing was pending"


def ask(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh ask``: the answer and its path, or the dead end; with ``--session``, committed or not."""
    from contextmesh.belief.temporal import explain_as_of  # noqa: PLC0415
    from contextmesh.cli.render import render_as_of, render_commit, render_walk  # noqa: PLC0415

    where = _on_a_session(args, "ask")
    if args.as_of is not None and args.policy is not None:
        raise UsageError(
            "--policy narrows a live walk; an --as-of answer walks the graph as it stood, with the default policy",
            prog="contextmesh ask",
            path="--policy",
        )
    if where is None and args.embedder is not None:
        raise UsageError(
            "--embedder picks a project's or a session's embedder; the in-memory example is built with hashed",
            prog="contextmesh ask",
            path="--embedder",
        )
    if where is not None and args.embedder is not None:
        where = replace(where, project=where.project.with_embedder(args.embedder))
    if where is None:
        world = _world(args, 0)
        if args.as_of is not None:
            explained = explain_as_of(
                world.graph, world.result.resolver, args.question, args.as_of, flat=world.walker.flat
            )
            return explained.to_dict(), render_as_of(explained)
        walk = world.walker.ask(args.question, policy=args.policy)
        return walk.to_dict(), render_walk(walk)
    # The CLI commits itself (not the every-ask policy inside Session.ask) so it can say whether it landed.
    session = writer(args, where, policy="on-exit")
    if args.as_of is not None:
        explained = explain_as_of(
            session.graph, session.resolver, args.question, args.as_of, flat=session.flat, embedder=session.embedder
        )
        why = "an --as-of answer moves no telemetry, so there is nothing to commit"
        data = {
            **explained.to_dict(),
            "committed": False,
            "commit": "none",
            "reason": why,
            "generation": session.generation,
        }
        return data, render_as_of(explained)
    walk = session.ask(args.question, policy=args.policy)
    outcome, reason = _commit_outcome(session)
    data = {
        **walk.to_dict(),
        "committed": outcome == "committed",
        "commit": outcome,
        "reason": reason,
        "generation": session.generation,
    }
    return data, render_walk(walk) + "\n" + render_commit(session.generation, outcome, reason)


def health(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh health``: the signals that make a graph quietly useless."""
    from contextmesh.cli.render import render_health  # noqa: PLC0415
    from contextmesh.knowledge.health import check  # noqa: PLC0415

    where = _on_a_session(args, "health")
    if where is not None:
        session = reader(args, where)
        report = session.health()
        return report.to_dict(), render_health(report)
    world = _world(args, 8)
    report = check(world.graph, world.result.resolver, world.walker)  # no plan runs on the example graph
    return report.to_dict(), render_health(report)


def export(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh export``: the dashboard's payload and page (with no session, the bundled example's)."""
    from contextmesh.dashboard.export import export as write_export  # noqa: PLC0415
    from contextmesh.dashboard.export import render_summary  # noqa: PLC0415

    where = using(args)
    opened = None if where.bundled and args.session is None else reader(args, where)
    given = getattr(args, "feed", None)  # the dashboard's own parameter for the bundled project's setting
    with writing(f"the dashboard into {args.out}"):
        summary = write_export(args.out, rounds=_rounds(args, 8), inline=args.inline, feed=given, session=opened)
    return summary, render_summary(summary)


def session_show(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh session show DIR``: what the newest generation holds, and the commit counters."""
    from contextmesh.cli.render import render_session  # noqa: PLC0415

    args.session = args.dir
    data = reader(args, using(args)).describe()
    return data, render_session(data)


def session_verify(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh session verify DIR``: exit 0 only when it loads whole and its ledger verifies."""
    args.session = args.dir
    session = reader(args, using(args))
    ledger_ok = session.ledger.verify() if session.ledger is not None else True
    data = {
        "directory": str(session.directory),
        "generation": session.generation,
        "loaded": True,
        "ledger_verified": ledger_ok,
    }
    if not ledger_ok:
        raise SessionError(f"{session.directory}: the run ledger does not verify")
    return data, f"ok: generation {session.generation} loads whole; ledger verifies"

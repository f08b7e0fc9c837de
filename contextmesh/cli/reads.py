"""The commands that build, read or save the demo graph: schema, demo, ask, health, invalidate, export, session.

Each handler takes the parsed arguments and returns ``(data for --json, text for a person)``.
Options that do not go together are refused here as usage errors, before any work.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from contextmesh.cli.failure import UsageError, writing
from contextmesh.cli.projects import Using, reader, using, writer
from contextmesh.core.errors import SessionError

if TYPE_CHECKING:
    from contextmesh.demo.knowledge import DemoWorld
    from contextmesh.session.session import Session

__all__ = [
    "ask",
    "demo",
    "export",
    "health",
    "invalidate",
    "open_session",
    "schema",
    "session_save",
    "session_show",
    "session_verify",
]


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


def _progress(stage: str, done: int, total: int) -> None:
    """A one-line progress bar on stderr, only when a person is watching."""
    if not sys.stderr.isatty() or total < 50:
        return
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r{stage:<8} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\r" + " " * (width + 30) + "\r")
    sys.stderr.flush()


def _rounds(args: argparse.Namespace, default: int) -> int:
    return default if args.rounds is None else int(args.rounds)


def _world(args: argparse.Namespace, default_rounds: int) -> DemoWorld:
    from contextmesh.demo.knowledge import build_world  # noqa: PLC0415 - only the commands that need it pay

    return build_world(_rounds(args, default_rounds), progress=_progress)


def _on_a_session(args: argparse.Namespace, command: str) -> Using | None:
    """The project and session a reading command works on, or None for the bundled demo built in memory.

    A project (``--project``, or found above the working directory) or ``--session`` means a
    session; with neither, the command builds the bundled demo (and says so). Options that would be
    silently ignored are refused: --rounds with a session, --feed without the demo's session.
    """
    where = using(args)
    on_session = not where.bundled or args.session is not None
    if on_session and args.rounds is not None:
        raise UsageError(
            f"--rounds {args.rounds} builds the demo graph; a session's own rounds are used",
            prog=f"contextmesh {command}",
            path="--rounds",
        )
    if not on_session and args.feed is not None:
        raise UsageError(
            f"--feed {str(args.feed)!r} is the feed of a saved session's auditor; it goes with --session",
            prog=f"contextmesh {command}",
            path="--feed",
        )
    return where if on_session else None


def _demo_only(args: argparse.Namespace, command: str) -> None:
    """Refuse what a demo-only command would silently ignore: a project, --rounds with --session,
    --feed without it."""
    prog = f"contextmesh {command}"
    if args.project is not None:
        raise UsageError(
            f"--project {str(args.project)!r}: `{command}` breaks the bundled demo's own sizing assumption; "
            "on a project, record evidence (`contextmesh evidence add`) and let its auditors recheck",
            prog=prog,
            path="--project",
        )
    if args.session is not None and args.rounds is not None:
        raise UsageError(
            f"--rounds {args.rounds} builds the demo graph; with --session the session's own rounds are used",
            prog=prog,
            path="--rounds",
        )
    if args.session is None and args.feed is not None:
        raise UsageError(
            f"--feed {str(args.feed)!r} is the feed of a saved session's auditor; it goes with --session",
            prog=prog,
            path="--feed",
        )


def open_session(args: argparse.Namespace, *, policy: str = "every-ask") -> Session:
    """The demo session ``--session`` names, with the demo registry bound to ``--feed`` (``execute``)."""
    from contextmesh.demo.saved import open_demo_session  # noqa: PLC0415

    return open_demo_session(args.session, feed=getattr(args, "feed", None), policy=policy)


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
        explained = explain_as_of(session.graph, session.resolver, args.question, args.as_of, flat=session.flat)
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


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def demo(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh demo``: build, walk, three questions, the break, a question across it, health."""
    from contextmesh.cli.render import render_build, render_health, render_invalidation, render_walk  # noqa: PLC0415
    from contextmesh.demo.knowledge import break_sizing_assumption  # noqa: PLC0415
    from contextmesh.knowledge.health import check  # noqa: PLC0415

    world = _world(args, 8)
    walker = world.walker
    seeds = [
        "Why did the Index Builder run out of memory?",
        "What made the sharding rule wrong?",
        "What is the refund policy for annual plans?",
    ]
    walks = [walker.ask(q) for q in seeds]
    ratios = walker.token_ratios()
    crossing = "How does the Partitioned Rebuild split the work each night?"
    before = walker.ask(crossing)
    report = break_sizing_assumption(world)
    after = walker.ask(crossing)
    health_report = check(world.graph, world.result.resolver, walker)  # no plan runs on the demo graph
    counts = world.graph.type_counts(live_only=False)
    data = {
        "build": world.result.report.to_dict(),
        "nodes": counts,
        "edges": world.graph.edge_counts(live_only=False),
        "rounds": world.walk_rounds,
        "walks": [w.to_dict() for w in walks],
        "token_ratio_median": _median(ratios),
        "invalidation": report.to_dict(),
        "before_break": before.to_dict(),
        "after_break": after.to_dict(),
        "health": health_report.to_dict(),
    }
    lines = [
        f"ContextMesh demo · {sum(counts.values())} nodes, {len(world.graph.edges)} edges · "
        f"{world.walk_rounds} walk rounds",
        "",
        render_build(world.result.report),
        "",
    ]
    for walk in walks:
        lines += [render_walk(walk), ""]
    lines.append(
        f"TOKENS median path/flat over {len(ratios)} answered walks: {_median(ratios):.2%} "
        "(path tokens against flat top-k of the same corpus, words × 1.3)"
    )
    lines += ["", "THE GROUND MOVED", render_invalidation(report)]
    lines += [
        "",
        "A QUESTION WHOSE PATH CROSSED WHAT FELL",
        "before:",
        render_walk(before),
        "after:",
        render_walk(after),
    ]
    lines += ["", _lineage_text(world, report.assumption_id), "", render_health(health_report)]
    return data, "\n".join(lines)


def _lineage_text(world: DemoWorld, assumption_id: str) -> str:
    """The demo's lineage block (``demo`` and ``invalidate`` print the same)."""
    from contextmesh.belief.assumptions import Assumptions  # noqa: PLC0415
    from contextmesh.cli.render import render_lineage  # noqa: PLC0415

    return render_lineage(Assumptions(world.graph), assumption_id)


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
    report = check(world.graph, world.result.resolver, world.walker)  # no plan runs on the demo graph
    return report.to_dict(), render_health(report)


def invalidate(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh invalidate``: reject the demo's sizing assumption through evidence."""
    from contextmesh.belief.assumptions import Assumptions  # noqa: PLC0415
    from contextmesh.cli.render import render_invalidation, render_lineage  # noqa: PLC0415
    from contextmesh.demo.knowledge import break_in_graph, break_sizing_assumption, load_demo  # noqa: PLC0415

    _demo_only(args, "invalidate")
    if args.session is not None:
        session = open_session(args)
        corpus, sidecar = load_demo()
        if args.dry_run:
            report = break_in_graph(session.graph, dry_run=True, corpus=corpus, sidecar=sidecar)
            return report.to_dict(), render_invalidation(report, dry_run=True)
        report = session.apply(lambda s: break_in_graph(s.graph, corpus=corpus, sidecar=sidecar))
        text = render_invalidation(report) + "\n" + render_lineage(Assumptions(session.graph), report.assumption_id)
        return report.to_dict(), text + f"\n(session generation {session.generation})"
    world = _world(args, 8)
    report = break_sizing_assumption(world, dry_run=args.dry_run)
    text = render_invalidation(report, dry_run=args.dry_run)
    if not args.dry_run:
        text += "\n" + _lineage_text(world, report.assumption_id)
    return report.to_dict(), text


def export(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh export``: the dashboard's payload and page (rounds and feed apply to a session too)."""
    from contextmesh.dashboard.export import export as write_export  # noqa: PLC0415
    from contextmesh.dashboard.export import render_summary  # noqa: PLC0415

    where = using(args)
    opened = None if where.bundled and args.session is None else reader(args, where)
    with writing(f"the dashboard into {args.out}"):
        summary = write_export(args.out, rounds=_rounds(args, 8), inline=args.inline, feed=args.feed, session=opened)
    return summary, render_summary(summary)


def session_save(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh session save DIR``: the demo, plan round 1 executed, as generation 1 of a new session."""
    from contextmesh.demo.saved import save_demo_session  # noqa: PLC0415

    with writing(f"the new session {args.dir}"):
        session = save_demo_session(args.dir, rounds=args.rounds, feed=args.feed)
    data = session.describe()
    return data, f"saved the demo (plan round 1 executed) to {args.dir} as generation {session.generation}"


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

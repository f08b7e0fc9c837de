"""The ``contextmesh`` command line: parse, make one library call, render.

Every command accepts ``--json`` and then prints one JSON document and nothing else. Commands that
need Prefect import it lazily, so ``ask`` starts fast.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextmesh.canonical import file_bytes
from contextmesh.errors import ContextMeshError, ExecutionError, SessionError
from contextmesh.ontology import ONTOLOGY, graph_md_path

if TYPE_CHECKING:
    from contextmesh.demo.knowledge import DemoWorld
    from contextmesh.execution.plan import Runner
    from contextmesh.orchestration.deployed import Dispatched
    from contextmesh.orchestration.served import ServedRecord
    from contextmesh.session.session import Session

__all__ = ["main"]

Handler = Callable[[argparse.Namespace], tuple[Any, str]]


def _schema(_: argparse.Namespace) -> tuple[Any, str]:
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


def _world(args: argparse.Namespace) -> DemoWorld:
    from contextmesh.demo.knowledge import build_world  # noqa: PLC0415 - only the commands that need it pay

    return build_world(args.rounds, progress=_progress)


def _ask(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.render import render_as_of, render_walk  # noqa: PLC0415
    from contextmesh.temporal import explain_as_of  # noqa: PLC0415

    policy = tuple(p for p in args.policy.split(",") if p) if args.policy else None
    if args.session is not None:
        session = _open(args)
        if args.as_of:
            explained = explain_as_of(session.graph, session.resolver, args.question, args.as_of, flat=session.flat)
            return explained.to_dict(), render_as_of(explained)
        walk = session.ask(args.question, policy=policy)
        return walk.to_dict(), render_walk(walk) + f"\n(session generation {session.generation})"
    world = _world(args)
    if args.as_of:
        explained = explain_as_of(world.graph, world.result.resolver, args.question, args.as_of, flat=world.walker.flat)
        return explained.to_dict(), render_as_of(explained)
    walk = world.walker.ask(args.question, policy=policy)
    return walk.to_dict(), render_walk(walk)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _demo(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.demo.knowledge import break_sizing_assumption  # noqa: PLC0415
    from contextmesh.health import check  # noqa: PLC0415
    from contextmesh.render import render_build, render_health, render_invalidation, render_walk  # noqa: PLC0415

    world = _world(args)
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
    health = check(world.graph, world.result.resolver, walker, rounds=world.rounds)
    counts = world.graph.type_counts(live_only=False)
    data = {
        "build": world.result.report.to_dict(),
        "nodes": counts,
        "edges": world.graph.edge_counts(live_only=False),
        "rounds": world.rounds,
        "walks": [w.to_dict() for w in walks],
        "token_ratio_median": _median(ratios),
        "invalidation": report.to_dict(),
        "before_break": before.to_dict(),
        "after_break": after.to_dict(),
        "health": health.to_dict(),
    }
    lines = [
        f"ContextMesh demo · {sum(counts.values())} nodes, {len(world.graph.edges)} edges · {world.rounds} walk rounds",
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
    lines += ["", render_lineage_text(world, report.assumption_id)]
    lines += ["", render_health(health)]
    return data, "\n".join(lines)


def render_lineage_text(world: DemoWorld, assumption_id: str) -> str:
    """The demo's lineage block (kept here so ``demo`` and ``invalidate`` print the same)."""
    from contextmesh.assumptions import AssumptionLedger  # noqa: PLC0415
    from contextmesh.render import render_lineage  # noqa: PLC0415

    return render_lineage(AssumptionLedger(world.graph), assumption_id)


def _open(args: argparse.Namespace) -> Session:
    from contextmesh.demo.session import open_demo_session  # noqa: PLC0415

    return open_demo_session(args.session, feed=getattr(args, "feed", None))


def _health(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.health import check  # noqa: PLC0415
    from contextmesh.render import render_health  # noqa: PLC0415

    if args.session is not None:
        session = _open(args)
        report = check(session.graph, session.resolver, session.walker, rounds=session.rounds)
        return report.to_dict(), render_health(report)
    world = _world(args)
    report = check(world.graph, world.result.resolver, world.walker, rounds=world.rounds)
    return report.to_dict(), render_health(report)


def _invalidate(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.assumptions import AssumptionLedger  # noqa: PLC0415
    from contextmesh.demo.knowledge import break_in_graph, break_sizing_assumption, load_demo  # noqa: PLC0415
    from contextmesh.render import render_invalidation, render_lineage  # noqa: PLC0415

    if args.session is not None:
        session = _open(args)
        _, sidecar = load_demo()
        if args.dry_run:
            report = break_in_graph(session.graph, sidecar, dry_run=True)
            return report.to_dict(), render_invalidation(report, dry_run=True)
        report = session.apply(lambda s: break_in_graph(s.graph, sidecar))
        text = (
            render_invalidation(report) + "\n" + render_lineage(AssumptionLedger(session.graph), report.assumption_id)
        )
        return report.to_dict(), text + f"\n(session generation {session.generation})"
    world = _world(args)
    report = break_sizing_assumption(world, dry_run=args.dry_run)
    text = render_invalidation(report, dry_run=args.dry_run)
    if not args.dry_run:
        text += "\n" + render_lineage_text(world, report.assumption_id)
    return report.to_dict(), text


def _execute(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.demo.execute import run_session_walkthrough, run_walkthrough  # noqa: PLC0415
    from contextmesh.execution.executor import InProcessExecutor  # noqa: PLC0415
    from contextmesh.render import render_walkthrough  # noqa: PLC0415

    if args.executor == "prefect":
        return _execute_on_prefect(args)
    executor = InProcessExecutor(width=args.threads)
    if args.session is not None:
        session = _open(args)
        walk = run_session_walkthrough(session, feed=args.feed, executor=executor)
        return walk.to_dict(), render_walkthrough(walk) + f"\n(session generation {session.generation})"
    walk = run_walkthrough(feed=args.feed, executor=executor)
    return walk.to_dict(), render_walkthrough(walk)


def _execute_on_prefect(args: argparse.Namespace) -> tuple[Any, str]:
    # Prefect is imported only here: commands that do not run it start fast.
    from contextmesh.orchestration.server import ensure_server  # noqa: PLC0415
    from contextmesh.orchestration.walkthrough import run_walkthrough_on_prefect  # noqa: PLC0415
    from contextmesh.render import render_walkthrough  # noqa: PLC0415

    with ensure_server() as handle:
        walk = run_walkthrough_on_prefect(args.session, args.feed, max_workers=args.threads)
        for round_, flow_run_id in walk.flow_runs.items():
            handle.record(flow_run_id, walk.task_runs.get(round_, 0))
    text = render_walkthrough(walk, urls=walk.urls)
    if walk.session_dir is not None:
        text += f"\n(session {walk.session_dir})"
    if handle.note:
        text += f"\n{handle.note}"
    return walk.to_dict(), text


def _server(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.orchestration import server  # noqa: PLC0415

    if args.action == "start":
        info = server.start()
        return info.to_dict(), f"Prefect server running (pid {info.pid}) · UI {info.ui_url} · API {info.api_url}"
    if args.action == "stop":
        stopped = server.stop()
        return {
            "stopped": stopped
        }, "stopped the managed Prefect server" if stopped else "no managed server was running"
    state = server.status()
    return state.to_dict(), (
        f"running · UI {state.info.ui_url}"
        if state.running and state.info is not None
        else f"not running: {state.reason}"
    )


# -- writes to a session: on its served deployments when serve.py runs for it, else in this process --


def _served_record(args: argparse.Namespace) -> ServedRecord | None:
    if args.local:
        return None
    if args.deployment:
        from contextmesh.orchestration.deployed import configured_record  # noqa: PLC0415
        from contextmesh.orchestration.server import configured_api_url  # noqa: PLC0415

        api_url = configured_api_url()
        if not api_url:
            raise ExecutionError("--deployment dispatches to PREFECT_API_URL, which is not set")
        return configured_record(args.session, api_url)
    from contextmesh.orchestration.served import find, peek  # noqa: PLC0415 - no Prefect import here

    session_id, _, _ = peek(str(args.session))
    return find(session_id, args.session)


def _feed_text(args: argparse.Namespace) -> str | None:
    return str(args.feed.resolve()) if args.feed is not None else None


def _after_dispatch(args: argparse.Namespace, done: Dispatched, what: str) -> tuple[Any, str]:
    data: dict[str, Any] = {"dispatched": done.to_dict(), "executor": "deployment"}
    lines = [f"{what} ran as a flow run of {done.deployment}: {done.state_name} · {done.url}"]
    if not done.finished:
        lines.append(f"still {done.state_name.lower()} after {args.wait:g} s; watch it at the address above")
    elif done.state == "CANCELLED" and what == "recheck":
        # The recheck deployment runs one at a time and cancels a new run while one is running
        # (CANCEL_NEW): the running recheck audits the same facts, so this is not a failure.
        lines.append(f"not run: {done.message or 'another recheck of this session was running'}")
    elif done.state != "COMPLETED":
        raise ExecutionError(f"{what} flow run ended {done.state_name}: {done.message or 'no message'} ({done.url})")
    else:
        session = _open(args)
        assert session.runner is not None
        data["states"] = session.runner.states()
        data["blocked"] = session.runner.blocked()
        data["generation"] = session.generation
        lines.append(_states_line(session))
    return data, "\n".join(lines)


def _states_line(session: Session) -> str:
    runner = session.runner
    assert runner is not None
    blocked = runner.blocked()
    states = ", ".join(f"{name} {'blocked' if name in blocked else state}" for name, state in runner.states().items())
    return f"session generation {session.generation} · round {runner.round}: {states}"


def _runner_of(session: Session) -> Runner:
    if session.runner is None:
        raise ExecutionError(f"{session.directory} holds no execution plan")
    return session.runner


def _recheck(args: argparse.Namespace) -> tuple[Any, str]:
    record = _served_record(args)
    if record is not None:
        from contextmesh.orchestration.deployed import dispatch_recheck  # noqa: PLC0415

        return _after_dispatch(args, dispatch_recheck(record, feed=_feed_text(args), wait=args.wait), "recheck")
    session = _open(args)
    report = session.apply(lambda s: _runner_of(s).recheck())
    text = f"recheck (in-process) round {report.round}: audited {', '.join(report.audited) or 'nothing'}"
    if report.stale:
        text += f"; disproved, now stale: {', '.join(report.stale)}"
    return {"executor": "in-process", "report": report.to_dict(), "generation": session.generation}, (
        text + "\n" + _states_line(session)
    )


def _resume(args: argparse.Namespace) -> tuple[Any, str]:
    record = _served_record(args)
    if record is not None:
        from contextmesh.orchestration.deployed import dispatch_resume  # noqa: PLC0415

        done = dispatch_resume(record, _open(args), feed=_feed_text(args), wait=args.wait)
        return _after_dispatch(args, done, "resume")
    session = _open(args)
    report = session.apply(lambda s: _runner_of(s).run(include_failed=False))
    text = f"resume (in-process) round {report.round}: executed {', '.join(report.executed) or 'nothing'}"
    if report.blocked:
        text += f"; waiting for repair: {', '.join(sorted(report.blocked))}"
    return {"executor": "in-process", "report": report.to_dict(), "generation": session.generation}, (
        text + "\n" + _states_line(session)
    )


def _repair(args: argparse.Namespace) -> tuple[Any, str]:
    record = _served_record(args)
    if record is not None:
        from contextmesh.orchestration.deployed import dispatch_repair  # noqa: PLC0415

        done = dispatch_repair(
            record,
            task=args.task,
            assumes=args.assumes,
            worker_key=args.worker_key,
            feed=_feed_text(args),
            wait=args.wait,
        )
        return _after_dispatch(args, done, f"repair of {args.task}")
    session = _open(args)
    task = session.apply(lambda s: _runner_of(s).repair(args.task, assumes=args.assumes, worker_key=args.worker_key))
    text = f"repaired {task.name} (in-process): now {task.worker_key or 'its callable'} on '{task.assumes}'"
    data = {"executor": "in-process", "task": task.name, "worker_key": task.worker_key, "assumes": task.assumes}
    return {**data, "generation": session.generation}, text + "\n" + _states_line(session)


def _serve(args: argparse.Namespace) -> tuple[Any, str]:
    import os  # noqa: PLC0415

    script = (args.project / "deployments" / "serve.py").resolve()
    if not script.is_file():
        raise ExecutionError(
            f"{script} does not exist: `contextmesh serve` runs the deployment's deployments/serve.py — run it "
            "from the project root or name it with --project DIR"
        )
    argv = [sys.executable, str(script), "--session", str(args.session.resolve())]
    argv += ["--interval", f"{args.interval:g}", "--trigger", args.trigger]
    if args.feed is not None:
        argv += ["--feed", str(args.feed.resolve())]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)  # noqa: S606 - replaces this process: serve.py is the deployment's code, never imported


def _advisory(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.demo.auth import publish, withdraw  # noqa: PLC0415

    if args.action == "publish":
        advisories = publish(args.feed, args.package, args.text or "")
        text = f"published an advisory for {args.package} to {args.feed}"
    else:
        advisories = withdraw(args.feed, args.package)
        text = f"withdrew every advisory for {args.package} from {args.feed}"
    return {"feed": str(args.feed), "advisories": advisories}, text


def _session_save(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.demo.session import save_demo_session  # noqa: PLC0415

    session = save_demo_session(args.dir, rounds=args.rounds, feed=args.feed)
    data = session.describe()
    return data, f"saved the demo (plan round 1 executed) to {args.dir} as generation {session.generation}"


def _session_show(args: argparse.Namespace) -> tuple[Any, str]:
    args.session = args.dir
    data = _open(args).describe()
    lines = [f"SESSION {data['directory']} · id {data['session_id']} · generation {data['generation']}"]
    lines.append(f"  nodes {data['nodes_live']} live of {data['nodes_total']} · edges {data['edges_live']} live")
    lines.append(f"  walk rounds {data['rounds']} · walker {data['walker']}")
    if data["plan"]:
        lines.append(f"  plan {data['plan']['name']} round {data['plan']['round']}: {data['plan']['states']}")
        lines.append(
            f"  ledger {data['ledger']['entries']} entries · head {data['ledger']['head'][:16]}… · "
            f"chain intact: {data['ledger']['verified']}"
        )
    return data, "\n".join(lines)


def _session_verify(args: argparse.Namespace) -> tuple[Any, str]:
    args.session = args.dir
    session = _open(args)
    ledger_ok = session.ledger.verify() if session.ledger is not None else True
    data = {"directory": str(args.dir), "generation": session.generation, "loaded": True, "ledger_verified": ledger_ok}
    if not ledger_ok:
        raise SessionError(f"{args.dir}: the run ledger does not verify")
    return data, f"ok: generation {session.generation} loads whole; ledger verifies"


def _export(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.dashboard.export import export, render_summary  # noqa: PLC0415

    summary = export(args.out, session_dir=args.session, rounds=args.rounds, inline=args.inline, feed=args.feed)
    return summary, render_summary(summary)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="contextmesh", description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    schema = commands.add_parser("schema", help="print the ontology GRAPH.md defines")
    schema.set_defaults(handler=_schema)
    demo = commands.add_parser("demo", help="build the demo graph, walk it, break an assumption, report")
    demo.set_defaults(handler=_demo)
    ask = commands.add_parser("ask", help="answer a question with the path the walk took, or name the dead end")
    ask.add_argument("question", help="the question, in quotes")
    ask.add_argument("--as-of", metavar="DATE", help="answer from the graph as it stood on YYYY-MM-DD")
    ask.add_argument("--policy", metavar="TYPES", help="comma-separated edge types this walk may follow")
    ask.set_defaults(handler=_ask)
    health = commands.add_parser("health", help="what is quietly wrong with the graph")
    health.set_defaults(handler=_health)
    invalidate = commands.add_parser("invalidate", help="reject the demo's sizing assumption through evidence")
    invalidate.add_argument("--dry-run", action="store_true", help="report what would fall; change nothing")
    invalidate.set_defaults(handler=_invalidate)
    execute = commands.add_parser("execute", help="run the demo plan, break its ground, repair, rerun only what fell")
    execute.add_argument("--feed", type=Path, help="the advisory feed file (default: a fresh temporary one)")
    execute.add_argument("--threads", type=_positive, default=4, help="how many tasks of a layer run at once")
    execute.add_argument(
        "--executor",
        choices=("prefect", "in-process"),
        default="prefect",
        help="run every round as a Prefect flow run (default; starts a local server when none is configured) "
        "or in this process without Prefect",
    )
    execute.set_defaults(handler=_execute)
    advisory = demo_sub = demo.add_subparsers(dest="demo_command", metavar="SUBCOMMAND")
    del demo_sub
    adv = advisory.add_parser("advisory", help="publish or withdraw an advisory in the demo's feed file")
    adv.add_argument("action", choices=("publish", "withdraw"))
    adv.add_argument("package", help="the package the advisory is about, e.g. argon2-cffi")
    adv.add_argument("text", nargs="?", help="the advisory's text (publish only)")
    adv.add_argument("--feed", type=Path, required=True, help="the feed file the deployment names")
    adv.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    adv.set_defaults(handler=_advisory)
    srv = commands.add_parser("server", help="start, check or stop the managed local Prefect server and its UI")
    srv.add_argument("action", choices=("start", "status", "stop"))
    srv.set_defaults(handler=_server)
    served_help = "dispatch to the session's served deployment (deployments/serve.py) when one runs, else in-process"
    rck = commands.add_parser("recheck", help="run every standing auditor once; " + served_help)
    rck.set_defaults(handler=_recheck)
    res = commands.add_parser("resume", help="run only stale and pending work whose ground stands; " + served_help)
    res.set_defaults(handler=_resume)
    rep = commands.add_parser("repair", help="ground a stale or failed task on new ground and a registered key")
    rep.add_argument("task", help="the task to repair, e.g. hashing")
    rep.add_argument("--worker-key", help="the registered worker key it runs from now on, e.g. auth.bcrypt.v1")
    rep.add_argument("--assumes", required=True, help="the statement of its new ground, in quotes")
    rep.set_defaults(handler=_repair)
    for sub in (rck, res, rep):
        sub.add_argument("--session", type=Path, required=True, metavar="DIR", help="the session directory")
        sub.add_argument("--feed", type=Path, help="the demo advisory feed (default: the deployment's)")
        sub.add_argument("--wait", type=_seconds, default=120.0, metavar="SECONDS", help="how long to wait for a run")
        where = sub.add_mutually_exclusive_group()
        where.add_argument("--local", action="store_true", help="run in this process even when a deployment serves")
        where.add_argument(
            "--deployment",
            action="store_true",
            help="dispatch to the prefect.yaml deployments on PREFECT_API_URL (a work pool; no serve.py)",
        )
    srv_ = commands.add_parser("serve", help="serve a session's plan, recheck and repair deployments (serve.py)")
    srv_.add_argument("--session", type=Path, required=True, metavar="DIR", help="the session directory to serve")
    srv_.add_argument("--feed", type=Path, help="the advisory feed the demo auditor reads")
    srv_.add_argument("--interval", type=_seconds, default=600.0, metavar="SECONDS", help="recheck every (default 600)")
    srv_.add_argument("--trigger", choices=("run-deployment", "automation"), default="run-deployment")
    srv_.add_argument("--project", type=Path, default=Path(), metavar="DIR", help="where deployments/serve.py is")
    srv_.set_defaults(handler=_serve)
    exp = commands.add_parser("export", help="write the dashboard's payload (and, with --inline, its page)")
    exp.add_argument("--out", type=Path, default=Path("dashboard"), metavar="DIR", help="the dashboard directory")
    exp.add_argument("--inline", action="store_true", help="embed the payload so index.html opens from file://")
    exp.set_defaults(handler=_export)
    session = commands.add_parser("session", help="save, show or verify a session directory")
    actions = session.add_subparsers(dest="session_command", required=True, metavar="ACTION")
    save = actions.add_parser("save", help="save the demo, with its plan executed, as a new session")
    save.add_argument("--rounds", type=_non_negative, default=8, metavar="N", help="walk rounds before saving")
    save.set_defaults(handler=_session_save)
    show = actions.add_parser("show", help="describe a session directory")
    show.set_defaults(handler=_session_show)
    verify = actions.add_parser("verify", help="exit 0 only when the directory loads whole and its ledger verifies")
    verify.set_defaults(handler=_session_verify)
    for sub in (save, show, verify):
        sub.add_argument("dir", type=Path, help="the session directory")
        sub.add_argument("--feed", type=Path, help="the demo advisory feed (default under $CONTEXTMESH_HOME)")
        sub.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    for name in ("ask", "health", "invalidate", "execute", "export"):
        commands.choices[name].add_argument(
            "--session", type=Path, metavar="DIR", help="work on a saved session and commit through it"
        )
    for name in ("ask", "health", "invalidate", "export"):
        commands.choices[name].add_argument("--feed", type=Path, help=argparse.SUPPRESS)
    for name in ("demo", "ask", "health", "invalidate", "export"):
        commands.choices[name].add_argument(
            "--rounds",
            type=_non_negative,
            default=8 if name != "ask" else 0,
            metavar="N",
            help="walk rounds of the fixed question mix before the command (telemetry)",
        )
    for sub in commands.choices.values():
        sub.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    return parser


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 threads cannot run anything; give 1 or more")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the rule is a positive, finite number of seconds")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; rounds count up from 0")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the process exit code."""
    args = _parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        data, text = handler(args)
    except ContextMeshError as exc:
        print(f"contextmesh: {exc}", file=sys.stderr)
        return 1
    try:
        if args.json:
            sys.stdout.write(file_bytes(data).decode("utf-8"))
        else:
            print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # A reader such as `head` closed the pipe: stop quietly, as other command-line tools do.
        sys.stdout = None
    return 0

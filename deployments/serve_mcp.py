"""Serve a session over MCP with this deployment's registry embedded: the launcher for ``contextmesh-mcp``.

    python deployments/serve_mcp.py --session ./session [--feed FILE] [--dispatch auto|never]
                                    [--dispatch-wait SECONDS] [contextmesh-mcp options …]

A session holding an execution plan names worker and auditor *keys*; only the deployment that
serves it can say which code a key means. The plain ``contextmesh-mcp`` command therefore refuses
such a session, and this launcher supplies the registry from ``registry/`` (:func:`build_registry`,
the table every process of this deployment builds). Its advisory auditor reads the feed named by
``--feed FILE``, else ``$CONTEXTMESH_DEMO_FEED``, else the demo's default under
``$CONTEXTMESH_HOME``.

When ``deployments/serve.py`` serves the same session (its served record under
``$CONTEXTMESH_HOME/served/`` names a live process for this directory), ``mesh_recheck`` and
``mesh_resume`` are dispatched to its deployments as Prefect flow runs
(:class:`~contextmesh.mcp.deployment_dispatcher.PrefectDispatcher`): each returns at once with the
flow run's id, address and state (a handle ``mesh_flow_run`` follows until the run's report is
ready), or, with ``--dispatch-wait SECONDS``, waits up to that long and returns the report if the
run ended in time. Whether ``serve.py`` is looked for is decided once, at start:
``--dispatch never`` keeps both in this process; with ``auto`` (the default) and no served record
they run in-process too. A dispatching server never falls back to in-process: while the API or
the deployments do not answer, ``tools/list`` names both tools under ``_meta.notAnswering`` (and in
their descriptions; ``contextmesh://session`` under ``served.not_answering``) and
calls to them are refused. The other writes always run in this process.

Every other argument goes to ``contextmesh-mcp`` unchanged. A deployment of your own copies this
file beside its own ``registry/``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # registry/ lives beside this folder

from contextmesh.orchestration.settings import prepare_environment  # noqa: E402

prepare_environment()  # before anything imports Prefect (a dispatcher does, on its first probe)

from contextmesh.mcp.server import main as mcp_main  # noqa: E402
from contextmesh.mcp.write_dispatch import Dispatcher  # noqa: E402
from registry import build_registry, feed_path  # noqa: E402

PROG = "serve_mcp.py"


def _say(text: str) -> None:
    sys.stderr.write(f"{PROG}: {text}\n")
    sys.stderr.flush()


def _split(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """This launcher's own options, and the arguments ``contextmesh-mcp`` gets (``--dispatch*`` removed)."""
    parser = argparse.ArgumentParser(prog=PROG, add_help=False, allow_abbrev=False)
    parser.add_argument("--session", type=Path)
    parser.add_argument("--feed", type=Path)
    parser.add_argument("--dispatch", choices=("auto", "never"), default="auto")
    parser.add_argument("--dispatch-wait", type=float, default=None, metavar="SECONDS")
    ours, _ = parser.parse_known_args(argv)
    if ours.dispatch_wait is not None and not 0 <= ours.dispatch_wait <= 3600:
        parser.error(f"--dispatch-wait {ours.dispatch_wait}: a number of seconds from 0 to 3600")
    rest: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in {"--dispatch", "--dispatch-wait"}:
            skip = True
        elif not arg.startswith(("--dispatch=", "--dispatch-wait=")):
            rest.append(arg)
    return ours, rest


def dispatcher_for(session: Path, *, wait: float | None = None) -> Dispatcher | None:
    """The dispatcher to ``serve.py``'s deployments when it serves ``session``, else None (in-process)."""
    from contextmesh.mcp.deployment_dispatcher import dispatcher_for as served_dispatcher  # noqa: PLC0415

    return served_dispatcher(session, wait=wait)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``contextmesh-mcp`` with this deployment's registry (and its deployments, when served)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        ours, rest = _split(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    dispatcher = None
    if ours.session is not None and ours.dispatch == "auto":
        dispatcher = dispatcher_for(ours.session, wait=ours.dispatch_wait)
        if dispatcher is not None:
            _say(f"serve.py serves {ours.session}: mesh_recheck and mesh_resume dispatch to {dispatcher.name}")
    fallback = None
    if ours.session is not None and ours.dispatch == "auto" and dispatcher is None:
        from contextmesh.core.home import contextmesh_home  # noqa: PLC0415

        fallback = (
            f"no serve.py serves {ours.session} (no live served record under {contextmesh_home() / 'served'}; "
            "is CONTEXTMESH_HOME the one serve.py runs with?): mesh_recheck and mesh_resume run IN THIS "
            "PROCESS; pass --dispatch never to say that is meant"
        )
    # Said once the server is up (after its banner), so a refusal to start stays one line.
    return mcp_main(rest, registry=build_registry(feed_path(ours.feed)), dispatcher=dispatcher, announce=fallback)


if __name__ == "__main__":
    raise SystemExit(main())

"""Publication → stale closure finished, on a session served by ``deployments/serve.py``.

    .venv/bin/python bench/deployments.py [--repeat 3] [--interval 600] [--react 0.1] [--poll 1]
                                          [--runner] [--triggers run-deployment,automation] [--no-full-loop]
                                          [--variants default,tuned] [--deadline 120] [--hangs DIR]

The reported figure of issues 20 and the deployments issue. A managed Prefect server (SQLite, no
UI) is started in a temporary ``$CONTEXTMESH_HOME`` on a free loopback port and stopped at the end.
Each repetition runs every variant once, interleaved so they share the machine's load:

* ``warm · default`` — ``serve.py`` as a person starts it: its reactor (ADR 0017) looks every
  0.5 s, starts a recheck when the feed changes and runs every due flow run in the serving process;
  the recheck interval is ``--interval`` (600 s, serve's default: only the reaction can explain a
  recheck within the measurement);
* ``warm · react R s, poll P s`` — tuned: ``CONTEXTMESH_REACT_SECONDS=R`` and
  ``PREFECT_RUNNER_POLL_FREQUENCY=P`` (whole seconds: the setting is typed ``int``);
* with ``--runner``, the same two with ``CONTEXTMESH_WARM_RUNS=0``: the reactor still starts the
  recheck, but Prefect's runner runs every flow run in a fresh subprocess after its next poll
  (10 s by default in Prefect 3.9.1, ``prefect/settings/models/runner.py``) — the side-by-side;

each with every ``--triggers`` path from the recheck to the resume (``run-deployment``, the
default: the recheck flow calls ``run_deployment`` under an idempotency key; ``automation``: a
Prefect automation on the ``contextmesh.assumption.disproved`` event). Per variant and repetition:

1. a fresh demo session (``contextmesh session save DIR --feed F``: plan round 1 executed) and
   ``serve.py --session DIR --feed F --interval S --trigger T``;
2. once serve.py's reactor is up (its reactions file names a live process), the advisory is
   published to the feed — the library call ``contextmesh demo advisory publish argon2-cffi …``
   makes, timed in this process: that instant is t0;
3. **closure**: t0 → the resume flow run the disproof started reaches COMPLETED (Prefect's
   ``end_time``). In the demo every stale task waits on the rejected ground (``hashing`` is
   grounded on it; ``routes`` and ``rate_limit`` need ``hashing``), so that run executes nothing:
   it records which tasks wait for repair. The breakdown (columns): ``to_recheck`` t0 → the
   disproving recheck Running (the reactor's look, the run created and claimed, the engine's
   start; with the runner, its poll and a subprocess start); ``recheck`` its Running → Completed;
   ``to_resume`` that Completed → the resume Running (the resume is created inside the recheck,
   just before it ends); ``pickup`` the resume created → Pending (claimed by the reactor or found
   by the runner's poll); ``spawn`` Pending → Running (the engine's start in the serving process,
   or a fresh subprocess importing Python, Prefect, ContextMesh and the flow module); ``resume``
   its Running → Completed (waiting for the session's concurrency slot included);
4. **full loop** (unless ``--no-full-loop``): right after that, as a person would,
   ``contextmesh repair hashing --worker-key auth.hash.bcrypt.v1 --assumes "bcrypt has no open
   advisory" --session DIR --feed F`` then ``contextmesh resume --session DIR --feed F`` (both
   dispatch to the served deployments and wait); t0 → that resume flow run COMPLETED, and the
   repair+resume part alone (first CLI call → COMPLETED, both CLI start-ups included);
5. serve.py gets SIGTERM (then SIGKILL after 40 s) and the next variant starts.

A repetition whose closure is not Completed within ``--deadline`` seconds of the advisory (or whose
repair or resume CLI call overruns) is a hang, not a wait: the bench sends serve.py ``SIGUSR1``
(``contextmesh.orchestration.stack_dumps``: every thread's and asyncio task's stack to its log) and
keeps ``<rep>-stacks.txt``, ``<rep>-serve.log`` and ``<rep>-api.json`` (the session's runs with
their state history, the concurrency limits) under ``--hangs``; the sample is marked HUNG and the
next one starts. ``--variants tuned`` runs only the tuned variant (to hunt a hang).

Printed: every sample, then p50 / min / max per variant, and the load average (1, 5, 15 min)
before and after. All times are wall clock on one machine: this process's ``time.time()`` for t0,
the server's run timestamps for the rest.

:func:`demo_loop` (the server, session, serve.py, advisory, repair and resume above) is also what
``scripts/screenshot-prefect-ui`` drives to photograph a real resume flow run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile  # noqa: E402

from contextmesh.demo.auth import ADVISORY_TEXT, publish  # noqa: E402
from contextmesh.orchestration import local_server as server  # noqa: E402
from contextmesh.orchestration.served_record import peek  # noqa: E402

PLAN_FLOW, RECHECK_FLOW = "contextmesh-plan", "contextmesh-recheck"
REPAIR = ("hashing", "auth.hash.bcrypt.v1", "bcrypt has no open advisory")
POLL_SETTING = "PREFECT_RUNNER_POLL_FREQUENCY"
REACT_SETTING = "CONTEXTMESH_REACT_SECONDS"
WARM_SETTING = "CONTEXTMESH_WARM_RUNS"
DISPATCH_SETTING = "CONTEXTMESH_DISPATCH"
TERMINAL = frozenset({"COMPLETED", "FAILED", "CANCELLED", "CRASHED"})


def _epoch(stamp: str | None) -> float:
    if not stamp:
        return float("nan")
    return datetime.fromisoformat(stamp).timestamp()


def _say(text: str) -> None:
    sys.stderr.write(f"bench: {text}\n")
    sys.stderr.flush()


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"


# -- the server --------------------------------------------------------------------------------


@contextlib.contextmanager
def managed_server(home: Path, *, ui: bool = False) -> Iterator[server.ServerInfo]:
    """A managed Prefect server under ``home`` on a free loopback port, stopped on exit."""
    port = server.free_port()
    # The UI asks the API at PREFECT_SERVER_UI_API_URL, which Prefect derives from
    # PREFECT_SERVER_API_PORT (4200), not from `--port`: name it, or the UI of a server on any
    # other port talks to port 4200. server_environment() passes it through from this environment.
    os.environ["PREFECT_SERVER_UI_API_URL"] = f"http://127.0.0.1:{port}/api"
    info = server.start(home, port=port, ui=ui, keep=True)
    try:
        yield info
    finally:
        server.stop(home)


class Api:
    """The few REST calls the bench makes (httpx: this process never imports Prefect)."""

    def __init__(self, api_url: str) -> None:
        self.client = httpx.Client(base_url=api_url, timeout=10.0)

    def flow_runs(self, session_id: str, flow: str) -> list[dict[str, Any]]:
        body = {"flows": {"name": {"any_": [flow]}}, "flow_runs": {"tags": {"all_": [f"cm.session:{session_id}"]}}}
        reply = self.client.post("/flow_runs/filter", json={**body, "sort": "EXPECTED_START_TIME_ASC", "limit": 200})
        reply.raise_for_status()
        return list(reply.json())

    def flow_run(self, flow_run_id: str) -> dict[str, Any]:
        reply = self.client.get(f"/flow_runs/{flow_run_id}")
        reply.raise_for_status()
        return dict(reply.json())

    def states(self, flow_run_id: str) -> dict[str, float]:
        """When the flow run first entered each state name (epoch seconds)."""
        reply = self.client.get("/flow_run_states/", params={"flow_run_id": flow_run_id})
        reply.raise_for_status()
        first: dict[str, float] = {}
        for state in sorted(reply.json(), key=lambda s: _epoch(s["timestamp"])):
            first.setdefault(state["name"], _epoch(state["timestamp"]))
        return first

    def task_runs(self, flow_run_id: str) -> list[dict[str, Any]]:
        body = {"flow_runs": {"id": {"any_": [flow_run_id]}}, "sort": "NAME_ASC"}
        reply = self.client.post("/task_runs/filter", json=body)
        reply.raise_for_status()
        return list(reply.json())


# -- one served session ---------------------------------------------------------------------------


def cli(home: Path, *args: str, timeout: float = 300.0, dispatch: str | None = None) -> dict[str, Any]:
    """Run ``contextmesh ARGS --json`` as a person would (``dispatch``: its CONTEXTMESH_DISPATCH); its JSON answer."""
    env = {**os.environ, "CONTEXTMESH_HOME": str(home)}
    env.pop("PREFECT_API_URL", None)
    env.pop(DISPATCH_SETTING, None)
    if dispatch is not None:
        env[DISPATCH_SETTING] = dispatch
    done = subprocess.run(
        [sys.executable, "-m", "contextmesh", *args, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"contextmesh {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-600:]}")
    return dict(json.loads(done.stdout))


@dataclass
class Served:
    """A demo session served by ``deployments/serve.py`` in its own process group."""

    home: Path
    session: Path
    feed: Path
    session_id: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self, grace: float = 40.0) -> float:
        """SIGTERM, wait up to ``grace`` seconds, then SIGKILL the process group; seconds it took."""
        start = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _say(f"serve.py (pid {self.process.pid}) still running after {grace:g} s: SIGKILL")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # flow-run subprocesses left in its group
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        return time.monotonic() - start

    def dump_stacks(self, settle: float = 3.0) -> str:
        """SIGUSR1 (serve's faulthandler and asyncio-task dump, ``stack_dumps``); the log's dump part."""
        before = self.log.stat().st_size if self.log.exists() else 0
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGUSR1)
        time.sleep(settle)  # the asyncio part is written when serve's main thread next runs bytecode
        with self.log.open("rb") as log:
            log.seek(before)
            return log.read().decode("utf-8", "replace")


def hang_report(api: Api, served: Served, where: Path, what: str) -> Path:
    """A repetition overran its deadline: serve's stacks, its log and the session's runs, kept in ``where``."""
    where.mkdir(parents=True, exist_ok=True)
    stem = where / served.log.stem.removesuffix("-serve")
    Path(f"{stem}-stacks.txt").write_text(served.dump_stacks())
    shutil.copy(served.log, f"{stem}-serve.log")
    runs = []
    for flow in (RECHECK_FLOW, PLAN_FLOW, "contextmesh-repair"):
        for run in api.flow_runs(served.session_id, flow):
            runs.append({**run, "history": api.states(run["id"])})
    limits = api.client.post("/v2/concurrency_limits/filter", json={}).json()
    document = {"what": what, "load_average": load_average(), "runs": runs, "global_concurrency_limits": limits}
    Path(f"{stem}-api.json").write_text(json.dumps(document, indent=1, default=str))
    _say(f"HANG: {what}; stacks, log and runs kept as {stem}-*")
    return Path(f"{stem}-stacks.txt")


def serve_session(
    home: Path,
    workdir: Path,
    *,
    interval: float,
    trigger: str,
    poll: int | None,
    name: str = "session",
    react: float | None = None,
    warm: bool = True,
) -> Served:
    """Save a fresh demo session under ``workdir`` and start serve.py for it (``react``: its look interval)."""
    session, feed = workdir / name, workdir / f"{name}-feed.json"
    cli(home, "session", "save", str(session), "--feed", str(feed))
    session_id, _, _ = peek(str(session))
    env = {**os.environ, "CONTEXTMESH_HOME": str(home)}
    env.pop("PREFECT_API_URL", None)  # serve.py finds the managed server of CONTEXTMESH_HOME
    env.pop(POLL_SETTING, None)
    env.pop(REACT_SETTING, None)
    env[WARM_SETTING] = "1" if warm else "0"
    if poll is not None:
        env[POLL_SETTING] = str(poll)
    if react is not None:
        env[REACT_SETTING] = f"{react:g}"
    log = workdir / f"{name}-serve.log"
    argv = [sys.executable, str(ROOT / "deployments" / "serve.py"), "--session", str(session), "--feed", str(feed)]
    argv += ["--interval", f"{interval:g}", "--trigger", trigger]
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Served(home, session, feed, session_id, process, log)


def wait_for(what: str, probe: Any, timeout: float, served: Served | None = None) -> Any:
    """Poll ``probe()`` every 0.2 s until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        if served is not None and served.process.poll() is not None:
            raise RuntimeError(
                f"serve.py exited {served.process.returncode} while waiting for {what}; see {served.log}"
            )
        time.sleep(0.2)
    raise TimeoutError(f"no {what} within {timeout:g} s")


def reacting(served: Served, timeout: float) -> None:
    """Wait until serve.py's reactor watches the session (its reactions file names a live process)."""
    from contextmesh.orchestration.reactions import reacting_path, read_one

    path = reacting_path(served.session_id, served.home)
    wait_for("serve.py's reactor", lambda: read_one(path), timeout, served)


def resume_after(api: Api, served: Served, t0: float, timeout: float) -> dict[str, Any]:
    """The first plan flow run created after ``t0`` (the disproof's resume), once it is terminal."""

    def probe() -> dict[str, Any] | None:
        runs = [r for r in api.flow_runs(served.session_id, PLAN_FLOW) if _epoch(r["created"]) >= t0]
        runs.sort(key=lambda r: _epoch(r["created"]))
        return runs[0] if runs and runs[0]["state_type"] in TERMINAL else None

    return dict(wait_for("terminal resume after the advisory", probe, timeout, served))


def disproving_recheck(api: Api, served: Served, resume: dict[str, Any]) -> dict[str, Any] | None:
    """The recheck that started ``resume``: the last completed one started before the resume was created."""
    created = _epoch(resume["created"])
    runs = [
        r
        for r in api.flow_runs(served.session_id, RECHECK_FLOW)
        if r["state_type"] == "COMPLETED" and _epoch(r["start_time"]) <= created
    ]
    return max(runs, key=lambda r: _epoch(r["start_time"])) if runs else None


@dataclass
class Sample:
    """One repetition of one variant, in seconds."""

    variant: str
    closure: float
    to_recheck: float
    recheck: float
    to_resume: float
    resume: float
    pickup: float = float("nan")
    spawn: float = float("nan")
    full: float = float("nan")
    repair_resume: float = float("nan")
    notes: list[str] = field(default_factory=list)


def repair_and_resume(
    home: Path, served: Served, api: Api, dispatch: str | None = None
) -> tuple[float, dict[str, Any]]:
    """``contextmesh repair`` then ``contextmesh resume`` on the served session; (start, resume run)."""
    task, key, assumes = REPAIR
    started = time.time()
    session, feed = str(served.session), str(served.feed)
    repair = ("repair", task, "--worker-key", key, "--assumes", assumes, "--session", session, "--feed", feed)
    cli(home, *repair, dispatch=dispatch)
    answer = cli(home, "resume", "--session", session, "--feed", feed, dispatch=dispatch)
    run = api.flow_run(answer["dispatched"]["flow_run_id"])
    return started, run


def measure(
    api: Api,
    served: Served,
    variant: str,
    *,
    full_loop: bool,
    timeout: float,
    deadline: float | None = None,
    dispatch: str | None = None,
) -> Sample:
    """Steps 2–4 of the module docstring on a session that serve.py already serves (``deadline``: for
    the closure, ``timeout`` by default)."""
    reacting(served, timeout)
    t0 = time.time()
    publish(served.feed, "argon2-cffi", ADVISORY_TEXT)
    resume = resume_after(api, served, t0, deadline or timeout)
    notes = [] if resume["state_type"] == "COMPLETED" else [f"resume ended {resume['state_name']}"]
    recheck = disproving_recheck(api, served, resume) or {}
    r_start, r_end = _epoch(recheck.get("start_time")), _epoch(recheck.get("end_time"))
    start, end = _epoch(resume["start_time"]), _epoch(resume["end_time"])
    sample = Sample(variant, end - t0, r_start - t0, r_end - r_start, start - r_end, end - start, notes=notes)
    states = api.states(resume["id"])
    pending = states.get("Pending", float("nan"))
    sample.pickup, sample.spawn = pending - _epoch(resume["created"]), states.get("Running", float("nan")) - pending
    if full_loop and not notes:
        began, final = repair_and_resume(served.home, served, api, dispatch)
        if final["state_type"] != "COMPLETED":
            sample.notes.append(f"repaired resume ended {final['state_name']}")
        sample.full = _epoch(final["end_time"]) - t0
        sample.repair_resume = _epoch(final["end_time"]) - began
    return sample


# -- the demo loop, for the screenshot script --------------------------------------------------


@dataclass(frozen=True)
class DemoRun:
    """What :func:`demo_loop` did: the server, the session and the two resume flow runs."""

    info: server.ServerInfo
    served: Served
    blocked_resume: dict[str, Any]
    repaired_resume: dict[str, Any]


@contextlib.contextmanager
def demo_loop(workdir: Path, *, ui: bool = True, interval: float = 5.0, timeout: float = 300.0) -> Iterator[DemoRun]:
    """The whole demo on a fresh managed server, kept running (UI included) inside the block."""
    home = workdir / "home"
    with managed_server(home, ui=ui) as info:
        api = Api(info.api_url)
        served = serve_session(home, workdir, interval=interval, trigger="run-deployment", poll=None)
        try:
            reacting(served, timeout)
            t0 = time.time()
            publish(served.feed, "argon2-cffi", ADVISORY_TEXT)
            blocked = resume_after(api, served, t0, timeout)
            _, repaired = repair_and_resume(home, served, api)
            yield DemoRun(info, served, blocked, repaired)
        finally:
            served.stop()


# -- the report --------------------------------------------------------------------------------


COLUMNS = ("closure", "to_recheck", "recheck", "to_resume", "pickup", "spawn", "resume", "full", "repair_resume")


def report(samples: list[Sample], variants: list[str]) -> None:
    """Every sample (one line each), then p50 [min-max] per figure, one column per variant."""
    width = max(len(v) for v in variants) + 2
    print("samples, seconds:")
    print(" " * (width + 4) + "".join(c.rjust(14) for c in COLUMNS))
    for sample in samples:
        cells = "".join(f"{getattr(sample, c):14.1f}" for c in COLUMNS)
        print(f"    {sample.variant.ljust(width)}{cells}" + (f"  ({'; '.join(sample.notes)})" if sample.notes else ""))
    print()
    counts = {v: len([s for s in samples if s.variant == v]) for v in variants}
    heads = [f"{v} (n={counts[v]})" for v in variants]
    cell = max(len(h) for h in heads) + 2
    print("p50 [min-max], seconds:".ljust(24) + "".join(h.rjust(cell) for h in heads))
    for column in COLUMNS:
        row = []
        for variant in variants:
            values = [getattr(s, column) for s in samples if s.variant == variant]
            values = [v for v in values if not math.isnan(v)]
            text = f"{percentile(values, 50):.1f} [{min(values):.1f}-{max(values):.1f}]" if values else "-"
            row.append(text.rjust(cell))
        print(f"    {column.ljust(20)}" + "".join(row))


Variant = tuple[str, bool, int | None, float | None, str]  # trigger, warm, runner poll, react, dispatch


def _variants(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[list[Variant], list[str]]:
    """Every variant the options name, and its printed name."""
    chosen = [v for v in args.variants.split(",") if v]
    if not chosen or not set(chosen) <= {"default", "tuned"}:
        parser.error(f"--variants {args.variants}: default and/or tuned")
    triggers = [t for t in args.triggers.split(",") if t]
    if not set(triggers) <= {"run-deployment", "automation"} or not triggers:
        parser.error(f"--triggers {args.triggers}: run-deployment and/or automation")
    dispatches = [d for d in args.dispatch.split(",") if d]
    if not dispatches or not set(dispatches) <= {"http", "prefect"}:
        parser.error(f"--dispatch {args.dispatch}: http and/or prefect")
    # (warm, runner poll, react): serve's defaults; tuned; and with --runner Prefect's runner doing the
    # running (a subprocess per flow run) at its default poll and at --poll, for the side-by-side.
    tunings: list[tuple[bool, int | None, float | None]] = []
    for warm in (True, False) if args.runner else (True,):
        tunings += [(warm, None, None)] if "default" in chosen else []
        tunings += [(warm, args.poll, args.react)] if "tuned" in chosen else []
    variants = [(t, w, p, r, d) for t in triggers for w, p, r in tunings for d in dispatches]
    names = [
        f"{t} · {'warm' if w else 'runner'} · {'default' if p is None else f'react {r:g} s, poll {p} s'}"
        + (f" · CLI over {'HTTP' if d == 'http' else 'Prefect client'}" if len(dispatches) > 1 else "")
        for t, w, p, r, d in variants
    ]
    return variants, names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of every variant (interleaved)")
    parser.add_argument("--interval", type=float, default=600.0, help="serve.py --interval: the safety-net schedule, s")
    parser.add_argument("--react", type=float, default=0.1, help=f"{REACT_SETTING} of the tuned variant, s")
    parser.add_argument("--poll", type=int, default=1, help=f"{POLL_SETTING} of the tuned variant (whole seconds)")
    parser.add_argument("--triggers", default="run-deployment", help="comma-separated: run-deployment,automation")
    parser.add_argument("--runner", action="store_true", help="also measure CONTEXTMESH_WARM_RUNS=0 (the runner)")
    parser.add_argument("--no-full-loop", action="store_true", help="skip repair + resume after the closure")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for any one step")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, sessions)")
    parser.add_argument("--variants", default="default,tuned", help="comma-separated: default,tuned (serve's settings)")
    parser.add_argument(
        "--deadline",
        type=float,
        default=120.0,
        help="seconds from the advisory to the closure before serve's stacks are dumped",
    )
    parser.add_argument(
        "--dispatch",
        default="http",
        help=f"comma-separated {DISPATCH_SETTING} of the repair and resume CLI calls: http (no Prefect), prefect",
    )
    parser.add_argument(
        "--hangs", type=Path, help="where an overrun's stacks, log and runs go (default: a new temp dir)"
    )
    args = parser.parse_args()
    variants, names = _variants(parser, args)
    workdir = Path(tempfile.mkdtemp(prefix="cm-bench-deployments-"))
    hangs = args.hangs or Path(tempfile.gettempdir()) / f"cm-bench-hangs-{workdir.name.rsplit('-', 1)[-1]}"
    print(f"bench/deployments.py: serve.py --interval {args.interval:g}; variants {', '.join(names)}")
    print(f"load average before: {load_average()}")
    samples: list[Sample] = []
    try:
        with managed_server(workdir / "home") as info:
            api = Api(info.api_url)
            _say(f"managed server {info.api_url} (home {workdir / 'home'})")
            for rep in range(args.repeat):
                for (trigger, warm, poll, react, dispatch), name in zip(variants, names, strict=True):
                    served = serve_session(
                        workdir / "home",
                        workdir,
                        interval=args.interval,
                        trigger=trigger,
                        poll=poll,
                        react=react,
                        warm=warm,
                        name=f"r{rep}-{trigger}-{'warm' if warm else 'runner'}-{poll or 'default'}-{dispatch}",
                    )
                    try:
                        sample = measure(
                            api,
                            served,
                            name,
                            full_loop=not args.no_full_loop,
                            timeout=args.timeout,
                            deadline=args.deadline,
                            dispatch=dispatch,
                        )
                    except (TimeoutError, subprocess.TimeoutExpired) as exc:
                        dumped = hang_report(api, served, hangs, f"rep {rep + 1} {name}: {exc}")
                        sample = Sample(name, *([float("nan")] * 5), notes=[f"HUNG ({exc}); stacks in {dumped}"])
                    except RuntimeError as exc:
                        sample = Sample(name, *([float("nan")] * 5), notes=[str(exc)[:200]])
                    finally:
                        stopped = served.stop()
                    samples.append(sample)
                    _say(
                        f"rep {rep + 1} {name}: closure {sample.closure:.1f} s, full {sample.full:.1f} s "
                        f"(serve.py stopped in {stopped:.1f} s; load {load_average()})"
                    )
    finally:
        if args.keep:
            _say(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print()
    report(samples, names)
    print()
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A commit killed at any point leaves a directory that loads one whole generation, old or new.

Two kinds of kill:

* **Named crash points.** ``CONTEXTMESH_CRASH_AT=<step>`` makes the committing process SIGKILL itself
  at that step. For every step each kind of commit passes (ADR 0020) — a *snapshot* (every
  companion written whole), a *journalled* commit (one new segment over the carried snapshot, with
  the plan and ledger) and a *consolidating* one (a journal at its 64-segment bound replaced by one
  segment) — after a question asked and a recheck run, the directory afterwards loads the old
  generation when the kill came before
  ``manifest-published`` and exactly the new one from there on — never a mix; what was committed
  earlier is still there; the previous generation stays whole; and the lock is free. The commits
  are signed (the deployment's key in ``$CONTEXTMESH_LEDGER_KEY``), and every load is a reader that
  pins its verifier key: whichever generation survives is signed, and its tree extends the one before.
* **200 random kills.** A process commits in a loop while ``CONTEXTMESH_TRACE_STEPS`` records each
  step; the test SIGKILLs it a seeded-random 0–30 ms after its first ``save-started`` and checks the
  directory. The histogram of the last step reached must cover every step.

  Tuning, measured on a 2-core machine: a kill lands in a step with probability proportional to
  the time the committer spends after that step's mark, and a 0–30 ms delay only spreads kills
  evenly if a whole commit takes well under 30 ms with no step dwarfing the others. A bigger graph
  does the opposite (the write steps grow, the rename steps stay at microseconds), and fsync on a
  disk costs ~4 ms a step. So the workload is a *tiny* session (five companions of a few KB each)
  on tmpfs when there is one, its states dumped before the fork, so a commit cycle is ~5 ms and
  the smallest window ~2 % of it. Each kill costs ~80 ms (fork, kill, reap, load), so 200 take
  ~16 s. If by bad luck a step was still never hit after 200 kills, the loop goes on (at most to
  600) until it is; the histogram prints how many kills it took.

What SIGKILL cannot test: the kernel's page cache survives a process kill, so every byte a killed
process ``write()``-ed is still there afterwards, fsynced or not. Only a power cut (or a VM snapshot
taken without flushing) could show a missing fsync. The code's guarantee is by construction, in
``contextmesh/session/commit.py``: each companion and the manifest are written to a fresh file and
``fsync``-ed *before* their rename or link into place, and the directory is ``fsync``-ed after the
companions are renamed and after the manifest is published (the ``session.json`` pointer, which no
loader reads, is not fsynced) — so a
name never becomes durable before the bytes it names, and the manifest (the commit point) never
becomes durable before its companions' names.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
from demo_cache import DemoSessions
from session_helpers import (
    COMMIT_STEPS,
    JOURNAL_STEPS,
    PREAMBLE,
    QUESTIONS,
    build_tiny_session,
    clone,
    fast_scratch,
    listing,
    load_generation,
    run_python,
    sign_manifest,
    tiny_registry,
)

from contextmesh.demo.saved import demo_registry, open_demo_session
from contextmesh.formats.proofs import ledger_tree
from contextmesh.formats.signed_note import NoteSigner
from contextmesh.session.commit import CRASH_ENV, TRACE_ENV
from contextmesh.session.heads import KEY_VARIABLE
from contextmesh.session.layout import MANIFEST, MAX_SEGMENTS, POINTER_NAME
from contextmesh.session.load import Loaded, load_directory
from contextmesh.session.session import Session

KINDS = {"snapshot": COMMIT_STEPS, "journal": JOURNAL_STEPS, "consolidate": JOURNAL_STEPS}
KEY = NoteSigner.generate("contextmesh.test/crash")
PINNED = (KEY.verifier(),)

# Opens the session, asks a question and rechecks the plan (the graph, telemetry, resolver, plan and
# ledger all change), records the digests the commit is about to name, then commits: a snapshot, or
# journalled (consolidating when the journal is at its bound).
CRASH_SCRIPT = """
import json
from pathlib import Path
from contextmesh.core.canonical import sha256_hex
from contextmesh.demo.saved import demo_registry
from contextmesh.session.session import Session
directory, feed, expected, question, kind = sys.argv[1:6]
session = Session.load(Path(directory), registry=demo_registry(Path(feed)), policy="never")
session.ask(question)
session.runner.recheck()
payload = session.companions() if kind == "snapshot" else session.commit_payload()
digests = {k: v if isinstance(v, bytes) else v.sha256 for k, v in payload.items()}
Path(expected).write_text(json.dumps({k: v if isinstance(v, str) else sha256_hex(v) for k, v in digests.items()}))
session.commit(snapshot=kind == "snapshot")
print("committed", session.generation)
"""


@dataclass(frozen=True)
class Committed:
    """A demo directory at generation ``generation`` (the save, then asked questions), and what it holds."""

    directory: Path
    feed: Path
    loaded: Loaded
    generation: int


def _committed(root: Path, demo_sessions: DemoSessions, segments: int) -> Committed:
    """The demo saved, then asked questions until its journal holds ``segments`` segments."""
    template, feed = demo_sessions.copy(root)
    session = open_demo_session(template, feed=feed, policy="never")
    for index in range(segments):
        session.ask(QUESTIONS[index % len(QUESTIONS)])
        session.commit(signer=KEY)
    loaded = load_directory(template, registry=demo_registry(feed), trusted_keys=PINNED)
    assert len(loaded.manifest.journal) == segments
    return Committed(template, feed, loaded, session.generation)


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> dict[str, Committed]:
    """Where each kind of commit starts: one segment in the journal, or the journal at its bound."""
    one = _committed(tmp_path_factory.mktemp("crash"), demo_sessions, 1)
    full = _committed(tmp_path_factory.mktemp("crash-full"), demo_sessions, MAX_SEGMENTS)
    return {"snapshot": one, "journal": one, "consolidate": full}


@dataclass(frozen=True)
class Crashed:
    """One committing subprocess run on its own copy of the committed directory."""

    directory: Path
    proc: subprocess.CompletedProcess[str]
    digests: dict[str, str]
    trace: Path


@pytest.fixture(scope="module")
def crashed(committed: dict[str, Committed], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Crashed]:
    """For each kind, a kill at every named step (and one run with no kill, traced), two subprocesses at a time."""
    root = tmp_path_factory.mktemp("crashed")

    def run(job: tuple[str, str | None]) -> Crashed:
        kind, step = job
        start = committed[kind]
        where = root / kind / (step or "none").replace(":", "-")
        directory = clone(start.directory, where / "session")
        expected, trace = where / "expected.json", where / "trace"
        env = {CRASH_ENV: step} if step else {TRACE_ENV: str(trace)}
        env[KEY_VARIABLE] = KEY.skey()  # the deployment's key: the commit signs its head
        proc = run_python(
            CRASH_SCRIPT, str(directory), str(start.feed), str(expected), QUESTIONS[3], kind, env=env, timeout=180
        )
        digests = json.loads(expected.read_text()) if expected.exists() else {}
        return Crashed(directory, proc, digests, trace)

    jobs: list[tuple[str, str | None]] = [(kind, step) for kind, steps in KINDS.items() for step in (None, *steps)]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return {f"{kind}/{step or ''}": result for (kind, step), result in zip(jobs, pool.map(run, jobs), strict=True)}


def assert_keeps_earlier(loaded: Loaded, earlier: Loaded) -> None:
    """Nothing committed earlier is lost: the ledger and the resolver's log extend the earlier ones."""
    assert loaded.ledger is not None and earlier.ledger is not None
    assert loaded.ledger.entries[: len(earlier.ledger)] == earlier.ledger.entries
    assert loaded.resolver.log[: len(earlier.resolver.log)] == earlier.resolver.log
    assert set(earlier.graph.nodes) <= set(loaded.graph.nodes)


@pytest.mark.parametrize("kind", KINDS)
def test_a_commit_passes_every_named_step_in_order(
    committed: dict[str, Committed], crashed: dict[str, Crashed], kind: str
) -> None:
    run = crashed[f"{kind}/"]
    assert run.proc.returncode == 0, run.proc.stderr
    assert tuple(run.trace.read_text().split()) == KINDS[kind]
    loaded = load_directory(run.directory, registry=demo_registry(committed[kind].feed), trusted_keys=PINNED)
    assert len(loaded.manifest.journal) == {"snapshot": 0, "journal": 2, "consolidate": 1}[kind]


@pytest.mark.parametrize(("kind", "step"), [(kind, step) for kind, steps in KINDS.items() for step in steps])
def test_a_kill_at_any_step_leaves_one_whole_generation(
    committed: dict[str, Committed], crashed: dict[str, Crashed], tmp_path: Path, kind: str, step: str
) -> None:
    start = committed[kind]
    run = crashed[f"{kind}/{step}"]
    directory = run.directory
    assert run.proc.returncode == -signal.SIGKILL, f"exit {run.proc.returncode}: {run.proc.stderr[-2000:]}"
    assert "committed" not in run.proc.stdout

    registry = demo_registry(start.feed)
    # Whole: every digest and cross-check holds, the generation is signed and extends its predecessor.
    loaded = load_directory(directory, registry=registry, trusted_keys=PINNED)
    assert loaded.ledger is not None and loaded.manifest.ledger_tree == ledger_tree(loaded.ledger).head()
    if KINDS[kind].index(step) >= KINDS[kind].index("manifest-published"):
        assert loaded.manifest.generation == start.generation + 1
        assert {k: c.sha256 for k, c in loaded.manifest.companions().items()} == run.digests
        # The generation just superseded stays whole for a reader that read its manifest a moment ago.
        previous = load_generation(directory, start.generation, tmp_path / "scratch", registry=registry)
        assert previous.raw == start.loaded.raw
    else:
        assert loaded.manifest.generation == start.generation
        assert loaded.raw == start.loaded.raw
    assert_keeps_earlier(loaded, start.loaded)

    # The lock died with its holder: a new writer commits at once, and its sweep clears the debris.
    session = Session.load(directory, registry=registry, policy="never", trusted_keys=PINNED)
    session.ask(QUESTIONS[4])
    assert session.commit(lock_wait=0.0, signer=KEY) == loaded.manifest.generation + 1
    after = load_directory(directory, registry=registry, trusted_keys=PINNED)
    assert_keeps_earlier(after, loaded)
    names = listing(directory)
    assert not [n for n in names if n.startswith(".tmp-")]
    assert sorted(n for n in names if MANIFEST.match(n)) == [
        f"session-{g:06d}.json" for g in (session.generation - 1, session.generation)
    ]
    assert (directory / POINTER_NAME).read_bytes() == after.raw["manifest"]


# -- 200 random kills ---------------------------------------------------------------------------

# Loads the directory, dumps a run of future states ahead of time, then forks a child that commits
# them back to back with the trace on. Forking from an interpreter that has already imported
# everything keeps each kill cheap; the dumping happens before the fork so that the child's timeline
# is commit steps and little else.
ZYGOTE = """
import json, os, time, traceback
from pathlib import Path
from session_helpers import commit_variants, precompute_variants, tiny_registry, touch_all
from contextmesh.formats.signed_note import load_signer
from contextmesh.session.commit import TRACE_ENV
from contextmesh.session.session import Session

directory = Path(sys.argv[1])
registry = tiny_registry()
signer = load_signer()  # the deployment's key, from $CONTEXTMESH_LEDGER_KEY

def reply(value):
    sys.stdout.write(json.dumps(value) + "\\n")
    sys.stdout.flush()

for line in sys.stdin:
    command = json.loads(line)
    try:
        if command["cmd"] == "spawn":
            session = Session.load(directory, registry=registry, policy="never")
            start = (session.generation, session.ledger.head)
            variants = precompute_variants(session, command["commits"])
            pid = os.fork()
            if pid == 0:
                try:
                    os.environ[TRACE_ENV] = command["trace"]
                    commit_variants(session, variants, signer=signer)
                    time.sleep(120)  # out of work: wait for the kill
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(3)
            reply({
                "pid": pid, "generation": start[0], "head": start[1],
                "heads": [v.head for v in variants], "roots": [v.seal.head.root_hex for v in variants],
            })
        elif command["cmd"] == "spawn-live":
            # Journalled commits (ADR 0020) through Session.commit: each one's segment is prepared in the loop.
            session = Session.load(directory, registry=registry, policy="never")
            start = (session.generation, len(session.ledger))
            pid = os.fork()
            if pid == 0:
                try:
                    os.environ[TRACE_ENV] = command["trace"]
                    for tick in range(command["commits"]):
                        touch_all(session, tick)
                        session.commit(signer=signer)
                    time.sleep(120)
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(3)
            reply({"pid": pid, "generation": start[0], "entries": start[1]})
        elif command["cmd"] == "reap":
            _, status = os.waitpid(command["pid"], 0)
            reply({"signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None, "status": status})
        else:
            reply({"bye": True})
            break
    except Exception:
        reply({"error": traceback.format_exc()})
"""

KILLS = 200
MAX_KILLS = 600  # only if, by bad luck, some step's window was never hit in the first 200
RESET_EVERY = 25  # the ledger grows by one entry per commit; a fresh directory keeps every kill cheap


class Zygote:
    """The forking helper process, spoken to in JSON lines."""

    def __init__(self, directory: Path, log: IO[str]) -> None:
        self.log = Path(log.name)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PREAMBLE + ZYGOTE, str(directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, KEY_VARIABLE: KEY.skey()},
        )

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the zygote died: {self.log.read_text()[-3000:]}"
        answer: dict[str, Any] = json.loads(line)
        assert "error" not in answer, answer["error"]
        return answer

    def close(self) -> None:
        try:
            self.ask(cmd="quit")
        finally:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.close()
            self.proc.stdout.close()
            self.proc.wait(timeout=10)


@pytest.fixture
def zygote_dir(tmp_path: Path) -> Iterator[Path]:
    with fast_scratch(tmp_path / "fast") as scratch:
        yield scratch


def wait_for(trace: Path, text: bytes, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if trace.exists() and text in trace.read_bytes():
            return
        time.sleep(0.0002)
    raise AssertionError(f"{text!r} never appeared in {trace}")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["snapshots", "journalled"])
def test_200_random_kills_always_leave_one_whole_generation(zygote_dir: Path, tmp_path: Path, mode: str) -> None:
    """``snapshots``: precomputed full states, every companion written; ``journalled``: Session.commit in a
    loop, one segment a commit over the carried snapshot, consolidated at the journal's bound."""
    steps_of_mode = COMMIT_STEPS if mode == "snapshots" else JOURNAL_STEPS
    directory = zygote_dir / "session"
    registry = tiny_registry()
    rng = random.Random(20260229)
    histogram: Counter[str] = Counter()
    kills = 0
    earlier: Loaded | None = None
    with (tmp_path / "zygote.err").open("w") as log:
        zygote = Zygote(directory, log)
        try:
            while kills < KILLS or (set(steps_of_mode) - set(histogram) and kills < MAX_KILLS):
                if kills % RESET_EVERY == 0:
                    if directory.exists():
                        for name in listing(directory):
                            (directory / name).unlink()
                        directory.rmdir()
                    build_tiny_session(directory)
                    sign_manifest(directory, KEY)  # generation 1 as a writer holding the key would have signed it
                    earlier = None
                trace = zygote_dir / f"trace-{kills}"
                spawned = zygote.ask(cmd="spawn" if mode == "snapshots" else "spawn-live", trace=str(trace), commits=16)
                wait_for(trace, b"save-started")
                time.sleep(rng.uniform(0.0, 0.030))
                os.kill(spawned["pid"], signal.SIGKILL)
                reaped = zygote.ask(cmd="reap", pid=spawned["pid"])
                assert reaped["signal"] == signal.SIGKILL, f"the committer died otherwise: {reaped}"
                kills += 1

                steps = trace.read_text().split()
                trace.unlink()
                histogram[steps[-1]] += 1
                loaded = load_directory(directory, registry=registry, trusted_keys=PINNED)
                published = steps.count("manifest-published")
                moved = loaded.manifest.generation - spawned["generation"]
                # New exactly when the kill came at or after publication (the link precedes its step mark).
                assert moved == published or (steps[-1] == "manifest-written" and moved == published + 1), (
                    steps[-6:],
                    moved,
                )
                assert loaded.manifest.ledger_tree is not None and loaded.ledger is not None
                assert loaded.manifest.ledger_tree == ledger_tree(loaded.ledger).head()
                if mode == "snapshots":
                    expected_head = spawned["head"] if moved == 0 else spawned["heads"][moved - 1]
                    assert loaded.manifest.ledger_head == expected_head
                    if moved:
                        assert loaded.manifest.ledger_tree.root_hex == spawned["roots"][moved - 1]
                else:
                    assert len(loaded.ledger) == spawned["entries"] + moved  # one entry a commit, none lost
                if earlier is not None:
                    assert_keeps_earlier(loaded, earlier)
                earlier = loaded
        finally:
            zygote.close()

    width = max(len(s) for s in steps_of_mode)
    print(f"\nlast step reached, {kills} SIGKILLs ({mode}):")
    for name in steps_of_mode:
        print(f"  {name:<{width}} {histogram[name]:4d} {'#' * histogram[name]}")
    assert set(histogram) <= set(steps_of_mode)
    assert not set(steps_of_mode) - set(histogram), f"never hit: {set(steps_of_mode) - set(histogram)}"
    assert kills >= KILLS

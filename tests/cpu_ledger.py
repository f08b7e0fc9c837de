"""``-p cpu_ledger``: record each test's CPU (its process's and its child processes') to a file.

The suite is CPU-bound on two cores (docs/adr/0035-ci-cpu-budget.md), and a loaded machine makes
wall times say little, so this measures what a test costs in CPU: the user and system time of the
process that runs it (the xdist worker) over its setup, call and teardown, plus what its child
processes spent meanwhile (CLI subprocesses, serve processes, browsers, Prefect servers). A child
that outlives a test — a session's Prefect server, a module's ``serve`` process — is read from
``/proc`` at each test's start and end, so each test is charged what the child spent *during* it
(``live``: the server's work for that test's flow runs and polls), and the test that reaps it only
the rest (``children``). Before, a shared server's whole life landed on its unit's last test
(docs/adr/0040-ci-cpu-where-the-servers-work-goes.md).

Run it as ``CONTEXTMESH_CPU_LEDGER=/tmp/cpu .venv/bin/pytest -p cpu_ledger ...`` (an absolute
directory), or the whole CI run as ``CONTEXTMESH_CPU_LEDGER=/tmp/cpu bash .ci/run`` (``scripts/test``
adds the plugin to both suites then): each process appends one JSON line per test to
``<dir>/cpu-<venv>-<worker>.jsonl`` (``nodeid``, ``self``, ``children``, ``live``, ``wall``, in seconds, and
``outcome``: ``passed``, or the first phase that did not pass and how), and
the CPU its start and collection took as a line with ``nodeid`` ``<collection>``.
``python tests/cpu_ledger.py <dir> [N] [venv]`` prints the N costliest modules (of one venv's suite).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = [
    "ENV",
    "pytest_collection_finish",
    "pytest_runtest_logreport",
    "pytest_runtest_protocol",
    "summary",
]

ENV = "CONTEXTMESH_CPU_LEDGER"


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _live() -> dict[int, float]:
    """Each live descendant process's CPU so far: its own and that of the children it reaped.

    Read from ``/proc/<pid>/task/<tid>/children`` and ``/proc/<pid>/stat`` (empty where there is no
    ``/proc``). A process that exits between the two reads is skipped: its CPU lands where it is reaped.
    """
    spent: dict[int, float] = {}
    pending = [os.getpid()]
    while pending:
        pid = pending.pop()
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                pending.extend(int(child) for child in (task / "children").read_text(encoding="ascii").split())
            except OSError:
                continue
        if pid == os.getpid():
            continue
        try:
            # after "pid (comm)", which may hold spaces: utime, stime, cutime, cstime are proc(5)'s
            # fields 14-17, the 12th to 15th after the command
            fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        spent[pid] = sum(int(value) for value in fields[11:15]) / _TICK
    return spent


def _write(config: pytest.Config, record: dict[str, object]) -> None:
    where = os.environ.get(ENV)
    if not where:
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    Path(where).mkdir(parents=True, exist_ok=True)
    # The venv names the suite (.venv: the main suite, .venv-core: the core suite); both have a gw0.
    with (Path(where) / f"cpu-{Path(sys.prefix).name}-{worker}.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def pytest_collection_finish(session: pytest.Session) -> None:
    """The process's CPU up to the end of its collection (interpreter start and imports included)."""
    _write(
        session.config,
        {
            "nodeid": "<collection>",
            "self": _cpu(resource.RUSAGE_SELF),
            "children": _cpu(resource.RUSAGE_CHILDREN),
            "wall": 0.0,
        },
    )


_OUTCOMES: dict[str, str] = {}  # nodeid -> "passed", or the first phase that did not pass and how


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome != "passed" and _OUTCOMES.get(report.nodeid, "passed") == "passed":
        _OUTCOMES[report.nodeid] = f"{report.when} {report.outcome}"
    _OUTCOMES.setdefault(report.nodeid, "passed")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    own, children, wall = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), time.monotonic()
    before = _live()
    yield
    after = _live()
    # A child alive at both ends is charged its growth; one born during the test all it spent. One
    # that ended during it is in the reaped children's figure with its whole life, of which the part
    # before this test was charged to earlier tests: that part comes off.
    live = sum(spent - before.get(pid, 0.0) for pid, spent in after.items())
    charged_before = sum(spent for pid, spent in before.items() if pid not in after)
    _write(
        item.config,
        {
            "nodeid": item.nodeid,
            "self": round(_cpu(resource.RUSAGE_SELF) - own, 3),
            "children": round(_cpu(resource.RUSAGE_CHILDREN) - children - charged_before, 3),
            "live": round(live, 3),
            "wall": round(time.monotonic() - wall, 3),
            "outcome": _OUTCOMES.pop(item.nodeid, "not run"),
        },
    )


def summary(directory: Path, top: int = 60, venv: str = "") -> list[str]:
    """The modules by CPU (self + children), most first, and the run's totals (of ``venv``'s files, or all)."""
    modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])  # self, children, wall, tests
    collection = 0.0
    for path in sorted(directory.glob("cpu-*.jsonl")):
        if venv and path.stem[len("cpu-") :].rsplit("-", 1)[0] != venv:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record["nodeid"] == "<collection>":
                collection += record["self"] + record["children"]
                continue
            row = modules[record["nodeid"].split("::", 1)[0]]
            row[0] += record["self"]
            row[1] += record["children"] + record.get("live", 0.0)  # what child processes spent during it
            row[2] += record["wall"]
            row[3] += 1
    total = sum(row[0] + row[1] for row in modules.values())
    lines = [f"tests {total:.0f} CPU-s (+ {collection:.0f} CPU-s collecting), {len(modules)} modules"]
    lines.append(f"{'cpu':>8} {'self':>8} {'child':>8} {'wall':>8} {'n':>5}  module")
    ranked = sorted(modules.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    for module, (own, children, wall, count) in ranked[:top]:
        lines.append(f"{own + children:8.1f} {own:8.1f} {children:8.1f} {wall:8.1f} {count:5.0f}  {module}")
    return lines


if __name__ == "__main__":
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    print("\n".join(summary(Path(sys.argv[1]), top, sys.argv[3] if len(sys.argv) > 3 else "")))

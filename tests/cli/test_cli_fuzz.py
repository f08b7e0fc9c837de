"""Fuzz the command line: every command, 800 generated bad argument vectors, never a traceback.

The commands are enumerated from the argparse parser itself (:func:`leaf_parsers`), and each
option's good and bad values come from its value type's ``kind`` (:mod:`contextmesh.cli.options`),
so a new command or option is covered without touching this file. Each vector is a well-formed
command line with at least one defect that cannot be valid: a value breaking its option's rule
(wrong type, negative, huge, NaN, inf, empty, a file where a directory is expected, a directory or
fifo where a file is, a missing path), an unknown option, a stray positional, a required option
left out, an option missing its value, mutually exclusive options together — or a directory that
is not a session (empty, junk, a broken manifest), refused when the command opens it.

Every vector must fail with exit status 2 (usage) or 1 (refused), write exactly one line to stderr
and nothing to stdout — or, under ``--json``, exactly one ``{"error": …}`` document — and never an
internal error. Vectors run in-process through ``main(argv)``; a sample runs again as real
processes. ``PREFECT_API_URL`` points at a closed loopback port, so every command that would talk to
Prefect is refused at once; starting a server or exec'ing serve.py would fail the test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import closed_api_url, failure_document, make_fifo
from demo_cache import DemoSessions
from session_helpers import clone, manifest_doc

from contextmesh.cli import main
from contextmesh.cli.parser import build_parser, leaf_parsers
from contextmesh.formats.signed_note import NoteSigner

pytestmark = pytest.mark.fuzz  # seeded, in-process: about five seconds on two cores

SEED = 15
PER_COMMAND = 50
SUBPROCESS_SAMPLE = 8


@dataclass(frozen=True)
class Vector:
    command: tuple[str, ...]
    argv: list[str]
    why: str  # the defects, for the failure message


class Places:
    """Files of every kind the vectors point at, made once."""

    def __init__(self, root: Path, session: Path, feed: Path) -> None:
        self.root = root
        self.session = session
        self.feed = feed
        self.file = root / "a-file"
        self.file.write_text("a regular file\n")
        self.fifo = make_fifo(root / "a-fifo")
        self.empty = root / "empty-dir"
        self.empty.mkdir()
        self.junk = root / "junk-dir"
        self.junk.mkdir()
        (self.junk / "session-000001.txt").write_text("not a manifest\n")
        self.broken = clone(session, root / "broken-session")
        manifest_doc(self.broken)[0].write_bytes(b"[1, 2\n")
        self.vkey = root / "deploy.vkey"  # a verifier key, as `ledger key generate` prints it
        self.vkey.write_text(NoteSigner.generate("contextmesh.test/fuzz").verifier().vkey() + "\n")
        self.socket = Path(tempfile.mkdtemp(prefix="cm-fz-")) / "s"  # short: a socket path has a length limit
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.socket))
        self.counter = 0

    def fresh(self) -> str:
        self.counter += 1
        return str(self.root / f"new-{self.counter}")

    def close(self) -> None:
        self._listener.close()


def _kind(action: argparse.Action) -> str:
    if isinstance(action, argparse._StoreTrueAction):
        return "flag"
    if action.choices is not None:
        return "choice"
    kind = getattr(action.type, "kind", None)
    assert kind is not None, f"option {action.option_strings or action.dest} has no checked value type"
    return str(kind)


def _good(action: argparse.Action, places: Places, rng: random.Random) -> str:
    kind = _kind(action)
    if kind == "choice":
        return rng.choice(sorted(map(str, action.choices or ())))
    spec = action.type
    values: dict[str, list[str]] = {
        "count": [str(getattr(spec, "low", 0) + rng.randint(0, 1))],
        "seconds": ["0.5", "30"],
        "text": ["What made the sharding rule wrong?", "bcrypt has no open advisory"],
        "key": ["hashing", "auth.bcrypt.v1"],
        "date": ["2026-01-01"],
        "policy": ["mentions,cites"],
        "embedder": ["hashed"],  # the fuzz's sessions are the hashed default's; another is refused (exit 1)
        "existing-dir": [str(places.session)],
        "new-dir": [places.fresh()],
        "out-dir": [places.fresh()],
        "feed-file": [str(places.feed)],
        "ledger-entry": ["1", "11", "ab" * 32, "receipt:1"],
        "key-file": [str(places.vkey)],
        "existing-file": [str(places.file), str(places.vkey)],
        "new-file": [places.fresh()],
        "out-file": [places.fresh(), str(places.root / "export.json")],
        "key-name": ["example.org/deploy"],
        "timestamp": ["2026-03-01T12:00:00+00:00", "2026-03-01T12:00:00Z"],
        "read-path": [str(places.file), str(places.empty)],
        "read-file": [str(places.file)],
        "write-file": [places.fresh()],
    }
    return rng.choice(values[kind])


def _bad(action: argparse.Action, places: Places, rng: random.Random) -> str:
    kind = _kind(action)
    spec = action.type
    high = getattr(spec, "high", 10)
    low = getattr(spec, "low", 0)
    missing = str(places.root / "missing" / "path")
    under_file = f"{places.file}/below"
    values: dict[str, list[str]] = {
        "choice": ["bogus", "", "PREFECT", "start "],
        "count": ["-3", "1e8", "nan", "inf", "", "abc", "1.5", "9" * 30, str(int(high) + 1), "٣", " 1", "0x10", "1_0"]
        + (["0"] if low >= 1 else []),
        "seconds": ["0", "-1", "nan", "inf", "-inf", "", "soon", "1e400", str(high * 2), "0x10"],
        "text": ["", "   ", "\t", "a\nb", "nul\x00byte", "\x1b[31mred", "x" * 4001, "\udcff", "zero\u200bwidth"],
        "key": ["", "a b", "\t", "x" * 201, "nul\x00", "with space", "\udcff"],
        "date": ["", "2026-13-01", "2026-02-30", "20260101", "yesterday", "2026-1-1", "２０２６-01-01"],
        "policy": ["", ",,,", "mentions,,cites", "links_to", "mentions,mentions", "MENTIONS"],
        "embedder": ["", "bert", "HASHED", "hashed-0", "hashed-5000", "hashed-", "package:", "package:a b", "model:\t"],
        "existing-dir": ["", missing, str(places.file), str(places.fifo), under_file, str(places.socket), "a\x00b"],
        "new-dir": ["", str(places.file), str(places.fifo), str(places.junk), under_file, str(places.socket)],
        "out-dir": ["", str(places.file), str(places.fifo), under_file, str(places.socket)],
        "feed-file": ["", str(places.empty), str(places.fifo), under_file, str(places.socket)],
        "ledger-entry": [
            "0",
            "-1",
            "",
            "x",
            "1.5",
            "AB" * 32,
            "ab" * 31,
            " 1",
            "٣",
            "9" * 17,
            "seq:1",
            "receipt:0",
            "receipt:",
            "receipt:-1",
            "RECEIPT:1",
            "receipt: 1",
            "receipt:1.0",
        ],
        "key-file": [
            "",
            missing,
            str(places.file),
            str(places.fifo),
            str(places.empty),
            under_file,
            str(places.socket),
        ],
        "existing-file": ["", missing, str(places.fifo), str(places.empty), under_file, str(places.socket)],
        "new-file": ["", str(places.file), str(places.empty), str(places.fifo), under_file, missing],
        "out-file": ["", str(places.empty), str(places.fifo), under_file, str(places.socket), missing],
        "key-name": ["", "a b", "a+b", "\t", "x" * 201, "nul\x00", "\udcff"],
        "timestamp": ["", "2026-03-01", "2026-03-01T12:00:00", "yesterday", "2026-13-01T00:00:00Z", "nan"],
        "read-path": ["", missing, str(places.fifo), under_file, str(places.socket)],
        "read-file": ["", missing, str(places.empty), str(places.fifo), str(places.socket)],
        "write-file": ["", str(places.empty), str(places.fifo), under_file, str(places.socket)],
    }
    return rng.choice(values[kind])


def _not_a_session(places: Places, rng: random.Random) -> str:
    """A directory that passes the parse-time check and is refused when the command opens it (exit 1)."""
    return rng.choice([str(places.empty), str(places.junk), str(places.broken)])


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    skip = (argparse._HelpAction, argparse._SubParsersAction)
    return [a for a in parser._actions if not isinstance(a, skip) and a.dest != "json"]


def _assemble(command: tuple[str, ...], chosen: dict[argparse.Action, str | None], rng: random.Random) -> list[str]:
    """The command words, the positionals in order, each option inserted at a random place among them."""
    words: list[list[str]] = [[v] for a, v in chosen.items() if not a.option_strings and v is not None]
    for action, value in chosen.items():
        if action.option_strings:
            flag = rng.choice(action.option_strings)
            option = [flag] if value is None else [flag, value]
            words.insert(rng.randint(0, len(words)), option)
    return [*command, *(token for word in words for token in word)]


def _required(action: argparse.Action) -> bool:
    return action.required or (not action.option_strings and action.nargs != "?")


def _break(
    defect: str,
    parser: argparse.ArgumentParser,
    chosen: dict[argparse.Action, str | None],
    places: Places,
    rng: random.Random,
) -> tuple[str, list[str], list[str]] | None:
    """Apply one defect: (what it is, tokens to put anywhere, tokens to put last) — None when it does not apply."""
    actions = _actions(parser)
    valued = [a for a in actions if _kind(a) != "flag"]
    flags = [a for a in actions if _kind(a) == "flag"]
    if defect == "bad-value" and valued:
        target = rng.choice(valued)
        chosen[target] = _bad(target, places, rng)
        return f"bad {target.option_strings or target.dest}", [], []
    if defect == "missing-required" and [a for a in actions if _required(a)]:
        target = rng.choice([a for a in actions if _required(a)])
        chosen.pop(target, None)
        return f"without {target.option_strings or target.dest}", [], []
    if defect == "no-value" and [a for a in valued if a.option_strings]:
        target = rng.choice([a for a in valued if a.option_strings])
        chosen.pop(target, None)
        return f"{target.option_strings[-1]} with no value", [], [target.option_strings[-1]]
    if defect == "flag-value" and flags:
        target = rng.choice(flags)
        chosen.pop(target, None)
        return "a value on a flag", [f"{target.option_strings[-1]}={rng.choice(['1', 'yes', 'no'])}"], []
    if defect == "exclusive" and parser._mutually_exclusive_groups:
        for action in rng.choice(parser._mutually_exclusive_groups)._group_actions:
            chosen[action] = None
        return "exclusive options together", [], []
    if defect == "stray-positional":
        for action in actions:  # fill every optional positional first, so the stray one is one too many
            if not action.option_strings and action not in chosen:
                chosen[action] = _good(action, places, rng)
        return "a stray positional", [rng.choice(["extra", "42", "-", places.fresh()])], []
    if defect == "unknown-option":
        return "an unknown option", [rng.choice(["--bogus", "--bogus=1", "-x", "--rou", "--jso", "--session-dir"])], []
    return None


DEFECTS = ["bad-value", "bad-value", "unknown-option", "stray-positional", "missing-required", "no-value"]
DEFECTS += ["flag-value", "exclusive"]


def _vector(command: tuple[str, ...], parser: argparse.ArgumentParser, places: Places, rng: random.Random) -> Vector:
    chosen: dict[argparse.Action, str | None] = {}
    for action in _actions(parser):
        if _required(action) or rng.random() < 0.3:
            chosen[action] = None if _kind(action) == "flag" else _good(action, places, rng)
    why: list[str] = []
    anywhere: list[str] = []
    last: list[str] = []
    directories = [a for a in _actions(parser) if _kind(a) == "existing-dir"]
    if directories and rng.random() < 0.4:
        # The one defect is a directory that is not a session: the handler, not the parser, refuses it.
        target = rng.choice(directories)
        chosen[target] = _not_a_session(places, rng)
        return Vector(
            command, _json_somewhere(_assemble(command, chosen, rng), rng), "a directory that is not a session"
        )
    picked = rng.sample(DEFECTS, rng.randint(1, 2))
    if "missing-required" in picked and "stray-positional" in picked:
        picked.remove("stray-positional")  # the stray word would stand in for the missing positional
    for defect in picked:
        applied = _break(defect, parser, chosen, places, rng)
        if applied is not None:
            why.append(applied[0])
            anywhere += applied[1]
            last += applied[2]
    if not why:
        why.append("an unknown option")
        anywhere.append("--bogus")
    argv = _assemble(command, chosen, rng)
    for token in anywhere:
        argv.insert(rng.randint(len(command), len(argv)), token)
    return Vector(command, _json_somewhere([*argv, *last], rng), ", ".join(why))


def _json_somewhere(argv: list[str], rng: random.Random) -> list[str]:
    if rng.random() < 0.5:
        argv.insert(rng.randint(0, len(argv)), "--json")
    return argv


def generate(places: Places) -> list[Vector]:
    rng = random.Random(SEED)
    leaves = leaf_parsers(build_parser())
    return [_vector(command, parser, places, rng) for command, parser in leaves.items() for _ in range(PER_COMMAND)]


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory, demo_sessions: DemoSessions) -> Iterator[Places]:
    root = tmp_path_factory.mktemp("fuzz")
    session, feed = demo_sessions.copy(root / "template-root")
    made = Places(root, session, feed)
    yield made
    made.close()


@pytest.fixture
def guarded(places: Places, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A closed Prefect API, a private home, and no way to start a server or exec serve.py."""
    saved = dict(os.environ)
    env = {"PREFECT_API_URL": closed_api_url(), "CONTEXTMESH_HOME": str(places.root / "home")}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CONTEXTMESH_DEBUG", raising=False)
    monkeypatch.chdir(places.root)

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("a fuzz vector was accepted far enough to start a server or exec serve.py")

    monkeypatch.setattr(os, "execv", refuse)
    try:
        from contextmesh.orchestration import local_server as server  # absent from the core-only install
    except ImportError:
        pass
    else:
        monkeypatch.setattr(server, "start", refuse)
    yield env
    os.environ.clear()
    os.environ.update(saved)  # execute's prepare_environment writes Prefect defaults into os.environ


def _check(vector: Vector, code: int, out: str, err: str) -> dict[str, Any] | None:
    where = f"{vector.argv!r} ({vector.why})"
    assert code in (1, 2), f"{where}: exit {code}\nstdout: {out[:500]}\nstderr: {err[:2000]}"
    assert "Traceback" not in err, f"{where}:\n{err}"
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("contextmesh"), f"{where}: stderr is not one line:\n{err[:2000]}"
    if "--json" in vector.argv[: vector.argv.index("--") if "--" in vector.argv else None]:
        error = failure_document(out)
        assert error["type"] != "InternalError", f"{where}: {error}"
        assert (error["type"] == "UsageError") == (code == 2), f"{where}: {error} with exit {code}"
        return error
    assert out == "", f"{where}: a failure printed on stdout:\n{out[:500]}"
    assert "internal error" not in lines[0], f"{where}: {lines[0]}"
    return None


def test_every_command_refuses_every_bad_vector_in_one_line(
    places: Places, guarded: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    vectors = generate(places)
    assert len(vectors) >= 500
    commands = {v.command for v in vectors}
    assert commands == set(leaf_parsers(build_parser())), "every command of the parser is fuzzed"
    assert {("session", "save"), ("demo", "advisory"), ("serve",), ("execute",)} <= commands
    statuses: dict[int, int] = {}
    for vector in vectors:
        code = main(vector.argv)
        captured = capsys.readouterr()
        _check(vector, code, captured.out, captured.err)
        statuses[code] = statuses.get(code, 0) + 1
    assert statuses.get(1, 0) >= 80 and statuses.get(2, 0) >= 400, statuses  # both kinds of refusal are exercised
    assert sorted(p.name for p in places.empty.iterdir()) == [] and places.file.read_text() == "a regular file\n"


def test_a_sample_of_vectors_fails_the_same_way_in_a_real_process(
    places: Places, guarded: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    vectors = generate(places)
    sample = [v for v in vectors[:: len(vectors) // SUBPROCESS_SAMPLE] if "\x00" not in "".join(v.argv)]
    sample = [v for v in sample if not any("\udcff" in a for a in v.argv)][:SUBPROCESS_SAMPLE]
    expected = []
    for vector in sample:
        code = main(vector.argv)
        captured = capsys.readouterr()
        expected.append((code, _check(vector, code, captured.out, captured.err)))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "contextmesh", *v.argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **guarded},
            cwd=places.root,
        )
        for v in sample
    ]
    for vector, proc, (code, error) in zip(sample, procs, expected, strict=True):
        out, err = proc.communicate(timeout=120)
        real = _check(vector, proc.returncode, out, err)
        assert proc.returncode == code, f"{vector.argv!r}: in-process {code}, real process {proc.returncode}: {err}"
        if error is not None:
            assert real is not None and json.dumps(real, sort_keys=True) == json.dumps(error, sort_keys=True)

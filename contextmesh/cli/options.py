"""The value types of the command line's options: each checks its text when the arguments are parsed.

Every option and positional of every command has one of these types, so a bad value is refused
before anything runs, with one line naming the value and the rule (exit status 2). Each type is an
instance with a ``kind`` (the family it belongs to: ``count``, ``seconds``, ``text``, ``existing-dir``
…) so a test can enumerate the parser and know what a good and a bad value of each option is.

Paths are checked for what they are *now* (a directory where one is expected, a regular file or
nothing where a file is written, never a fifo or a device, which would block a reader). The
commands still handle what changes between the check and the use: this is the clear first refusal,
not the only one.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from contextmesh.core.errors import InputError
from contextmesh.core.ids import key_problem

__all__ = [
    "MAX_INTERVAL",
    "MAX_ROUNDS",
    "MAX_THREADS",
    "MAX_WAIT",
    "Count",
    "EdgePolicy",
    "EmbedderChoice",
    "IsoDate",
    "Key",
    "PathOption",
    "Seconds",
    "Text",
    "shown",
]

MAX_ROUNDS = 1000  # about 40 s of walks on one core; the demo's telemetry settles well before
MAX_THREADS = 64
MAX_WAIT = 86_400.0  # one day
MAX_INTERVAL = 2_592_000.0  # thirty days
_PATH_SHOWN = 500  # a path is shown whole unless absurdly long: a cut path does not say which file
_DIGITS = re.compile(r"[0-9]{1,12}")
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})


def shown(text: str, limit: int = 80) -> str:
    """``text`` quoted for a message: the whole of a short value, a prefix and the length of a long one."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


def _refuse(text: str, why: str, *, limit: int = 80) -> argparse.ArgumentTypeError:
    # "why" starts with what is wrong ("is negative", "holds …") and ends with the rule.
    return argparse.ArgumentTypeError(f"{shown(text, limit)} {why}")


def _refuse_path(text: str, why: str) -> argparse.ArgumentTypeError:
    return _refuse(text, why, limit=_PATH_SHOWN)


@dataclass(frozen=True)
class Count:
    """A whole number of ``noun`` from ``low`` to ``high`` (ASCII digits only: no sign, exponent or '_')."""

    noun: str
    low: int
    high: int
    kind: str = "count"

    @property
    def rule(self) -> str:
        return f"the rule is a whole number of {self.noun} from {self.low} to {self.high:,}"

    def __call__(self, text: str) -> int:
        if not _DIGITS.fullmatch(text):
            problem = "is negative" if re.fullmatch(r"-[0-9]+", text) else "is not a whole number"
            raise _refuse(text, f"{problem}; {self.rule}")
        value = int(text)
        if value < self.low:
            raise _refuse(text, f"is below {self.low}; {self.rule}")
        if value > self.high:
            raise _refuse(text, f"is above {self.high:,}; {self.rule}")
        return value


@dataclass(frozen=True)
class Seconds:
    """A positive, finite number of seconds no larger than ``high``."""

    high: float
    kind: str = "seconds"

    @property
    def rule(self) -> str:
        return f"the rule is a positive, finite number of seconds, at most {self.high:,.0f}"

    def __call__(self, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise _refuse(text, f"is not a number; {self.rule}") from None
        if not math.isfinite(value):
            raise _refuse(text, f"is not finite; {self.rule}")
        if value <= 0:
            raise _refuse(text, f"is not positive; {self.rule}")
        if value > self.high:
            raise _refuse(text, f"is above {self.high:,.0f}; {self.rule}")
        return value


def _text_problem(text: str, limit: int) -> str | None:
    if not text.strip():
        return "is empty"
    if len(text) > limit:
        return f"is longer than {limit:,} characters"
    for char in text:
        if unicodedata.category(char) in _BAD_CATEGORIES:
            return f"holds the control or unassigned character {char!r}"
    return None


@dataclass(frozen=True)
class Text:
    """One line of text: not blank, no control, format, surrogate or unassigned characters, at most ``limit``."""

    what: str
    limit: int = 2000
    kind: str = "text"

    def __call__(self, text: str) -> str:
        problem = _text_problem(text, self.limit)
        if problem is not None:
            raise _refuse(
                text, f"{problem}; the rule is {self.what}: one line of text of 1 to {self.limit:,} characters"
            )
        return text


@dataclass(frozen=True)
class Key:
    """A worker/auditor key or a package name: the registry's key rule (no whitespace, no control characters)."""

    what: str
    kind: str = "key"

    def __call__(self, text: str) -> str:
        problem = key_problem(text)
        if problem is None and _text_problem(text, 200) is not None:
            problem = "a key may hold only assigned, printable characters"
        if problem is not None:
            raise _refuse(text, f"is refused; the rule is {self.what}: {problem}")
        return text


@dataclass(frozen=True)
class IsoDate:
    """A source-time date, ``YYYY-MM-DD`` (the rule :func:`contextmesh.belief.temporal.date_of` applies)."""

    kind: str = "date"

    def __call__(self, text: str) -> str:
        from contextmesh.belief.temporal import date_of  # noqa: PLC0415 - the belief layer only when the option is given

        try:
            date_of(text, "--as-of")
        except InputError:
            raise _refuse(text, "is not a date; the rule is a calendar date written YYYY-MM-DD") from None
        return text


@dataclass(frozen=True)
class EmbedderChoice:
    """An embedder choice (ADR 0031): hashed, hashed-<n>, model:<directory> (from here) or package:<name>."""

    kind: str = "embedder"

    def __call__(self, text: str) -> str:
        from contextmesh.project.embedding import check_spec  # noqa: PLC0415 - only when the option is given

        try:
            return check_spec(text, "--embedder", root=Path.cwd())
        except InputError as exc:
            raise _refuse(text, f"is not an embedder; the rule is {exc.rule}") from None


@dataclass(frozen=True)
class EdgePolicy:
    """Comma-separated edge type names of GRAPH.md, each once, none empty."""

    kind: str = "policy"

    def __call__(self, text: str) -> tuple[str, ...]:
        from contextmesh.core.ontology import ONTOLOGY  # noqa: PLC0415

        legal = list(ONTOLOGY.edge_types)
        names = tuple(part.strip() for part in text.split(","))
        rule = f"the rule is comma-separated edge types of GRAPH.md, each once, from {', '.join(legal)}"
        if "" in names:
            raise _refuse(text, f"holds an empty name; {rule}")
        unknown = [name for name in names if name not in legal]
        if unknown:
            raise _refuse(text, f"names {', '.join(map(repr, unknown))}, which is not an edge type; {rule}")
        if len(set(names)) != len(names):
            raise _refuse(text, f"names an edge type twice; {rule}")
        return names


def _path_problem(text: str) -> str | None:
    if not text:
        return "is empty (it would mean the current directory)"
    if "\x00" in text:
        return "holds a NUL byte"
    if any(unicodedata.category(char) == "Cs" for char in text):
        return "is not valid UTF-8 (names are written into JSON and text)"
    return None


def _not_a_dir(parent: Path) -> str:
    return f"lies under {str(parent)!r}, which is not a directory"


def _status(path: Path) -> os.stat_result | str | None:
    """The path's stat (following links), None when it does not exist, or why it cannot be looked at."""
    try:
        return path.stat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        blocker = next((p for p in reversed(path.parents) if p.exists() and not p.is_dir()), None)
        return "has a file where a directory is expected" if blocker is None else _not_a_dir(blocker)
    except OSError as exc:
        return f"cannot be looked at ({exc.strerror})"


def _ancestor_problem(path: Path) -> str | None:
    """Why the nearest existing ancestor of an absent ``path`` cannot hold it (None: it can)."""
    for parent in path.absolute().parents:
        found = _status(parent)
        if found is None:
            continue
        if isinstance(found, str):
            return f"lies under a path that {found}"
        if not stat.S_ISDIR(found.st_mode):
            return _not_a_dir(parent)
        return None
    return None


def _kind_of(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a fifo"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device or other special file"


def _examined(text: str, rule: str, *, may_be_absent: bool) -> tuple[Path, os.stat_result | None]:
    """The path ``text`` names and what is there (``None``: nothing, which ``may_be_absent`` allows,
    under a parent that could hold it); every refusal names the value and ``rule``."""
    problem = _path_problem(text)
    if problem is not None:
        raise _refuse_path(text, f"{problem}; {rule}")
    path = Path(text)
    found = _status(path)
    if isinstance(found, str):
        raise _refuse_path(text, f"{found}; {rule}")
    if found is None:
        if not may_be_absent:
            raise _refuse_path(text, f"does not exist; {rule}")
        problem = _ancestor_problem(path)
        if problem is not None:
            raise _refuse_path(text, f"{problem}; {rule}")
    return path, found


@dataclass(frozen=True)
class PathOption:
    """A directory path. ``kind``: ``existing-dir`` (must be one), ``new-dir`` (absent or an empty
    directory) or ``out-dir`` (absent or a directory); what it is for is ``what``."""

    what: str
    kind: str

    def __call__(self, text: str) -> Path:
        rule = f"the rule is {self.what}"
        path, found = _examined(text, rule, may_be_absent=self.kind != "existing-dir")
        if found is None:
            return path
        if not stat.S_ISDIR(found.st_mode):
            raise _refuse_path(text, f"is {_kind_of(found.st_mode)}; {rule}")
        if self.kind == "new-dir":
            try:
                occupied = any(path.iterdir())
            except OSError as exc:
                raise _refuse_path(text, f"cannot be listed ({exc.strerror}); {rule}") from None
            if occupied:
                raise _refuse_path(text, f"is a directory that is not empty; {rule}")
        return path


@dataclass(frozen=True)
class FilePath:
    """A file or folder path. ``kind``: ``read-path`` (an existing regular file or directory),
    ``read-file`` (an existing regular file) or ``write-file`` (a regular file, or a new name in an
    existing directory tree); what it is for is ``what``."""

    what: str
    kind: str

    def __call__(self, text: str) -> Path:
        rule = f"the rule is {self.what}"
        path, found = _examined(text, rule, may_be_absent=self.kind == "write-file")
        if found is None:
            return path
        allowed = stat.S_ISREG(found.st_mode) or (self.kind == "read-path" and stat.S_ISDIR(found.st_mode))
        if not allowed:
            raise _refuse_path(text, f"is {_kind_of(found.st_mode)}; {rule}")
        return path

"""The value types of the ``ledger`` and ``lineage`` commands' options, checked when the arguments are parsed.

Each has a ``kind``, like the types of :mod:`contextmesh.cli.options`, so the command-line fuzz test
knows a good and a bad value of every option: ``ledger-entry`` (a sequence number or an entry
digest), ``key-file`` (a file holding one verifier key), ``existing-file``, ``new-file`` (never an
existing name: a key is never written over anything), ``out-file``, ``key-name`` and
``timestamp``. Files are checked for what they are now — never opened if they are a fifo or a device
— and read bounded; the commands still handle what changes between the check and the use.
"""

from __future__ import annotations

import argparse
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from contextmesh.cli.options import _kind_of, _path_problem, _status, shown

if TYPE_CHECKING:
    from contextmesh.formats.signed_note import NoteVerifier

__all__ = [
    "MAX_KEY_FILE_BYTES",
    "EntryRef",
    "ExistingFile",
    "KeyName",
    "LedgerEntry",
    "NewFile",
    "OutFile",
    "Timestamp",
    "VerifierKeyFile",
]

MAX_KEY_FILE_BYTES = 4096  # a verifier key is about 100 bytes; signed_note's bound for key files
MAX_SEQ = 2**53 - 1
_SEQ = re.compile(r"[0-9]{1,16}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_PATH_SHOWN = 500


def _refuse(text: str, why: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"{shown(text, _PATH_SHOWN)} {why}")


def _looked_at(text: str, rule: str) -> tuple[Path, os.stat_result | None]:
    """The path and what is there now (None: nothing), or a refusal naming why it cannot be used —
    the same checks every path option of the CLI makes (:mod:`contextmesh.cli.options`)."""
    problem = _path_problem(text)
    if problem is not None:
        raise _refuse(text, f"{problem}; {rule}")
    path = Path(text)
    found = _status(path)
    if isinstance(found, str):
        raise _refuse(text, f"{found}; {rule}")
    return path, found


def _parent_holds(text: str, path: Path, rule: str) -> None:
    parent = path.absolute().parent
    try:
        found = parent.stat()
    except OSError:
        raise _refuse(text, f"lies under {str(parent)!r}, which is not an existing directory; {rule}") from None
    if not stat.S_ISDIR(found.st_mode):
        raise _refuse(text, f"lies under {str(parent)!r}, which is not a directory; {rule}")


@dataclass(frozen=True)
class EntryRef:
    """A ledger entry named on the command line: by its ``seq``, its ``digest`` or as the ``receipt``-th disproof."""

    seq: int | None
    digest: str | None
    receipt: int | None = None  # ``receipt:K``: the K-th disproof receipt, oldest first (what is usually proved)

    def __str__(self) -> str:
        if self.receipt is not None:
            return f"receipt {self.receipt}"
        return f"seq {self.seq}" if self.seq is not None else f"digest {self.digest}"


@dataclass(frozen=True)
class LedgerEntry:
    """A sequence number (1 for the first entry), an entry digest (64 lower-case hex digits), or
    ``receipt:K``, the K-th disproof receipt (K from 1)."""

    kind: str = "ledger-entry"

    def __call__(self, text: str) -> EntryRef:
        rule = (
            "the rule is an entry's sequence number (1, 2, …), its digest (64 lower-case hex digits), or receipt:K "
            "for the K-th disproof receipt (receipt:1, …)"
        )
        if _DIGEST.fullmatch(text):
            return EntryRef(None, text)
        if _SEQ.fullmatch(text) and 1 <= int(text) <= MAX_SEQ:
            return EntryRef(int(text), None)
        number = text.removeprefix("receipt:")
        if number != text and _SEQ.fullmatch(number) and 1 <= int(number) <= MAX_SEQ:
            return EntryRef(None, None, int(number))
        raise _refuse(text, f"is neither; {rule}")


@dataclass(frozen=True)
class ExistingFile:
    """An existing regular file (never a fifo, which would block its reader)."""

    what: str
    kind: str = "existing-file"

    def __call__(self, text: str) -> Path:
        rule = f"the rule is {self.what}: an existing regular file"
        path, found = _looked_at(text, rule)
        if found is None:
            raise _refuse(text, f"does not exist; {rule}")
        if not stat.S_ISREG(found.st_mode):
            raise _refuse(text, f"is {_kind_of(found.st_mode)}; {rule}")
        return path


@dataclass(frozen=True)
class VerifierKeyFile:
    """A file holding one verifier key, ``<name>+<key id>+<base64>``, as ``ledger key generate`` prints it."""

    kind: str = "key-file"

    def __call__(self, text: str) -> NoteVerifier:
        from contextmesh.core.errors import ProofError  # noqa: PLC0415
        from contextmesh.formats.signed_note import NoteVerifier  # noqa: PLC0415 - loads cryptography

        rule = "the rule is a file holding one verifier key <name>+<key id>+<base64 key>"
        path = ExistingFile("a verifier key file")(text)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for something else since the stat
                    raise _refuse(text, f"is not a regular file; {rule}")
                data = os.read(fd, MAX_KEY_FILE_BYTES + 1)
            finally:
                os.close(fd)
        except OSError as exc:
            raise _refuse(text, f"cannot be read ({exc.strerror}); {rule}") from None
        if len(data) > MAX_KEY_FILE_BYTES:
            raise _refuse(text, f"is longer than {MAX_KEY_FILE_BYTES:,} bytes; {rule}")
        try:
            return NoteVerifier.from_vkey(data.decode("ascii").strip(), str(path))
        except UnicodeDecodeError:
            raise _refuse(text, f"is not ASCII text; {rule}") from None
        except ProofError as exc:
            if "PRIVATE+KEY+" in data.decode("ascii", errors="replace"):
                raise _refuse(text, f"holds a signer key, the secret half; {rule} (the public half)") from None
            raise _refuse(text, f"holds {exc.found}; {rule}") from None


@dataclass(frozen=True)
class NewFile:
    """A name where nothing exists yet, in an existing directory: a file written once, never over anything."""

    what: str
    kind: str = "new-file"

    def __call__(self, text: str) -> Path:
        rule = f"the rule is {self.what}: a new name in an existing directory"
        path, found = _looked_at(text, rule)
        if found is not None or path.is_symlink():
            raise _refuse(text, f"exists; {rule} (nothing is ever written over)")
        _parent_holds(text, path, rule)
        return path


@dataclass(frozen=True)
class OutFile:
    """A file to write: a regular file (replaced) or a new name in an existing directory."""

    what: str
    kind: str = "out-file"

    def __call__(self, text: str) -> Path:
        rule = f"the rule is {self.what}: a regular file, or a new name in an existing directory"
        path, found = _looked_at(text, rule)
        if found is not None and not stat.S_ISREG(found.st_mode):
            raise _refuse(text, f"is {_kind_of(found.st_mode)}; {rule}")
        if found is None:
            _parent_holds(text, path, rule)
        return path


@dataclass(frozen=True)
class KeyName:
    """A signed-note key name: 1 to 200 printable characters, no white space, no ``+``."""

    kind: str = "key-name"

    def __call__(self, text: str) -> str:
        rule = "the rule is a key name: 1 to 200 printable characters, no white space and no '+' (e.g. host/deployment)"
        printable = all(unicodedata.category(char)[0] != "C" for char in text)
        if not text or len(text) > 200 or "+" in text or any(c.isspace() for c in text) or not printable:
            raise _refuse(text, f"is refused; {rule}")
        return text


@dataclass(frozen=True)
class Timestamp:
    """An ISO 8601 date and time with its offset (``2026-03-01T12:00:00+00:00``, or ``…Z``)."""

    kind: str = "timestamp"

    def __call__(self, text: str) -> datetime:
        rule = "the rule is an ISO 8601 date and time with its offset, e.g. 2026-03-01T12:00:00+00:00"
        if "T" not in text:
            raise _refuse(text, f"is not a date and time; {rule}")
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise _refuse(text, f"is not a date and time; {rule}") from None
        if moment.tzinfo is None or moment.utcoffset() is None:
            raise _refuse(text, f"has no offset; {rule}")
        return moment

"""Which embedder a project's graph was built with: the choice, and a session's record of it (ADR 0031).

* :func:`check_spec` — a choice as ``contextmesh.toml``'s ``[project] embedder`` or ``--embedder``
  writes it: ``hashed`` (the default), ``hashed-<dimensions>``, ``model:<directory>`` or
  ``package:<import name>`` (the strings of :func:`~contextmesh.knowledge.sentence_model.embedder_for`).
  Checked as text only; the model itself is read when the project first embeds.
* :func:`record` / :func:`check_session` — a session directory built by a project holds
  ``embedder.json`` (``{"embedder": <name>, "spec": <choice>}``) beside its generations. A session
  is walked and ingested only with the embedder that made its vectors: another one is refused
  before anything is loaded or written (vectors of two embedders are not comparable). A session
  with no record was made before the record existed, or by a tool that only knows the default, so
  its embedder is the hashed default.

The record is a file of its own, not a manifest field or a graph attribute, so neither the session
format nor the graph file changes; the session's sweep deletes only manifests, companions and its
own temporary files, so the record stays.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from contextmesh.core import vectors
from contextmesh.core.canonical import file_bytes, loads
from contextmesh.core.errors import CanonicalError, InputError
from contextmesh.knowledge.embed import Embedder, HashedEmbedder
from contextmesh.session.files import SessionFileError, read_regular

__all__ = [
    "DEFAULT_SPEC",
    "EMBEDDER_FILE",
    "SPEC_RULE",
    "EmbedderMismatchError",
    "check_session",
    "check_spec",
    "record",
]

DEFAULT_SPEC = "hashed"
EMBEDDER_FILE = "embedder.json"
SPEC_RULE = (
    "an embedder is hashed, hashed-<dimensions 1 to 4096>, model:<a model directory> or package:<an import name>"
)
_PACKAGE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_RECORD_LIMIT = 4096


class EmbedderMismatchError(InputError):
    """A session built with one embedder was about to be walked or ingested with another."""


def check_spec(value: object, where: str, *, root: Path) -> str:
    """``value`` as a checked choice; a ``model:`` directory is resolved against ``root`` (absolute after).

    :class:`InputError` at ``where`` when it is not one of the four forms.
    """
    if type(value) is not str:
        raise InputError(where, f"a {type(value).__name__}", SPEC_RULE)
    shown = repr(value) if len(value) <= 80 else f"{value[:80]!r}… ({len(value):,} characters)"
    if value == "hashed":
        return value
    if value.startswith("hashed-"):
        digits = value[len("hashed-") :]
        if digits.isascii() and digits.isdigit() and 1 <= int(digits) <= vectors.MAX_DIMENSIONS:
            return f"hashed-{int(digits)}"
        raise InputError(where, shown, SPEC_RULE)
    if value.startswith("package:") and _PACKAGE.fullmatch(value[len("package:") :]):
        return value
    if value.startswith("model:") and value[len("model:") :].strip() and value.isprintable():
        return f"model:{(root / value[len('model:') :]).resolve()}"
    raise InputError(where, shown, SPEC_RULE)


def _recorded(directory: Path) -> tuple[str, str]:
    """(name, spec) a session's record holds; the hashed default's when it has none."""
    where = str(directory / EMBEDDER_FILE)
    rule = 'a session\'s embedder record is JSON {"embedder": name, "spec": choice}'
    try:
        data = read_regular(directory, EMBEDDER_FILE, limit=_RECORD_LIMIT)
    except FileNotFoundError:
        return HashedEmbedder().name, DEFAULT_SPEC
    except SessionFileError as exc:
        raise InputError(where, exc.found, exc.rule) from None
    if len(data) > _RECORD_LIMIT:
        raise InputError(where, f"more than {_RECORD_LIMIT} bytes", rule)
    try:
        found = loads(data, where)
    except CanonicalError as exc:
        raise InputError(where, f"not strict JSON ({exc})", rule) from None
    if not isinstance(found, dict) or set(found) != {"embedder", "spec"}:
        raise InputError(where, repr(found)[:80], rule)
    name, spec = found["embedder"], found["spec"]
    if not isinstance(name, str) or not isinstance(spec, str) or not name or not spec:
        raise InputError(where, repr(found)[:80], rule)
    return name, spec


def check_session(directory: Path, embedder: Embedder, spec: str) -> None:
    """Refuse (:class:`EmbedderMismatchError`) when ``directory``'s session was built with another embedder."""
    name, recorded_spec = _recorded(directory)
    if name != embedder.name:
        raise EmbedderMismatchError(
            str(directory / EMBEDDER_FILE),
            f"the session {directory} was built with embedder {name!r} ({recorded_spec}), "
            f"this command embeds with {embedder.name!r} ({spec})",
            f"a session is walked and ingested with the embedder that built it: pass --embedder {recorded_spec} "
            "or set [project] embedder to it, or build a new session",
        )


def record(directory: Path, embedder: Embedder, spec: str) -> None:
    """Write ``directory``'s record (atomically: a temporary file renamed over it)."""
    data = file_bytes({"embedder": embedder.name, "spec": spec})
    temporary = directory / f".{EMBEDDER_FILE}.{os.getpid()}.tmp"
    temporary.write_bytes(data)
    temporary.replace(directory / EMBEDDER_FILE)

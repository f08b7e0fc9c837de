"""What a serving process watches: the files its auditors read and the evidence in its session.

:class:`Watched` answers "what changed since I last looked?" cheaply enough to ask several times a
second (ADR 0017):

* a **file** an auditor reads (a project's ``[settings]`` file such as ``world.json``, the demo's
  advisory feed) by one ``stat``: its size, modification time and inode, so a rewrite, an
  atomic rename or a removal all count;
* the session's **submitted evidence** by the newest manifest's graph companion and journal
  segments (their names carry their digests): only when those change is the graph opened
  read-only and its set of submitted evidence ids compared — the notes a recheck or a round
  writes itself (audits, disproofs) and a disproof's rejection are not submissions, so no run of
  the plan starts another recheck.

This module does not import Prefect.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from contextmesh.core.canonical import loads
from contextmesh.core.errors import ContextMeshError
from contextmesh.session.commit import latest_generation
from contextmesh.session.files import MANIFEST_MAX_BYTES, read_regular
from contextmesh.session.layout import manifest_name, parse_manifest

__all__ = ["Watched", "auditor_files"]

Stamp = tuple[int, int, int] | None


def _stamp(path: Path) -> Stamp:
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_size, found.st_mtime_ns, found.st_ino)


def auditor_files(root: Path, settings: dict[str, object]) -> list[Path]:
    """The project's ``[settings]`` values that name a regular file inside its root: what auditors read.

    A project's registry reads its world through settings (``world = "world.json"``); a value that
    is not a relative path to an existing file in the root (a number, a word, a URL) is not watched.
    """
    found: list[Path] = []
    for value in settings.values():
        if not isinstance(value, str) or not value or Path(value).is_absolute():
            continue
        candidate = (root / value).resolve()
        if candidate.is_file() and candidate.is_relative_to(root.resolve()):
            found.append(candidate)
    return sorted(set(found))


class Watched:
    """The watched files and a session directory's evidence, with what each looked like last time."""

    def __init__(self, session_dir: Path, files: Iterable[Path]) -> None:
        self.session_dir = session_dir
        self.files = tuple(sorted({Path(f).resolve() for f in files}))
        self._stamps = {path: _stamp(path) for path in self.files}
        self._graph = self._graph_name()
        self._evidence = self._evidence_ids()

    def _graph_name(self) -> str:
        """The newest manifest's graph companion and journal segments (their digests in their names);
        empty when unreadable. A journalled commit (session v5, ADR 0020) names the same snapshot,
        so the segments are what says the graph moved."""
        try:
            generation = latest_generation(self.session_dir)
            name = manifest_name(generation)
            data = read_regular(self.session_dir, name, limit=MANIFEST_MAX_BYTES)
            manifest = parse_manifest(loads(data), generation)
            return " ".join([manifest.graph.name, *(segment.name for segment in manifest.journal)])
        except (OSError, ValueError, ContextMeshError):
            return ""  # a commit under way or a broken directory: look again next time

    def _evidence_ids(self) -> frozenset[str]:
        from contextmesh.session.session import Session  # noqa: PLC0415 - only when the graph changed

        try:
            graph = Session.open_readonly(self.session_dir).graph
        except (OSError, ValueError, ContextMeshError):
            return frozenset()
        # Submitted evidence only (``belief.evidence.submit`` stores its payload's digest): the
        # plan's own audit and disproof notes are evidence nodes too, and a recheck or a round that
        # writes them must not start another recheck.
        return frozenset(
            node.id for node in graph.nodes.values() if node.type == "evidence" and "payload_digest" in node.attrs
        )

    def changes(self) -> list[str]:
        """What changed since the last call, in words (``world.json changed``, ``new evidence …``)."""
        said: list[str] = []
        for path in self.files:
            stamp = _stamp(path)
            if stamp != self._stamps[path]:
                self._stamps[path] = stamp
                said.append(f"{path.name} {'changed' if stamp is not None else 'was removed'}")
        graph = self._graph_name()
        if graph and graph != self._graph:
            self._graph = graph
            evidence = self._evidence_ids()
            new = sorted(evidence - self._evidence)
            self._evidence = evidence or self._evidence
            if new:
                shown = ", ".join(new[:3]) + (f" and {len(new) - 3} more" if len(new) > 3 else "")
                said.append(f"new evidence {shown}")
        return said

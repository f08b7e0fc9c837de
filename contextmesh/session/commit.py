"""Commit a generation: compare-and-swap under the lock, crash-safe at every step.

``commit_generation`` takes the lock only to commit. If the directory's newest generation is still
the one the writer loaded, it writes every new companion to a fresh ``O_EXCL`` file under a random
name (which cannot already exist, so cannot be a planted symlink), fsyncs it and renames it into
place (a rename replaces a link instead of following it); companions already present under their
content address are not rewritten. It then publishes the manifest under a name that did not
exist (``os.link`` refuses to replace), fsyncs the directory, replaces the ``session.json`` pointer,
and sweeps superseded generations. A crash anywhere before the manifest's publication leaves the
previous generation serving; after it, the new one.

If the directory moved on, the commit fails with :class:`CommitConflictError` naming both generations.

A companion may also be *carried*: passed as the :class:`~contextmesh.session.layout.Companion` the
loaded generation named instead of as bytes (a journalled commit carries the snapshot and the
journal's earlier segments, ADR 0020). A carried companion is not read back, since the writer no
longer holds its bytes: under the lock, before anything is written, ``lstat`` must find a regular
file of the recorded size under its name, or the commit is refused naming it (every reader checks
its digest anyway).

A generation with a run ledger records the ledger's Merkle tree head (``ledger_tree``) and, when
the writer holds the deployment's key, its signed checkpoint. The head is computed before the lock,
from the frontier kept beside the ledger, appending only the entries recorded since
(:func:`~contextmesh.session.ledger_tree.seal_ledger`). Under the lock, before anything is written,
the previous generation's manifest is read again and the new tree must extend its head (rule C10):
no head that rewrites a committed history is recorded, let alone signed. The first commit of a v3
or v4 session writes v5 and says so once, as one line on the ``contextmesh.session`` logger.

A commit that cannot complete never escapes as a bare ``OSError``. Before anything is written it
refuses, with a :class:`SessionError` saying which name is blocked, when a fifo, a directory, a socket
or a device sits under a name it must write (the next manifest's or a companion's) and when the next
generation would need a seventh digit. A failure while writing (a read-only directory, a full disk)
is a :class:`SessionError` naming the file and the cause, raised after the commit took back everything
it had put in the directory (temps and the companions it placed, none of which a published manifest
names): the directory is as it was and the previous generation serves. Once the manifest is
published the commit has landed; refreshing the ``session.json`` copy and the sweep are then best
effort (a failure there leaves a stale copy or debris the next commit sweeps, never a lost commit).

Crash points, for tests: with ``CONTEXTMESH_CRASH_AT=<step>`` the process kills itself with
SIGKILL when it reaches that step; with ``CONTEXTMESH_TRACE_STEPS=<file>`` it appends each step
name to that file as it passes (``save-started`` first).

What SIGKILL cannot test: a kill leaves the kernel's page cache intact, so it cannot show that the
fsyncs happen. The code fsyncs each companion and the manifest before their renames, and the
directory after the renames and after publication, so a power cut leaves a complete generation.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import stat
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from contextmesh.core.canonical import file_bytes, sha256_hex
from contextmesh.core.errors import SessionError
from contextmesh.formats.run_ledger import RunLedger
from contextmesh.session.files import MANIFEST_MAX_BYTES, describe_kind, os_cause, read_regular
from contextmesh.session.heads import check_extends, previous_for_commit, sign_head
from contextmesh.session.layout import (
    COMPANION_NAME,
    COMPANIONS,
    MANIFEST,
    POINTER_NAME,
    SESSION_VERSION,
    Companion,
    Manifest,
    companion_name,
    manifest_name,
)
from contextmesh.session.ledger_tree import LedgerSeal, keep, seal_ledger
from contextmesh.session.lock import WriterLock

if TYPE_CHECKING:
    from contextmesh.formats.signed_note import NoteSigner

__all__ = ["CRASH_ENV", "TRACE_ENV", "CommitConflictError", "commit_generation", "latest_generation", "step"]

Payload = bytes | Companion  # a companion's new bytes, or one carried over from the loaded generation
CRASH_ENV = "CONTEXTMESH_CRASH_AT"
TRACE_ENV = "CONTEXTMESH_TRACE_STEPS"
# Manifest names carry six digits (layout.MANIFEST): a seventh would be invisible to every reader.
MAX_GENERATION = 999_999
_TMP_PREFIX = ".tmp-"
LOG = logging.getLogger("contextmesh.session")
# Logged after "session <dir>: " by the first commit of a v3 or v4 session.
MIGRATED = "manifest is now contextmesh.session v5 (ledger tree head recorded, mutations journalled)"


class CommitConflictError(SessionError):
    """The directory moved on since the writer loaded it."""

    def __init__(self, loaded: int, found: int) -> None:
        self.loaded, self.found = loaded, found
        super().__init__(
            f"the session moved on: this writer loaded generation {loaded}, the directory is at generation {found}"
        )


def step(name: str) -> None:
    """Mark a commit step: trace it, and die here if a test asked for a crash at it."""
    trace = os.environ.get(TRACE_ENV)
    if trace:
        with Path(trace).open("a", encoding="utf-8") as out:
            out.write(name + "\n")
            out.flush()
            os.fsync(out.fileno())
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def latest_generation(directory: Path) -> int:
    """The newest manifest generation present as a regular file (0 for none); symlinks and the rest are ignored."""
    # A writer keeps only the newest two manifests, so a reader slower than two commits can find
    # every name it listed swept before it looks at them. That directory is not empty: list again
    # (bounded, so a writer committing forever cannot hold the reader here).
    for _ in range(_RELISTS):
        best, swept = _newest_listed(directory)
        if best or not swept:
            return best
    return best


_RELISTS = 16


def _newest_listed(directory: Path) -> tuple[int, bool]:
    """The newest manifest generation in one listing, and whether a listed manifest vanished meanwhile."""
    best, swept = 0, False
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise SessionError(f"cannot list the session directory {directory}: {os_cause(exc)}") from None
    for name in names:
        match = MANIFEST.match(name)
        if match is None:
            continue
        try:
            regular = stat.S_ISREG(os.lstat(directory / name).st_mode)  # lstat: never opens, never follows
        except FileNotFoundError:
            swept = True  # swept meanwhile
            continue
        if regular:
            best = max(best, int(match.group(1)))
    return best, swept


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Attempt:
    """What one commit has put in the directory so far, so a failure can take all of it back."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.doing = "starting"
        self.temps: list[Path] = []
        self.placed: list[Path] = []

    def write_new(self, data: bytes, *, sync: bool = True) -> Path:
        """Write ``data`` to a fresh O_EXCL file under a random name (fsynced unless ``sync`` is off); its path."""
        path = self.directory / f"{_TMP_PREFIX}{secrets.token_hex(12)}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        self.temps.append(path)  # before the first write: a full disk must not leave it behind
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        return path

    def place(self, tmp: Path, final: Path) -> None:
        os.replace(tmp, final)  # a rename replaces a link instead of following it
        self.temps.remove(tmp)
        self.placed.append(final)

    def discard_temps(self) -> None:
        for path in self.temps:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self.temps.clear()

    def undo(self) -> None:
        """Remove every temp and every companion this commit placed: none is named by a published manifest."""
        self.discard_temps()
        for path in self.placed:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self.placed.clear()
        with contextlib.suppress(OSError):
            _fsync_dir(self.directory)


def _blocked(directory: Path, name: str, what: str) -> None:
    """Refuse up front when something other than a regular file or a symlink holds a name the commit writes."""
    try:
        mode = os.lstat(directory / name).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise SessionError(f"cannot commit to {directory}: cannot inspect {name}: {os_cause(exc)}") from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise SessionError(
            f"cannot commit to {directory}: {name}, where this commit must write {what}, is "
            f"{describe_kind(mode)}; nothing was written (remove it and commit again)"
        )


def _check_carried(directory: Path, kind: str, companion: Companion) -> None:
    """Refuse a carried companion that is no longer a regular file of its recorded size."""
    try:
        held = os.lstat(directory / companion.name)
    except FileNotFoundError:
        found = "missing"
    except OSError as exc:
        found = f"unreadable: {os_cause(exc)}"
    else:
        if not stat.S_ISREG(held.st_mode):
            found = describe_kind(held.st_mode)
        elif held.st_size != companion.bytes:
            found = f"{held.st_size} bytes, not the {companion.bytes} its generation records"
        else:
            return
    raise SessionError(
        f"cannot commit to {directory}: {companion.name}, the {kind} companion this commit keeps from the "
        f"generation it loaded, is {found}; nothing was written (reload the session)"
    )


def _named(companions: Mapping[str, Payload]) -> dict[str, Companion]:
    """Each companion's manifest entry, in manifest order: the kinds, then the journal's segments."""
    named: dict[str, Companion] = {}
    for kind in (*COMPANIONS, *(key for key in companions if key.startswith("journal["))):
        data = companions.get(kind)
        if isinstance(data, Companion):
            named[kind] = data
        elif data is not None:
            digest = sha256_hex(data)
            named[kind] = Companion(companion_name(kind.split("[")[0], digest), digest, len(data))
    return named


def _present(directory: Path, name: str, data: bytes) -> bool:
    """True when ``name`` already holds exactly ``data`` as a regular file (then it is not rewritten)."""
    try:
        held = read_regular(directory, name, limit=len(data))
    except (OSError, SessionError):
        return False
    return held == data


def _seal(
    directory: Path, loaded: int, companions: Mapping[str, Payload], manifest: Manifest, ledger: RunLedger | None
) -> LedgerSeal | None:
    if "runledger" not in companions:
        return None
    if ledger is None:
        raise SessionError(f"cannot commit to {directory}: a commit with a run ledger needs the ledger to seal it")
    return seal_ledger(ledger, prefixes=loaded > 0)


def commit_generation(
    directory: Path,
    *,
    loaded: int,
    companions: Mapping[str, Payload],
    manifest: Manifest,
    lock_wait: float = 2.0,
    ledger: RunLedger | None = None,
    seal: LedgerSeal | None = None,
    signer: NoteSigner | None = None,
) -> tuple[Manifest, int]:
    """Publish generation ``loaded + 1``; return its manifest and the bytes written.

    A commit with a run ledger passes the ledger (its tree head is computed here, from the frontier
    kept beside it) or a ``seal`` computed ahead; ``signer``, the deployment's key, signs the head.
    """
    step("save-started")
    seal = seal or _seal(directory, loaded, companions, manifest, ledger)
    if seal is not None and seal.digest != manifest.ledger_head:
        raise SessionError(
            f"cannot commit to {directory}: the run ledger changed while this commit was being prepared "
            f"(head {seal.digest}, the manifest's {manifest.ledger_head}); nothing was written"
        )
    with WriterLock(directory, wait=lock_wait):
        found = latest_generation(directory)
        if found != loaded:
            raise CommitConflictError(loaded, found)
        generation = loaded + 1
        if generation > MAX_GENERATION:
            raise SessionError(
                f"cannot commit to {directory}: a session directory holds at most {MAX_GENERATION} generations "
                "(six digits in a manifest's name); save the session to a new directory"
            )
        named = _named(companions)
        _blocked(directory, manifest_name(generation), f"the manifest of generation {generation}")
        for kind, companion in named.items():
            if isinstance(companions[kind], Companion):
                _check_carried(directory, kind, companion)
            else:
                _blocked(directory, companion.name, f"the {kind} companion")
        prior = previous_for_commit(directory, loaded)  # C10: read again, under the lock
        if seal is not None:
            check_extends(directory, prior, seal)
        checkpoint = None if seal is None or signer is None else sign_head(manifest.session_id, seal.head, signer)
        draft = replace(manifest, ledger_tree=None if seal is None else seal.head, checkpoint=checkpoint)
        attempt = _Attempt(directory)
        try:
            published, data, written = _publish(attempt, companions, named, draft, generation)
        except OSError as exc:
            attempt.undo()
            kept = f"generation {loaded} still loads" if loaded else "the directory is as it was"
            raise SessionError(
                f"cannot commit generation {generation} to {directory}: {attempt.doing} failed: {os_cause(exc)}; "
                f"nothing of it was kept, {kept}"
            ) from None
        except BaseException:
            attempt.discard_temps()
            raise
        _after_publication(attempt, published, data)
    if ledger is not None and seal is not None:
        keep(ledger, seal.frontier, seal.digest)  # the next commit appends to this one
    if prior is not None and prior.version < SESSION_VERSION:
        LOG.warning("session %s: %s", directory, MIGRATED)
    return published, written


def _publish(
    attempt: _Attempt,
    companions: Mapping[str, Payload],
    named: dict[str, Companion],
    manifest: Manifest,
    generation: int,
) -> tuple[Manifest, bytes, int]:
    """Place every new companion, then link the manifest under its generation's name: the commit point."""
    directory, written = attempt.directory, 0
    for kind, companion in named.items():
        data = companions[kind]
        if isinstance(data, Companion):
            continue  # carried: checked under the lock, its bytes already in place
        attempt.doing = f"writing {companion.name}"
        if _present(directory, companion.name, data):
            continue  # content-addressed: the same name holds the same bytes
        tmp = attempt.write_new(data)
        written += len(data)
        step(f"companion-written:{kind.split('[')[0]}")
        attempt.place(tmp, directory / companion.name)
        step(f"companion-renamed:{kind.split('[')[0]}")
    attempt.doing = f"syncing {directory}"
    _fsync_dir(directory)
    published = replace(
        manifest,
        generation=generation,
        graph=named["graph"],
        resolver=named["resolver"],
        execution=named.get("execution"),
        runledger=named.get("runledger"),
        telemetry=named["telemetry"],
        version=SESSION_VERSION,
        journal=tuple(companion for kind, companion in named.items() if kind.startswith("journal[")),
    )
    data = file_bytes(published.to_dict())
    name = manifest_name(generation)
    attempt.doing = f"writing {name}"
    tmp = attempt.write_new(data)
    written += len(data)
    step("manifest-written")
    target = directory / name
    if target.is_symlink():
        os.unlink(target)  # a planted link is removed, never followed (unlink does not follow)
    try:
        os.link(tmp, target)  # refuses to replace: the generation's name must not exist yet
    except FileExistsError:
        attempt.discard_temps()
        _blocked(directory, name, f"the manifest of generation {generation}")
        raise CommitConflictError(generation - 1, generation) from None
    return published, data, written


def _after_publication(attempt: _Attempt, published: Manifest, data: bytes) -> None:
    """The commit has landed; the rest tidies up, and a failure in it loses nothing."""
    directory = attempt.directory
    attempt.discard_temps()  # the manifest's temp name (its bytes now live under the generation's name)
    with contextlib.suppress(OSError):
        _fsync_dir(directory)
    step("manifest-published")
    try:
        # The pointer is a copy for people and tools, never read by a loader: it is not fsynced (two of
        # a commit's six fsyncs, most of an every-ask checkpoint's cost). After a power cut it may lag
        # the newest manifest, as it may after a crash between the link and this step (C8).
        pointer = attempt.write_new(data, sync=False)
        step("pointer-written")
        attempt.place(pointer, directory / POINTER_NAME)
        step("pointer-renamed")
    except OSError:
        attempt.discard_temps()  # session.json is a convenience copy, never trusted on load
    with contextlib.suppress(OSError):
        _sweep(directory, published)


def _sweep(directory: Path, current: Manifest) -> None:
    """Delete superseded manifests, companions the current manifest does not name, and abandoned temps."""
    keep = {c.name for c in current.companions().values()}
    step("sweep-started")
    names = sorted(os.listdir(directory))
    # The generation just superseded stays whole, so a reader that read its manifest a moment ago
    # can still open every companion it names. Read once, without blocking, bounded.
    try:
        previous = read_regular(directory, manifest_name(current.generation - 1), limit=MANIFEST_MAX_BYTES)
    except (OSError, SessionError):
        previous = b""
    swept = 0
    for name in names:
        match = MANIFEST.match(name)
        doomed = (
            (match is not None and int(match.group(1)) < current.generation - 1)
            or name.startswith(_TMP_PREFIX)
            or (COMPANION_NAME.match(name) is not None and name not in keep and name.encode() not in previous)
        )
        # Only our own regular files are swept: a directory or a link under a lookalike name stays.
        path = directory / name
        if doomed and path.is_file() and not path.is_symlink():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(directory / name)
            swept += 1
            if swept == 1:
                step("sweep-midway")
    step("sweep-finished")

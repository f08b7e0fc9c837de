"""A Session: one graph, its resolver, walker settings and (optionally) an execution plan, on disk.

Writers work by compare-and-swap: a session remembers the generation it loaded; ``commit`` writes
the next one only if the directory is still there, otherwise :class:`CommitConflictError`.
``apply`` wraps a *re-playable* mutation (a function of the session): it runs it, commits, and
on a conflict reloads the newer generation and runs it again, a bounded number of times.

Checkpoint policies for long-lived servers: ``every-ask`` (commit after each question: nothing a
client taught the graph is lost), ``on-exit`` (commit once on a clean close), ``never`` (serve a
directory you do not own). A conflict or lock contention counts as a skipped commit whose work
stays pending (the next commit of this process carries it); a commit that fails outright (a
``SessionError``: a read-only directory, a full disk, a blocked name) is counted and raised. The
reason of the last skip or failure is :attr:`Session.last_skip`, so a caller can say why.

The counters are this process's: a skipped commit cannot record itself in the directory (it did
not get to write), so across processes only what landed is on disk — the generation number.
:meth:`Session.describe` shows both.

``refresh`` lets a long-lived reader notice another writer's commit with one ``stat`` and reload.

``Session.open_readonly`` loads a directory with no ``TaskRegistry``: every cross-file check runs
but the registry's, a plan comes back with its keys kept as data (unresolved, so none of its tasks
can run), and every write — ``commit``, ``checkpoint``, ``apply``, ``create`` — is refused with a
:class:`SessionError` before anything is touched. It is how a reader that cannot resolve a plan's
keys shows, verifies, checks or exports a session.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from contextmesh.core.errors import SessionError
from contextmesh.core.graph import ContextGraph
from contextmesh.execution.plan import Plan
from contextmesh.execution.snapshot import dump_plan
from contextmesh.execution.task_registry import TaskRegistry
from contextmesh.formats.resolver_file import dump_resolver
from contextmesh.formats.run_ledger import RunLedger
from contextmesh.knowledge.embed import Embedder
from contextmesh.knowledge.flat_baseline import FlatBaseline
from contextmesh.knowledge.health import HealthReport, check
from contextmesh.knowledge.resolve import Resolver
from contextmesh.knowledge.traverse import Walk, Walker, WalkerSettings
from contextmesh.session.commit import CommitConflictError, latest_generation
from contextmesh.session.files import os_cause
from contextmesh.session.journal import JournalState, plan_commit, rebased
from contextmesh.session.layout import Companion
from contextmesh.session.load import Loaded, load_directory
from contextmesh.session.lock import SessionLockedError, create_lock_file
from contextmesh.session.staged import stage_commit
from contextmesh.session.telemetry import dump_structure, dump_telemetry

if TYPE_CHECKING:
    from contextmesh.formats.signed_note import NoteSigner, NoteVerifier
    from contextmesh.session.background import BackgroundCheckpoints

__all__ = ["POLICIES", "Session"]

POLICIES = ("every-ask", "on-exit", "never")
T = TypeVar("T")


def _new_session_id() -> str:
    return str(uuid.uuid4())


@dataclass(eq=False, repr=False)
class Session:
    """A graph that outlives the process (or, without a directory, one that does not).

    Its fields are declared once, here: the constructor, a load, a commit, a reload (``_adopt``)
    and a clone (``dataclasses.replace``) all follow this list. A field a manifest stores names its
    manifest key in its metadata (the format keeps ``rounds`` and ``walker``); the ones from
    ``walker`` on are this process's state, never passed in.
    """

    graph: ContextGraph
    resolver: Resolver
    _: KW_ONLY
    directory: Path | None = None
    session_id: str = field(default_factory=_new_session_id, metadata={"manifest": "session_id"})
    generation: int = field(default=0, metadata={"manifest": "generation"})
    walk_rounds: int = field(default=0, metadata={"manifest": "rounds"})
    settings: WalkerSettings = field(default_factory=WalkerSettings, metadata={"manifest": "walker"})
    corpus: str | None = field(default=None, metadata={"manifest": "corpus"})
    runner: Plan | None = None
    registry: TaskRegistry | None = None
    flat: FlatBaseline | None = None
    embedder: Embedder | None = None  # embeds questions and ingested text (None: hashed); a reload keeps it
    policy: str = "every-ask"
    read_only: bool = False
    trusted_keys: tuple[NoteVerifier, ...] = ()  # pinned at load; a reload pins them again
    walker: Walker = field(init=False)
    pending: int = field(default=0, init=False)
    commits: int = field(default=0, init=False)
    contended: int = field(default=0, init=False)
    conflicts: int = field(default=0, init=False)
    failed: int = field(default=0, init=False)
    last_skip: str | None = field(default=None, init=False)
    bytes_written: int = field(default=0, init=False)
    _stamp: tuple[int, int] | None = field(default=None, init=False)
    # The generation this writer holds as a snapshot and a journal (ADR 0020); None: the next
    # commit writes a snapshot.
    _journal: JournalState | None = field(default=None, init=False)
    # Under every-ask, commits after the reply (ADR 0028) when a server attached one; None: inline.
    background: BackgroundCheckpoints | None = field(default=None, init=False)
    # The generation that holds (or, committing in the background, will hold) the last ask's telemetry.
    lands_in: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise SessionError(f"checkpoint policy {self.policy!r} is not one of {list(POLICIES)}")
        self.walker = Walker(self.graph, self.resolver, embedder=self.embedder, settings=self.settings, flat=self.flat)

    # -- creating and loading -------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, session: Session) -> Session:
        """Write ``session`` as generation 1 of a new (empty or absent) directory.

        A save that fails leaves the target as it found it, so the same save can simply be run
        again: the commit takes back what it wrote, and this removes the lock file and every
        directory the save made.
        """
        session._refuse_write(f"cannot save it to {directory}")
        made = _make_directories(directory)
        not_empty = SessionError(f"{directory} is not empty; a new session needs an empty directory")
        try:
            if any(directory.iterdir()):
                raise not_empty
            lock = create_lock_file(directory)  # made first, so it is known to be this save's own
        except FileExistsError:
            raise not_empty from None
        except OSError as exc:
            _take_back(None, made)
            raise SessionError(f"cannot create a session in {directory}: {os_cause(exc)}") from None
        session.directory = directory
        session.generation = 0
        session._journal = None  # a new directory starts from a snapshot
        try:
            session.commit()
        except BaseException:
            _take_back(lock, made)  # nothing was published, and the commit took back its own files
            session.directory = None
            raise
        return session

    @classmethod
    def load(
        cls,
        directory: Path,
        *,
        registry: TaskRegistry | None = None,
        flat: FlatBaseline | None = None,
        policy: str = "every-ask",
        trusted_keys: Sequence[NoteVerifier] = (),
    ) -> Session:
        """Load the newest whole generation of ``directory`` (untrusted input, fully checked).

        ``trusted_keys`` pins the deployment's verifier keys: the generation must carry a checkpoint
        signed by one of them, and its ledger tree must extend the previous generation's — a history
        rewritten and re-signed with any other key is refused (``session-v4.md`` S48–S51).
        """
        pinned = tuple(trusted_keys)
        loaded = load_directory(directory, registry=registry, trusted_keys=pinned)
        return cls._from_loaded(
            directory, loaded, registry=registry, flat=flat, policy=policy, read_only=False, trusted_keys=pinned
        )

    @classmethod
    def open_readonly(
        cls, directory: Path, *, flat: FlatBaseline | None = None, trusted_keys: Sequence[NoteVerifier] = ()
    ) -> Session:
        """Load ``directory`` to read it, never to write it, with no registry.

        Every check of :meth:`load` runs except the lookup of the plan's keys in a registry: the
        plan keeps its keys as data, unresolved, so no task of it can run. Asking walks in memory
        only (the policy is ``never``); ``commit``, ``checkpoint`` and ``apply`` raise
        :class:`SessionError` and change no byte.
        """
        pinned = tuple(trusted_keys)
        loaded = load_directory(directory, read_only=True, trusted_keys=pinned)
        return cls._from_loaded(
            directory, loaded, registry=None, flat=flat, policy="never", read_only=True, trusted_keys=pinned
        )

    @classmethod
    def _from_loaded(
        cls,
        directory: Path,
        loaded: Loaded,
        *,
        registry: TaskRegistry | None,
        flat: FlatBaseline | None,
        policy: str,
        read_only: bool,
        trusted_keys: tuple[NoteVerifier, ...],
    ) -> Session:
        stored = {f.name: getattr(loaded.manifest, f.metadata["manifest"]) for f in _STORED_FIELDS}
        session = cls(
            loaded.graph,
            loaded.resolver,
            directory=directory,
            runner=loaded.runner,
            registry=registry,
            flat=flat,
            policy=policy,
            read_only=read_only,
            trusted_keys=trusted_keys,
            **stored,
        )
        # An upgraded graph's next commit writes a v3 snapshot, not a journal over the v2 one (ADR 0021).
        if not read_only and session.graph.upgraded_from is None:
            session._journal = JournalState.loaded(
                directory, loaded.manifest, session.graph, session.resolver, loaded.journal
            )
        return session

    def _reload(self, directory: Path) -> Session:
        if self.read_only:
            return Session.open_readonly(directory, flat=self.flat, trusted_keys=self.trusted_keys)
        return Session.load(
            directory, registry=self.registry, flat=self.flat, policy=self.policy, trusted_keys=self.trusted_keys
        )

    def _refuse_write(self, what: str) -> None:
        if self.read_only:
            which = "this session" if self.directory is None else f"the session of {self.directory}"
            raise SessionError(
                f"{what}: {which} was opened read-only (Session.open_readonly), which never writes; "
                "load it with Session.load(directory, registry=...) to change it"
            )

    # -- committing -------------------------------------------------------------------------

    @property
    def persistent(self) -> bool:
        """True when the session has a directory and a policy that writes to it."""
        return self.directory is not None and self.policy != "never"

    def companions(self) -> dict[str, bytes]:
        """The bytes of every companion of the current state.

        The graph companion carries every ``walks``/``traversals`` as 0 and the telemetry companion
        the real counters, so a commit that only changed telemetry leaves the graph file alone.
        """
        files = {
            "graph": dump_structure(self.graph),
            "telemetry": dump_telemetry(self.graph),
            "resolver": dump_resolver(self.resolver),
        }
        if self.runner is not None:
            files["execution"] = dump_plan(self.runner)
            files["runledger"] = self.runner.ledger.dump()
        return files

    def commit_payload(self) -> dict[str, bytes | Companion]:
        """What the next commit hands the writer: each companion's new bytes, or the companion it carries.

        The graph, telemetry and resolver are the snapshot's (carried) plus one new journal segment
        (``journal[i]``), or a new snapshot (ADR 0020); the plan and ledger are dumped whole.
        """
        assert self.directory is not None
        plan = plan_commit(self._journal, self.directory, self.graph, self.resolver)
        payload: dict[str, bytes | Companion] = dict(plan.payload)
        if self.runner is not None:
            payload["execution"] = dump_plan(self.runner)
            payload["runledger"] = self.runner.ledger.dump()
        return payload

    def commit(self, *, lock_wait: float = 2.0, signer: NoteSigner | None = None, snapshot: bool = False) -> int:
        """Publish the next generation if the directory is still at the one this session loaded.

        The generation journals what changed since the last one (ADR 0020); ``snapshot`` writes the
        graph, telemetry and resolver whole instead, with an empty journal (a compaction on demand).

        The ledger's tree head is recorded and, with the deployment's key — ``signer``, else
        ``$CONTEXTMESH_LEDGER_KEY``, else the file ``$CONTEXTMESH_LEDGER_KEY_FILE`` names — signed as the
        generation's checkpoint. The key is never written into the directory.
        """
        self._refuse_write("cannot commit")
        if self.directory is None:
            raise SessionError("this session has no directory (an ephemeral demo); save it with --save DIR first")
        if self.background is not None:
            self.background.drain()  # a commit in flight lands first: this one follows it
        staged = stage_commit(self, lock_wait=lock_wait, signer=signer, snapshot=snapshot)
        try:
            staged.write()
        except BaseException:
            staged.give_back()
            raise
        return staged.land()

    def carry_journal(self, copy: Session) -> None:
        """Give ``copy``, a lossless copy of this session, its journal: the copy's commit journals too."""
        state = self._journal
        if state is not None and state.graph is self.graph and state.resolver is self.resolver:
            copy._journal = rebased(state, copy.graph, copy.resolver)

    def apply(self, mutate: Callable[[Session], T], *, retries: int = 3) -> T:
        """Run a re-playable mutation and commit it; on a conflict reload and run it again."""
        self._refuse_write("cannot apply a change")  # before the mutation runs: it changes nothing
        result = mutate(self)
        for attempt in range(retries + 1):
            try:
                self.commit()
                return result
            except CommitConflictError:
                self.conflicts += 1
                if attempt == retries:
                    raise
                self._adopt(self._reload(self._dir()))
                result = mutate(self)
        raise AssertionError("unreachable")  # pragma: no cover

    def _dir(self) -> Path:
        if self.directory is None:
            raise SessionError("this session has no directory")
        return self.directory

    def _adopt(self, other: Session) -> None:
        """Take a reload's state (every field passed in but the embedder); keep this process's counters."""
        for name in (*_INIT_FIELDS, "_journal"):
            setattr(self, name, getattr(other, name))
        self.__post_init__()  # the walker, on the reloaded graph, with this session's embedder

    def refresh(self) -> bool:
        """Reload when another writer committed a newer generation (one ``stat``); True if it did."""
        if self.directory is None:
            return False
        if self.background is not None:
            self.background.settle()
            if self.background.busy:
                return False  # the newest manifest may be this session's own, not landed yet (ADR 0028)
        # One stat of the directory: its change time moves whenever a manifest is published.
        seen = self.directory.stat()
        stamp = (seen.st_ino, seen.st_mtime_ns)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        if latest_generation(self.directory) <= self.generation:
            return False
        self._adopt(self._reload(self.directory))
        return True

    # -- asking, with the checkpoint policy --------------------------------------------------

    def ask(self, question: str, **options: Any) -> Walk:
        """Walk a question; under ``every-ask`` commit what it taught (telemetry, learned aliases)."""
        walk = self.walker.ask(question, **options)
        self.pending += 1
        self.lands_in = None
        if self.policy == "every-ask" and self.directory is not None:
            if self.background is not None:
                self.lands_in = self.background.after_ask(self)
            elif self.checkpoint():
                self.lands_in = self.generation
        return walk

    def checkpoint(self) -> bool:
        """Commit pending work; True when it landed.

        A conflict or a held lock is a skipped commit (False; the work stays pending, the reason is
        :attr:`last_skip`). Any other failure to commit is counted, recorded and raised as a
        :class:`SessionError` naming the directory. A read-only session refuses, pending work or not.
        """
        self._refuse_write("cannot checkpoint")
        if not self.persistent or not self.pending:
            return False
        try:
            self.commit(lock_wait=0.5)
        except SessionLockedError as exc:
            self.contended += 1
            self.last_skip = f"another writer held the lock: {exc}"
            return False
        except CommitConflictError as exc:
            self.conflicts += 1
            self.last_skip = str(exc)
            return False
        except SessionError as exc:
            self.failed += 1
            self.last_skip = str(exc)
            raise
        except OSError as exc:
            # The commit layer names the file and cause itself; this keeps an unexpected OS error one too.
            self.failed += 1
            self.last_skip = f"committing to {self.directory} failed: {exc.filename or 'a file'}: {exc.strerror or exc}"
            raise SessionError(self.last_skip) from None
        self.last_skip = None
        return True

    def close(self) -> None:
        """Commit pending work unless the policy is ``never``."""
        if self.policy != "never":
            self.checkpoint()

    def describe(self) -> dict[str, Any]:
        """What is served, whether it persists, and the commit counters."""
        live = self.graph.type_counts()
        total = self.graph.type_counts(live_only=False)
        return {
            "directory": None if self.directory is None else str(self.directory),
            "persistent": self.persistent,
            "session_id": self.session_id,
            "generation": self.generation,
            "latest_on_disk": None if self.directory is None else latest_generation(self.directory),
            "rounds": self.walk_rounds,
            "policy": self.policy,
            "walker": self.settings.to_dict(),
            "nodes_live": sum(live.values()),
            "nodes_total": sum(total.values()),
            "node_types_live": live,
            "edges_live": sum(self.graph.edge_counts().values()),
            "edges_total": len(self.graph.edges),
            "assumptions": len(self.graph.assumptions),
            "plan": None
            if self.runner is None
            else {"name": self.runner.name, "round": self.runner.round, "states": self.runner.states()},
            "ledger": None
            if self.runner is None
            else {
                "entries": len(self.runner.ledger),
                "head": self.runner.ledger.head,
                "verified": self.runner.ledger.verify(),
            },
            "checkpoints": {
                "scope": "this process",
                "pending": self.pending,
                "commits": self.commits,
                "skipped": self.contended + self.conflicts,
                "contended": self.contended,
                "conflicts": self.conflicts,
                "failed": self.failed,
                "last_skip": self.last_skip,
            },
        }

    def health(self, *, stale_after_rounds: int = 25) -> HealthReport:
        """The graph's health; a ground's staleness is counted on the plan's clock (rounds of the plan
        this session holds, none without one), never in walk rounds."""
        plan_round = 0 if self.runner is None else self.runner.round
        return check(
            self.graph, self.resolver, self.walker, plan_round=plan_round, stale_after_rounds=stale_after_rounds
        )

    @property
    def ledger(self) -> RunLedger | None:
        """The run ledger, when the session holds a plan."""
        return None if self.runner is None else self.runner.ledger


_INIT_FIELDS = tuple(f.name for f in fields(Session) if f.init and f.name != "embedder")
_STORED_FIELDS = tuple(f for f in fields(Session) if "manifest" in f.metadata)


def _make_directories(directory: Path) -> list[Path]:
    """Create ``directory`` and any missing parents; return those this call made, outermost first."""
    missing: list[Path] = []
    probe = directory
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    made: list[Path] = []
    try:
        for path in reversed(missing):
            path.mkdir()
            made.append(path)
        if not directory.is_dir():
            raise SessionError(f"{directory} is not a directory; a new session needs an empty directory")
    except OSError as exc:
        _take_back(None, made)
        raise SessionError(f"cannot create the session directory {directory}: {os_cause(exc)}") from None
    except SessionError:
        _take_back(None, made)
        raise
    return made


def _take_back(lock: Path | None, made: list[Path]) -> None:
    if lock is not None:
        with contextlib.suppress(OSError):
            lock.unlink()
    for path in reversed(made):
        with contextlib.suppress(OSError):
            path.rmdir()  # only ever an empty directory

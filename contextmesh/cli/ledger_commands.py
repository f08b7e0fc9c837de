"""The ``ledger`` and ``lineage`` commands: proofs about a session's run ledger, its keys, its lineage out.

* ``ledger prove ENTRY --session DIR`` — the inclusion bundle (``docs/formats/proofs-v1.md``) of one
  entry, named by its sequence number, its digest or ``receipt:K`` (the K-th disproof receipt),
  against the newest generation's checkpoint;
  ``--json`` prints the bundle itself, the file ``tools/verify_ledger_proofs.py`` checks.
* ``ledger consistency OLD NEW --session DIR`` — the consistency bundle between the checkpoints of two
  generations the directory still holds (it keeps its newest two); ``ledger consistency --since FILE
  --session DIR`` — from a checkpoint the caller kept (a bundle it was given, or a note) to the newest
  generation's, refused when the ledger does not extend it (rewritten or rolled back since).
* ``ledger verify --session DIR [--trusted-key FILE]…`` — the session loads whole as a reader that pins
  those keys (``session-v4.md`` S41–S51); ``ledger verify --bundle FILE --trusted-key FILE…`` — a
  bundle verifies against a pinned key (the reference reader, ``verify_bundle``).
* ``ledger key generate --out FILE [--name NAME]`` — a new Ed25519 signer key written to a new file of
  mode 0600, and its verifier key printed: the text a reader pins.
* ``lineage export --format openlineage|prov --session DIR [--out FILE]`` — one OpenLineage RunEvent
  per line, or the PROV-O JSON-LD document (``docs/lineage.md``).

Each handler returns ``(data for --json, text)`` as the other commands do; refusals are one line.
Nothing here writes to a session directory: every command opens it read-only.
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextmesh.cli.failure import UsageError, writing
from contextmesh.cli.ledger_options import (
    EntryRef,
    ExistingFile,
    KeyName,
    LedgerEntry,
    NewFile,
    OutFile,
    Timestamp,
    VerifierKeyFile,
)
from contextmesh.cli.options import Count, PathOption
from contextmesh.core.canonical import file_bytes
from contextmesh.core.errors import SessionError

if TYPE_CHECKING:
    from contextmesh.formats.checkpoint import Checkpoint
    from contextmesh.formats.run_ledger import RunLedger
    from contextmesh.session.load import Loaded

__all__ = ["consistency", "export_lineage", "key_generate", "prove", "register", "verify"]

SESSION_DIR = PathOption("an existing session directory", "existing-dir")
GENERATION = Count("a generation", 1, 999_999)
KEY_MODE = 0o600


def register(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``ledger`` and ``lineage`` to the command line (``commands``: the top-level sub-parsers)."""
    ledger = commands.add_parser("ledger", help="prove, verify and sign what a session's run ledger holds")
    parser_class = type(ledger)  # the command line's own parser class, without importing parser.py (which imports this)
    actions = ledger.add_subparsers(dest="ledger_command", required=True, metavar="ACTION", parser_class=parser_class)
    prove_parser = actions.add_parser("prove", help="the inclusion proof bundle of one ledger entry")
    prove_parser.add_argument(
        "entry", type=LedgerEntry(), metavar="ENTRY", help="an entry's seq (1, 2, …), its digest, or receipt:K"
    )
    consistency_parser = actions.add_parser("consistency", help="the consistency proof bundle of two generations")
    consistency_parser.add_argument("old", type=GENERATION, nargs="?", metavar="OLD", help="the older generation")
    consistency_parser.add_argument("new", type=GENERATION, nargs="?", metavar="NEW", help="the newer generation")
    consistency_parser.add_argument(
        "--since",
        type=ExistingFile("a saved checkpoint or proof bundle file"),
        metavar="FILE",
        help="instead of OLD NEW: from the checkpoint kept in FILE (a note, or a bundle) to the newest generation",
    )
    for sub, handler in ((prove_parser, prove), (consistency_parser, consistency)):
        sub.add_argument("--session", type=SESSION_DIR, required=True, metavar="DIR", help="the session directory")
        sub.set_defaults(handler=handler)
    verify_parser = actions.add_parser("verify", help="check a session (or a bundle) against pinned verifier keys")
    source = verify_parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--session", type=SESSION_DIR, metavar="DIR", help="the session directory")
    source.add_argument("--bundle", type=ExistingFile("a proof bundle file"), metavar="FILE", help="a proof bundle")
    verify_parser.add_argument(
        "--trusted-key", type=VerifierKeyFile(), action="append", metavar="FILE", help="a verifier key to pin (repeat)"
    )
    verify_parser.set_defaults(handler=verify)
    key = actions.add_parser("key", help="the deployment's signing key")
    key_actions = key.add_subparsers(dest="key_command", required=True, metavar="ACTION", parser_class=parser_class)
    generate = key_actions.add_parser("generate", help="write a new signer key (mode 0600); print its verifier key")
    generate.add_argument("--out", type=NewFile("the new key file"), required=True, metavar="FILE")
    generate.add_argument("--name", type=KeyName(), metavar="NAME", help="the key's name (default <host>/contextmesh)")
    generate.set_defaults(handler=key_generate)
    lineage = commands.add_parser("lineage", help="the run ledger as lineage other tools read")
    lineage_actions = lineage.add_subparsers(
        dest="lineage_command", required=True, metavar="ACTION", parser_class=parser_class
    )
    export = lineage_actions.add_parser("export", help="OpenLineage events (one per line) or a PROV-O document")
    export.add_argument("--format", choices=("openlineage", "prov"), required=True, help="the lineage format")
    export.add_argument("--session", type=SESSION_DIR, required=True, metavar="DIR", help="the session directory")
    export.add_argument("--out", type=OutFile("the export file"), metavar="FILE", help="write here, not to stdout")
    export.add_argument(
        "--started-at", type=Timestamp(), metavar="TIME", help="OpenLineage: the first event's time (default now)"
    )
    export.set_defaults(handler=export_lineage)


# -- reading a session ------------------------------------------------------------------------------


def _open(directory: Path, **options: Any) -> Loaded:
    from contextmesh.session.load import load_directory  # noqa: PLC0415

    return load_directory(directory, read_only=True, **options)


def _ledger_of(loaded: Loaded, directory: Path) -> RunLedger:
    if loaded.ledger is None or loaded.runner is None:
        raise SessionError(f"{directory} holds no execution plan, so no run ledger")
    return loaded.ledger


def _signed(checkpoint: str | None, generation: int, directory: Path) -> str:
    if checkpoint is None:
        raise SessionError(
            f"generation {generation} of {directory} is not signed (its checkpoint is null): a proof is made against "
            "a signed checkpoint; commit with the deployment's key ($CONTEXTMESH_LEDGER_KEY) to sign the next one"
        )
    return checkpoint


def _read(checkpoint: str) -> Checkpoint:
    from contextmesh.formats.checkpoint import read_checkpoint  # noqa: PLC0415 - loads cryptography

    return read_checkpoint(checkpoint)


def _signers(checkpoint: str) -> list[str]:
    from contextmesh.formats.signed_note import parse_note  # noqa: PLC0415

    return [f"{s.name} ({s.key_id:08x})" for s in parse_note(checkpoint, "checkpoint").signatures]


def _index(ledger: RunLedger, entry: EntryRef, directory: Path) -> int:
    count = len(ledger)
    if entry.receipt is not None:
        receipts = [i for i, e in enumerate(ledger.entries) if e.event == "disproved" and e.receipt is not None]
        if entry.receipt > len(receipts):
            raise SessionError(
                f"receipt:{entry.receipt}: the ledger of {directory} holds {len(receipts)} disproof receipts"
                + (f" (receipt:1 to receipt:{len(receipts)})" if receipts else "")
            )
        return receipts[entry.receipt - 1]
    if entry.seq is not None:
        if entry.seq > count:
            raise SessionError(
                f"entry seq {entry.seq}: the ledger of {directory} holds {count} entries (seq 1 to {count})"
            )
        return entry.seq - 1
    found = next((i for i, e in enumerate(ledger.entries) if e.digest == entry.digest), None)
    if found is None:
        raise SessionError(f"no entry of the ledger of {directory} has the digest {entry.digest}")
    return found


# -- the commands -----------------------------------------------------------------------------------


def prove(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh ledger prove ENTRY --session DIR``: one entry's inclusion bundle."""
    from contextmesh.formats.proofs import inclusion_bundle  # noqa: PLC0415

    loaded = _open(args.session, full_tree=True)  # the tree from the load's one pass over the entries
    ledger, generation = _ledger_of(loaded, args.session), loaded.manifest.generation
    checkpoint = _signed(loaded.manifest.checkpoint, generation, args.session)
    index = _index(ledger, args.entry, args.session)
    bundle = inclusion_bundle(ledger, index, checkpoint, tree=loaded.tree)
    entry = ledger.entries[index]
    head = _read(checkpoint).head
    text = "\n".join(
        [
            f"INCLUSION of entries[{index}] (seq {entry.seq}, {entry.event}) in generation {generation} "
            f"of {args.session}",
            f"  checkpoint: {head.size} entries, root {head.root_hex}, signed by {', '.join(_signers(checkpoint))}",
            f"  audit path: {len(bundle['audit_path'])} hashes; entry digest {entry.digest}",
            "  --json prints the bundle; check it with `contextmesh ledger verify --bundle FILE --trusted-key KEY`",
            "  or tools/verify_ledger_proofs.py, which need nothing but the bundle and the verifier key",
        ]
    )
    return bundle, text


def consistency(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh ledger consistency OLD NEW --session DIR``: two generations' consistency bundle."""
    from contextmesh.formats.proofs import consistency_bundle  # noqa: PLC0415
    from contextmesh.session.load import read_manifest  # noqa: PLC0415

    if args.since is not None or args.old is None or args.new is None:
        if args.since is None or args.old is not None:
            raise UsageError(
                "give OLD and NEW (two generations the directory holds), or --since FILE alone",
                prog="contextmesh ledger consistency",
                path="--since" if args.since is not None else "old",
            )
        return _consistency_since(args)
    if args.old >= args.new:
        raise UsageError(
            f"OLD {args.old} must be an older generation than NEW {args.new}",
            prog="contextmesh ledger consistency",
            path="old",
        )
    old_manifest = read_manifest(args.session, args.old)
    read_manifest(args.session, args.new)  # a clear refusal when the sweep took it
    loaded = _open(args.session, generation=args.new, full_tree=True)
    ledger = _ledger_of(loaded, args.session)
    old = _signed(old_manifest.checkpoint, args.old, args.session)
    new = _signed(loaded.manifest.checkpoint, args.new, args.session)
    if _read(old).head.size == 0:
        raise SessionError(f"generation {args.old} of {args.session} has an empty ledger: every tree extends it")
    bundle = consistency_bundle(ledger, old, new, tree=loaded.tree)
    old_head, new_head = _read(old).head, _read(new).head
    text = (
        f"CONSISTENCY generation {args.old} ({old_head.size} entries, root {old_head.root_hex}) → generation "
        f"{args.new} ({new_head.size} entries, root {new_head.root_hex}): {len(bundle['consistency_path'])} hashes; "
        "--json prints the bundle"
    )
    return bundle, text


def _read_saved(path: Path) -> str:
    """The checkpoint note kept in ``path`` (a note or a bundle), its refusals' paths prefixed with the file."""
    from contextmesh.core.errors import ProofError  # noqa: PLC0415
    from contextmesh.formats.proofs import MAX_BUNDLE_BYTES, saved_checkpoint  # noqa: PLC0415
    from contextmesh.session.files import read_regular  # noqa: PLC0415

    data = read_regular(path.absolute().parent, path.name, limit=MAX_BUNDLE_BYTES)
    try:
        return saved_checkpoint(data)
    except ProofError as exc:
        raise ProofError(f"{path}:{exc.path}", exc.found, exc.rule) from None


def _consistency_since(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh ledger consistency --since FILE --session DIR``: from a kept checkpoint to the newest."""
    from contextmesh.core.errors import ProofError  # noqa: PLC0415
    from contextmesh.formats.checkpoint import session_origin  # noqa: PLC0415
    from contextmesh.formats.proofs import consistency_bundle  # noqa: PLC0415

    old_note = _read_saved(args.since)
    old = _read(old_note)
    loaded = _open(args.session, full_tree=True)
    ledger, generation = _ledger_of(loaded, args.session), loaded.manifest.generation
    new = _signed(loaded.manifest.checkpoint, generation, args.session)
    origin = session_origin(loaded.manifest.session_id)
    if old.origin != origin:
        raise ProofError(f"{args.since}:checkpoint.line[0]", repr(old.origin)[:80], f"a checkpoint of {origin}")
    size, tree = old.head.size, loaded.tree
    assert tree is not None  # full_tree=True, and the session has a ledger
    if size == 0:
        raise ProofError(f"{args.since}:checkpoint.line[1]", "0", "every tree extends the empty one")
    if size > len(tree) or tree.root(size) != old.head.root:
        # The newest generation is signed, so this head was signed too: two signed heads that disagree.
        happened = "rolled back" if size > len(tree) else "rewritten"
        raise ProofError(
            str(args.since),
            f"a head of {size} entries, root {old.head.root_hex}",
            f"generation {generation} of {args.session} ({len(tree)} entries) must extend every checkpoint the "
            f"session signed, and it does not extend this one: its history was {happened} since, or the "
            "checkpoint was altered",
        )
    bundle = consistency_bundle(ledger, old_note, new, tree=tree)
    new_size = len(tree)
    text = (
        f"CONSISTENCY the checkpoint in {args.since} ({size} entries, root {old.head.root_hex}) → generation "
        f"{generation} ({new_size} entries): {len(bundle['consistency_path'])} hashes; --json prints the bundle; "
        "`contextmesh ledger verify --bundle FILE --trusted-key KEY` checks both signatures"
    )
    return bundle, text


def _verify_bundle(args: argparse.Namespace) -> tuple[Any, str]:
    from contextmesh.formats.proofs import ProvenInclusion, verify_bundle  # noqa: PLC0415
    from contextmesh.session.files import read_regular  # noqa: PLC0415

    if not args.trusted_key:
        raise UsageError(
            "--bundle needs at least one --trusted-key FILE: a bundle is verified against a pinned key",
            prog="contextmesh ledger verify",
            path="--trusted-key",
        )
    limit = 64 * 1024 * 1024
    data = read_regular(args.bundle.absolute().parent, args.bundle.name, limit=limit)
    proven = verify_bundle(data, args.trusted_key)
    if isinstance(proven, ProvenInclusion):
        head = proven.checkpoint.head
        what = f"inclusion of entries[{proven.index}] ({proven.entry.event}) in a tree of {head.size} entries"
        data_out = {
            "kind": "inclusion",
            "leaf_index": proven.index,
            "tree_size": head.size,
            "origin": proven.checkpoint.origin,
        }
    else:
        what = f"consistency of a tree of {proven.old.head.size} entries with one of {proven.new.head.size}"
        data_out = {
            "kind": "consistency",
            "old_size": proven.old.head.size,
            "new_size": proven.new.head.size,
            "origin": proven.new.origin,
        }
    origin = data_out["origin"]
    return {"bundle": str(args.bundle), "verified": True, **data_out}, f"ok {what}, signed for {origin} by a pinned key"


def verify(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh ledger verify``: a session as a pinning reader loads it, or a bundle against pinned keys."""
    if args.bundle is not None:
        return _verify_bundle(args)
    keys = tuple(args.trusted_key or ())
    loaded = _open(args.session, trusted_keys=keys)
    manifest = loaded.manifest
    tree = manifest.ledger_tree
    signers = [] if manifest.checkpoint is None else _signers(manifest.checkpoint)
    data = {
        "directory": str(args.session),
        "generation": manifest.generation,
        "version": manifest.version,
        "entries": None if loaded.ledger is None else len(loaded.ledger),
        "ledger_tree": None if tree is None else {"size": tree.size, "root": tree.root_hex},
        "signed_by": signers,
        "checkpoint": manifest.checkpoint,  # the note to keep: `ledger consistency --since` starts from it later
        "pinned": [f"{key.name} ({key.key_id:08x})" for key in keys],
        "verified": True,
    }
    lines = [
        f"ok: generation {manifest.generation} of {args.session} loads whole (contextmesh.session v{manifest.version})"
    ]
    if tree is not None:
        lines.append(f"  ledger tree: {tree.size} entries, root {tree.root_hex} — the tree of its entries")
    if keys:
        lines.append(f"  signed by a pinned key ({', '.join(signers)}); its tree extends the previous generation's")
        lines.append(
            "  keep its checkpoint (--json prints it) to check a later ledger with `ledger consistency --since`"
        )
    else:
        lines.append(
            f"  {'signed by ' + ', '.join(signers) if signers else 'unsigned'}; no key pinned, so no signature was "
            "checked (pass --trusted-key FILE)"
        )
    return data, "\n".join(lines)


def _default_key_name() -> str:
    from contextmesh.formats.signed_note import valid_key_name  # noqa: PLC0415

    name = f"{socket.gethostname()}/contextmesh"
    return name if valid_key_name(name) and len(name) <= 200 else "contextmesh.local/deploy"


def key_generate(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh ledger key generate --out FILE``: a signer key in a new 0600 file, its verifier key printed."""
    from contextmesh.formats.signed_note import NoteSigner  # noqa: PLC0415

    signer = NoteSigner.generate(args.name or _default_key_name())
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    with writing(f"the key file {args.out}"):
        fd = os.open(args.out, flags, KEY_MODE)  # O_EXCL: never over an existing file, nor through a link
        try:
            os.fchmod(fd, KEY_MODE)  # whatever the umask
            os.write(fd, (signer.skey() + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
    vkey, shell_path = signer.verifier().vkey(), shlex.quote(str(args.out.absolute()))
    data = {"key_file": str(args.out), "name": signer.name, "key_id": f"{signer.key_id:08x}", "verifier_key": vkey}
    text = "\n".join(
        [
            f"wrote a new signer key to {args.out} (mode 0600; keep it secret, never in a session directory)",
            f"verifier key, for readers to pin: {vkey}",
            f"sign a deployment's commits with: export CONTEXTMESH_LEDGER_KEY_FILE={shell_path}",
        ]
    )
    return data, text


def export_lineage(args: argparse.Namespace) -> tuple[Any, str]:
    """``contextmesh lineage export``: OpenLineage events, one per line, or the PROV-O document."""
    from contextmesh.formats.checkpoint import session_origin  # noqa: PLC0415
    from contextmesh.formats.openlineage import openlineage_events  # noqa: PLC0415
    from contextmesh.formats.prov import prov_document  # noqa: PLC0415

    if args.format == "prov" and args.started_at is not None:
        raise UsageError(
            "--started-at sets OpenLineage event times; a PROV-O document carries none",
            prog="contextmesh lineage export",
            path="--started-at",
        )
    loaded = _open(args.session)
    ledger = _ledger_of(loaded, args.session)
    assert loaded.runner is not None
    plan, generation = loaded.runner.name, loaded.manifest.generation
    if args.format == "openlineage":
        started = args.started_at or datetime.now(UTC)
        namespace = session_origin(loaded.manifest.session_id)
        events = openlineage_events(ledger, loaded.graph, plan=plan, namespace=namespace, started_at=started)
        body = b"".join(file_bytes(event) for event in events)
        document: Any = {"format": "openlineage", "generation": generation, "events": events}
        what = f"{len(events)} OpenLineage events"
    else:
        prov = prov_document(ledger, loaded.graph, plan=plan)
        body = file_bytes(prov)
        document = {"format": "prov", "generation": generation, "document": prov}
        what = f"the PROV-O document ({len(prov['@graph'])} nodes)"
    if args.out is None:
        return document, body.decode("utf-8").rstrip("\n")
    with writing(f"the export {args.out}"):
        args.out.write_bytes(body)
    summary = {"format": args.format, "generation": generation, "out": str(args.out), "bytes": len(body)}
    return summary, f"wrote {what} of generation {generation} of {args.session} to {args.out}"

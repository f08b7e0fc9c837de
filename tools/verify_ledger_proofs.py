"""Verify a ``contextmesh.proof`` v1 bundle without ContextMesh.

    python tools/verify_ledger_proofs.py BUNDLE (--key VKEY | --key-file FILE)... [--origin ORIGIN]

Written from ``docs/formats/proofs-v1.md`` alone. It imports nothing from ``contextmesh``: the
Python standard library, the ``cryptography`` package for Ed25519 signatures only, and its sibling
``verify_runledger.py`` (the stand-alone ledger verifier) for the bytes rules and the entry rules
the page borrows from ``runledger-v2.md`` (an AST test checks this). It applies the page's rules in
the page's order and names the first one broken; the comments cite them (``P1`` … ``P22``).

Exit status: 0 and one ``ok …`` line on stdout when the bundle verifies against a pinned key; 1 and
``<file>: refused at <path>: <found>; <rule>`` on stderr otherwise; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import verify_runledger as ledger  # the sibling verifier, found beside this file
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

Refused = ledger.InvalidLedgerError
SCHEMA, VERSION = "contextmesh.proof", 1
MAX_BYTES = 67_108_864
MAX_NOTE_BYTES = 1_048_576
MAX_SIGNATURES = 100
MAX_HASHES = 64
MAX_SIZE = 2**64 - 1
FIELDS = {
    "inclusion": ("schema", "version", "kind", "checkpoint", "leaf_index", "entry", "audit_path"),
    "consistency": ("schema", "version", "kind", "old_checkpoint", "new_checkpoint", "consistency_path"),
}
_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_HEX8 = re.compile(r"[0-9a-f]{8}")
_SIZE = re.compile(r"0|[1-9][0-9]*")


# -- hashing (section 2) ------------------------------------------------------------------------


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def node(left: bytes, right: bytes) -> bytes:
    return sha256(b"\x01" + left + right)


def leaf_hash(entry: dict[str, Any]) -> bytes:
    return sha256(b"\x00" + ledger.canonical_bytes(entry))


def b64(text: Any) -> bytes | None:
    """Canonical padded standard base64, or None."""
    if type(text) is not str or not _B64.fullmatch(text) or len(text) % 4:
        return None
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if base64.b64encode(data).decode() == text else None


# -- Merkle proofs (section 2: RFC 9162 §2.1.3.2 and §2.1.4.2) ------------------------------------


def verify_inclusion(index: int, size: int, leaf: bytes, proof: list[bytes], root: bytes, path: str) -> None:
    """Inclusion, by the page's decomposition: ``inner`` hashes beside the path, then ``border`` left ones."""
    if not 0 <= index < size:
        raise Refused(path, f"leaf index {index} in a tree of size {size}", "the leaf index lies below the size")
    if len(leaf) != 32 or any(len(item) != 32 for item in proof):
        raise Refused(path, "a hash that is not 32 bytes", "every hash is 32 bytes")
    inner = (index ^ (size - 1)).bit_length()
    border = bin(index >> inner).count("1")
    if len(proof) != inner + border:
        raise Refused(path, f"{len(proof)} hashes", f"the audit path of leaf {index} of {size} has {inner + border}")
    value = leaf
    for level, sibling in enumerate(proof[:inner]):
        value = node(value, sibling) if (index >> level) & 1 == 0 else node(sibling, value)
    for sibling in proof[inner:]:
        value = node(sibling, value)
    if value != root:
        raise Refused(path, f"a path to the root {value.hex()}", f"the path must lead to the root {root.hex()}")


def verify_consistency(m: int, n: int, proof: list[bytes], old: bytes, new: bytes, path: str) -> None:
    """RFC 9162 §2.1.4.2, with the page's edge cases."""
    if any(len(item) != 32 for item in proof):
        raise Refused(path, "a hash that is not 32 bytes", "every hash is 32 bytes")
    if not 0 <= m <= n:
        raise Refused(path, f"sizes {m} and {n}", "a consistency proof runs from a smaller tree to a larger one")
    if m == 0:
        raise Refused(path, "a proof from size 0", "every tree extends the empty one: it proves nothing")
    if m == n:
        if proof or old != new:
            raise Refused(path, f"{len(proof)} hashes", "between equal sizes the proof is empty and the roots equal")
        return
    shift = (m & -m).bit_length() - 1
    inner = ((m - 1) ^ (n - 1)).bit_length() - shift
    expected = (0 if m == 1 << shift else 1) + inner + bin((m - 1) >> (inner + shift)).count("1")
    if len(proof) != expected:
        raise Refused(path, f"{len(proof)} hashes", f"a consistency proof from {m} to {n} has {expected}")
    nodes = [old, *proof] if m & (m - 1) == 0 else list(proof)
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = nodes[0]
    for c in nodes[1:]:
        if sn == 0:
            raise Refused(path, "a hash past the root", "the proof ends at the root")
        if fn & 1 or fn == sn:
            fr, sr = node(c, fr), node(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0 or fr != old or sr != new:
        raise Refused(path, "a proof that does not join the two roots", "the proof rebuilds the old root and the new")


# -- signed notes and checkpoints (section 3) ---------------------------------------------------


def valid_name(name: str) -> bool:
    return bool(name) and "+" not in name and not any(char.isspace() for char in name)


def parse_vkey(text: str) -> tuple[str, int, bytes]:
    """A verifier key: (name, key id, 32-byte Ed25519 public key)."""
    parts = text.strip().split("+", 2)
    material = b64(parts[2]) if len(parts) == 3 else None
    if material is None or not valid_name(parts[0]) or not _HEX8.fullmatch(parts[1]):
        raise ValueError("a verifier key is <name>+<8 hex digits>+<base64 of 0x01 and a 32-byte key>")
    if len(material) != 33 or material[0] != 1:
        raise ValueError("this verifier knows Ed25519 keys only (type 0x01, 32 bytes)")
    if sha256(parts[0].encode() + b"\n\x01" + material[1:])[:4] != bytes.fromhex(parts[1]):
        raise ValueError("the key id does not match the key's name and public key")
    return parts[0], int(parts[1], 16), material[1:]


def parse_note(note: str, path: str) -> tuple[str, list[tuple[str, int, bytes, int]]]:
    """Rule P9's note part: the text and the (name, key id, signature, line) of every signature line."""
    raw = note.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_NOTE_BYTES:
        raise Refused(path, f"{len(raw)} bytes", f"a signed note is at most {MAX_NOTE_BYTES} bytes")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(path, "text that is not UTF-8", "a signed note is UTF-8") from None
    for number, line in enumerate(note.split("\n")):
        if any(ord(char) < 0x20 for char in line):
            raise Refused(f"{path}.line[{number}]", "a control character", "no control character but the newline")
    split = note.rfind("\n\n")
    if split < 0:
        raise Refused(path, "no blank line", "a text, a blank line, then signature lines")
    text, block = note[: split + 1], note[split + 2 :]
    first = text.count("\n") + 1
    if not block.endswith("\n"):
        last = first + block.count("\n")
        raise Refused(f"{path}.line[{last}]", "no final newline", "a signature line ends in one")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise Refused(path, f"{len(lines)} signature lines", f"at most {MAX_SIGNATURES}")
    signatures = []
    for number, line in enumerate(lines, start=first):
        name, _, encoded = line[2:].partition(" ") if line.startswith("— ") else ("", "", "")
        data = b64(encoded)
        if not valid_name(name) or data is None or len(data) < 5:
            raise Refused(f"{path}.line[{number}]", repr(line[:60]), "'— <key name> <base64 key id and signature>'")
        signatures.append((name, int.from_bytes(data[:4], "big"), data[4:], number))
    return text, signatures


def parse_checkpoint(text: str, path: str) -> tuple[str, int, bytes]:
    """Rule P9's checkpoint part: (origin, size, root)."""
    lines = text.split("\n")[:-1]
    if len(lines) < 3:
        raise Refused(f"{path}.line[{len(lines)}]", "the end of the text", "an origin, a size and a root hash")
    if not lines[0]:
        raise Refused(f"{path}.line[0]", "an empty origin", "the origin is not empty")
    if not _SIZE.fullmatch(lines[1]) or int(lines[1]) > MAX_SIZE:
        raise Refused(f"{path}.line[1]", repr(lines[1][:40]), "a decimal size without leading zeros, below 2**64")
    root = b64(lines[2])
    if root is None or len(root) != 32:
        raise Refused(f"{path}.line[2]", repr(lines[2][:60]), "the root hash is 32 bytes in base64")
    for number, extension in enumerate(lines[3:], start=3):
        if not extension:
            raise Refused(f"{path}.line[{number}]", "an empty line", "extension lines are not empty")
    return lines[0], int(lines[1]), root


def check_signatures(text: str, signatures: list[Any], keys: list[tuple[str, int, bytes]], path: str) -> None:
    """Rule P14: a pinned key's signature must verify; at least one must be there."""
    pending = {(name, key_id): public for name, key_id, public in keys}
    verified = 0
    for name, key_id, signature, number in signatures:
        public = pending.pop((name, key_id), None)
        if public is None:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(public).verify(signature, text.encode("utf-8"))
        except (InvalidSignature, ValueError):
            raise Refused(
                f"{path}.line[{number}]", f"a signature by {name} that fails", "a pinned key's must verify"
            ) from None
        verified += 1
    if not verified:
        raise Refused(path, f"{len(signatures)} signature(s), none by a pinned key", "a pinned key must sign it")


def read_checkpoint(top: dict[str, Any], field: str) -> tuple[str, list[Any], tuple[str, int, bytes]]:
    """Rule P9 (P17) for one field: (text, signatures, (origin, size, root))."""
    if type(top[field]) is not str:
        raise Refused(field, ledger._describe(top[field]), "a checkpoint is the text of a signed note")
    text, signatures = parse_note(top[field], field)
    return text, signatures, parse_checkpoint(text, field)


def read_hashes(top: dict[str, Any], field: str) -> list[bytes]:
    """Rules P12 and P18."""
    items = top[field]
    if type(items) is not list:
        raise Refused(field, ledger._describe(items), "a list of hashes")
    if len(items) > MAX_HASHES:
        raise Refused(field, f"{len(items)} hashes", f"at most {MAX_HASHES}")
    out = []
    for position, item in enumerate(items):
        value = b64(item)
        if value is None or len(value) != 32:
            raise Refused(f"{field}[{position}]", repr(item)[:60], "each hash is 32 bytes in standard base64")
        out.append(value)
    return out


# -- the bundle (section 6) ---------------------------------------------------------------------


def read_document(data: bytes) -> dict[str, Any]:
    """Rules P1-P8."""
    if len(data) > MAX_BYTES:  # P1
        raise Refused("$", f"{len(data)} bytes", f"a bundle is at most {MAX_BYTES} bytes")
    top = ledger.parse(data)  # P2-P5: the ledger page's L1-L4
    if type(top) is not dict:  # P6
        raise Refused("$", ledger._describe(top), "an object is required here")
    if top.get("schema") != SCHEMA:  # P7
        raise Refused("schema", ledger._describe(top.get("schema")), f"the schema is {SCHEMA!r}")
    if type(top.get("version")) is not int:
        raise Refused("version", ledger._describe(top.get("version")), "the version is an integer")
    if top["version"] != VERSION:
        raise Refused("version", repr(top["version"]), f"this verifier reads {SCHEMA} v{VERSION}")
    if top.get("kind") not in FIELDS:
        raise Refused("kind", ledger._describe(top.get("kind")), "'inclusion' or 'consistency'")
    ledger._exact_keys(top, FIELDS[top["kind"]], "$")  # P8
    return top


def check_entry(entry: Any, index: int) -> None:
    """Rule P11: L10-L20 and L22 at ``entry`` (L21 passes by construction: the entry's own previous)."""
    previous = entry.get("previous") if type(entry) is dict else None
    try:
        ledger.check_entry(entry, index, previous if type(previous) is str else ledger.GENESIS)
    except Refused as exc:
        raise Refused(exc.path.replace(f"entries[{index}]", "entry", 1), exc.found, exc.rule) from None


def verify_inclusion_bundle(top: dict[str, Any], keys: list[Any], origin: str | None) -> str:
    """Rules P9-P16."""
    text, signatures, (cp_origin, size, root) = read_checkpoint(top, "checkpoint")  # P9
    index = top["leaf_index"]
    if type(index) is not int or index < 0:  # P10
        raise Refused("leaf_index", ledger._describe(index), "a leaf index is a non-negative integer")
    check_entry(top["entry"], index)  # P11
    proof = read_hashes(top, "audit_path")  # P12
    if origin is not None and cp_origin != origin:  # P13
        raise Refused("checkpoint.line[0]", repr(cp_origin[:80]), f"the expected origin is {origin!r}")
    check_signatures(text, signatures, keys, "checkpoint")  # P14
    if index >= size:  # P15
        raise Refused("leaf_index", str(index), f"the leaf index lies below the checkpoint's size {size}")
    verify_inclusion(index, size, leaf_hash(top["entry"]), proof, root, "audit_path")  # P16
    entry = top["entry"]
    return f"ok inclusion of entries[{index}] ({entry['event']}) in {cp_origin} at size {size} root {root.hex()}"


def verify_consistency_bundle(top: dict[str, Any], keys: list[Any], origin: str | None) -> str:
    """Rules P17-P22."""
    old_text, old_sigs, (old_origin, m, old_root) = read_checkpoint(top, "old_checkpoint")  # P17
    new_text, new_sigs, (new_origin, n, new_root) = read_checkpoint(top, "new_checkpoint")
    proof = read_hashes(top, "consistency_path")  # P18
    if origin is not None and old_origin != origin:  # P19
        raise Refused("old_checkpoint.line[0]", repr(old_origin[:80]), f"the expected origin is {origin!r}")
    check_signatures(old_text, old_sigs, keys, "old_checkpoint")
    if new_origin != (origin or old_origin):
        raise Refused("new_checkpoint.line[0]", repr(new_origin[:80]), f"the origin is {origin or old_origin!r}")
    check_signatures(new_text, new_sigs, keys, "new_checkpoint")
    if m == 0:  # P20
        raise Refused("old_checkpoint.line[1]", "0", "every tree extends the empty one: it proves nothing")
    if m > n:  # P21
        raise Refused("new_checkpoint.line[1]", str(n), f"the new size is at least the old size {m}")
    verify_consistency(m, n, proof, old_root, new_root, "consistency_path")  # P22
    return f"ok consistency of {old_origin} from size {m} to {n} root {new_root.hex()}"


def verify_bytes(data: bytes, vkeys: list[str], origin: str | None = None) -> str:
    """Check a bundle's bytes against pinned verifier keys; return the ``ok`` line or raise ``Refused``."""
    keys = [parse_vkey(text) for text in vkeys]
    top = read_document(data)
    if top["kind"] == "inclusion":
        return verify_inclusion_bundle(top, keys, origin)
    return verify_consistency_bundle(top, keys, origin)


def _read(path: Path, limit: int) -> bytes:
    """A regular file's bytes, at most ``limit + 1`` read; a fifo or a device is refused, never waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        chunks, total = [], 0
        while total <= limit and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Verify a contextmesh.proof v1 bundle against pinned keys.")
    parser.add_argument("bundle", type=Path, help="the proof bundle file")
    parser.add_argument("--key", action="append", default=[], metavar="VKEY", help="a pinned verifier key")
    parser.add_argument("--key-file", action="append", default=[], type=Path, help="a file holding a verifier key")
    parser.add_argument("--origin", help="the origin the checkpoints must name (contextmesh.session/<id>)")
    args = parser.parse_args(argv)
    vkeys = list(args.key)
    for key_file in args.key_file:
        try:
            vkeys.append(_read(key_file, 4096).decode("ascii"))
        except (OSError, UnicodeDecodeError) as exc:
            parser.error(f"--key-file {key_file}: cannot read a verifier key ({exc})")
    if not vkeys:
        parser.error("pin at least one verifier key with --key or --key-file")
    try:
        for text in vkeys:
            parse_vkey(text)
    except ValueError as exc:
        parser.error(f"--key: {exc}")
    try:
        data = _read(args.bundle, MAX_BYTES)
    except OSError as exc:
        sys.stderr.write(f"{args.bundle}: cannot read ({exc.strerror})\n")
        return 1
    try:
        line = verify_bytes(data, vkeys, args.origin)
    except Refused as exc:
        sys.stderr.write(f"{args.bundle}: refused at {exc}\n")
        return 1
    sys.stdout.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

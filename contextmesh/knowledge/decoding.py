"""The byte-level rules a document passes before anything parses it.

A document is untrusted: it may be a binary file with a ``.md`` name, a file in another encoding,
or a single line of fifty megabytes. :func:`decode_document` refuses each of those with one line
naming the file and the place, and returns text with one kind of line ending. The checks run in a
fixed order, cheapest and most telling first:

1. at most :data:`MAX_DOCUMENT_BYTES` bytes (a caller reading from disk reads one byte more than
   that and stops, so a huge file is never read whole);
2. not UTF-16 or UTF-32 (their byte-order marks), and no NUL byte — a binary file;
3. strict UTF-8, refused at the byte offset of the first invalid sequence (a leading UTF-8
   byte-order mark is dropped);
4. no control character other than tab, line feed, carriage return and form feed;
5. no line longer than :data:`MAX_LINE_CHARS` characters, so no later stage ever works on a
   line longer than that.

``\\r\\n`` and lone ``\\r`` become ``\\n``. :func:`read_bounded` reads a file from disk under the
same kind of bound, and refuses anything that is not a regular file without blocking on it (a
named pipe given as a document would otherwise wait forever for a writer).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from contextmesh.knowledge.corpus import CorpusError

__all__ = ["MAX_DOCUMENT_BYTES", "MAX_LINE_CHARS", "DocumentError", "decode_document", "read_bounded"]

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
MAX_LINE_CHARS = 100_000
_UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\xfe\xff", "UTF-16"),
    (b"\xff\xfe", "UTF-16"),
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")


class DocumentError(CorpusError):
    """A document (or a folder of them) that cannot be read as it is; ``path`` names file and place."""


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def decode_document(name: str, data: bytes) -> str:
    """The text of the document ``name`` (its bytes ``data``), or a :class:`DocumentError`."""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentError(
            name,
            f"more than {MAX_DOCUMENT_BYTES} bytes",
            f"a document is at most {MAX_DOCUMENT_BYTES} bytes ({MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB)",
        )
    for bom, encoding in _WIDE_BOMS:
        if data.startswith(bom):
            raise DocumentError(name, f"a {encoding} byte-order mark", "documents are UTF-8 text; save it as UTF-8")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise DocumentError(
            f"{name}: byte {nul}", "a NUL byte (a binary file)", "documents are UTF-8 text, not binary files"
        )
    skip = len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0
    try:
        text = data[skip:].decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        offset = exc.start + skip
        bad = data[offset : exc.end + skip].hex(" ")
        raise DocumentError(
            f"{name}: byte {offset} (line {_line_of(data, offset)})",
            f"bytes that are not UTF-8 ({bad})",
            "documents are UTF-8 text",
        ) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    control = _CONTROL.search(text)
    if control is not None:
        line = text.count("\n", 0, control.start()) + 1
        raise DocumentError(
            f"{name}:{line}",
            f"the control character {control.group()!r}",
            "documents hold no control characters other than tab, line feed, carriage return and form feed",
        )
    # A scan line by line, not a regular expression: ``[^\n]{N}`` retried at every offset is
    # quadratic on a file of lines just under the limit.
    for line, content in enumerate(text.split("\n"), start=1):
        if len(content) <= MAX_LINE_CHARS:
            continue
        raise DocumentError(
            f"{name}:{line}",
            f"a line of more than {MAX_LINE_CHARS} characters",
            f"a line of a document is at most {MAX_LINE_CHARS} characters",
        )
    return text


def read_bounded(path: Path, name: str, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the regular file ``path`` (named ``name`` in errors).

    Opened non-blocking and checked with ``fstat`` on the open descriptor, so a pipe or device is
    refused rather than waited on, and a file swapped after a check is still the file checked.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise DocumentError(name, "no such file", "the file must exist") from None
    except OSError as exc:
        raise DocumentError(name, exc.strerror or "an unreadable file", "the file must be readable") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DocumentError(name, "not a regular file", "only regular files are read")
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            try:
                chunk = os.read(fd, min(remaining, 1 << 20))
            except OSError as exc:
                raise DocumentError(name, exc.strerror or "a read error", "the file must be readable") from None
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)

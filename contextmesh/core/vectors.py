"""The compact on-disk form of a node's embedding.

An embedding is stored as text ``i8:<base64>``: the vector scaled to unit length, each component
multiplied by 127 and rounded half-to-even into a signed byte, the bytes base64-encoded (RFC 4648,
with padding). A 256-dimensional default embedding is 344 characters on disk instead of a list of
256 JSON floats, and similarity over the bytes is exact integer arithmetic, so it is the same on
every machine.

Invariants:

1. :func:`encode` then :func:`decode` returns the same signed bytes.
2. :func:`check` accepts exactly the strings :func:`encode` and :func:`encode_bytes` can produce
   for 1..4096 dimensions.
3. :func:`encode_bytes` stores already-quantised signed bytes verbatim and refuses, with
   :class:`InputError`, what :func:`check` would refuse (a ``0x80`` byte, fewer than 1 or more
   than 4096 bytes), so its output always passes :func:`check`. It does not rescale, so its
   vectors need not have unit length.
4. :func:`checked_bytes` returns the bytes of exactly the texts :func:`check` accepts (``None``
   for every other), and a :class:`VectorStore` gives back from a handle exactly the text whose
   bytes it took.

In memory a graph keeps its vectors in one :class:`VectorStore`: the bytes of every vector back to
back in one ``bytearray``, each node holding only a handle (offset and length in one integer). A
256-dimensional vector then costs its 256 bytes and a small integer, where its text cost 393 bytes
as a Python string; the text is rebuilt on each read (well under a microsecond).
"""

from __future__ import annotations

import base64
import binascii
import math
from array import array
from collections.abc import Sequence

from contextmesh.core.errors import InputError

__all__ = [
    "MAX_DIMENSIONS",
    "PREFIX",
    "VectorStore",
    "check",
    "checked_bytes",
    "decode",
    "dot",
    "encode",
    "encode_bytes",
    "quantize",
]

PREFIX = "i8:"
MAX_DIMENSIONS = 4096
_LENGTH_BITS = 13  # a handle's low bits hold the length, 1..4096 < 2**13
_LENGTH_MASK = (1 << _LENGTH_BITS) - 1


def quantize(values: Sequence[float]) -> array[int]:
    """Scale ``values`` to unit length and round each component into a signed byte."""
    norm = math.sqrt(math.fsum(v * v for v in values))
    scale = 127.0 / norm if norm > 0 else 0.0
    return array("b", (max(-127, min(127, round(v * scale))) for v in values))


def encode(values: Sequence[float]) -> str:
    """The stored text of a vector."""
    return PREFIX + base64.b64encode(quantize(values).tobytes()).decode("ascii")


def encode_bytes(raw: bytes) -> str:
    """The stored text of already-quantised signed bytes (for synthetic or precomputed vectors)."""
    if not 1 <= len(raw) <= MAX_DIMENSIONS:
        raise InputError("vector", f"{len(raw)} bytes", f"a stored vector has 1 to {MAX_DIMENSIONS} dimensions")
    if b"\x80" in raw:  # -128 would make a string check() refuses (invariant 3)
        raise InputError("vector", "a byte 0x80 (-128)", "components lie within ±127")
    return PREFIX + base64.b64encode(raw).decode("ascii")


def decode(text: str) -> array[int]:
    """The signed bytes of a stored vector (call :func:`check` first on untrusted text)."""
    return array("b", base64.b64decode(text[len(PREFIX) :], validate=True))


def checked_bytes(text: str) -> bytes | None:
    """The signed bytes of a stored vector's text, or ``None`` when :func:`check` would refuse it.

    One decode and one re-encode: a text equal to the canonical encoding of what it decodes to is
    padded base64 of the alphabet, so this accepts exactly what :func:`check` accepts.
    """
    if not text.startswith(PREFIX):
        return None
    body = text[len(PREFIX) :]
    try:
        raw = binascii.a2b_base64(body)
    except (binascii.Error, ValueError):
        return None
    if (
        not 1 <= len(raw) <= MAX_DIMENSIONS
        or b"\x80" in raw
        or binascii.b2a_base64(raw, newline=False) != body.encode()
    ):
        return None
    return raw


class VectorStore:
    """The vectors of one graph, back to back in one ``bytearray``; a handle is ``offset << 13 | length``.

    Append-only: a replaced vector's bytes stay where they were, so a handle, once given, always
    reads the same text (a copied record may share it).
    """

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data = bytearray()

    def __len__(self) -> int:
        return len(self._data)

    def add(self, raw: bytes) -> int:
        """Store already-checked vector bytes; return their handle."""
        handle = len(self._data) << _LENGTH_BITS | len(raw)
        self._data += raw
        return handle

    def add_many(self, vectors: Sequence[bytes | None]) -> list[int | None]:
        """Store many checked vectors at once (``None`` stores nothing); their handles, in order.

        One join and one append, not one ``bytearray`` growth per vector (a loader's 10**6).
        """
        handles: list[int | None] = []
        offset = len(self._data)
        for raw in vectors:
            if raw is None:
                handles.append(None)
                continue
            handles.append(offset << _LENGTH_BITS | len(raw))
            offset += len(raw)
        self._data += b"".join(raw for raw in vectors if raw is not None)
        return handles

    def add_text(self, text: str) -> int | None:
        """Store a vector's text; ``None`` (nothing stored) when it is not a valid stored vector."""
        raw = checked_bytes(text)
        return None if raw is None else self.add(raw)

    def raw(self, handle: int) -> bytes:
        """The signed bytes behind a handle."""
        start = handle >> _LENGTH_BITS
        return bytes(self._data[start : start + (handle & _LENGTH_MASK)])

    def text(self, handle: int) -> str:
        """The stored text behind a handle."""
        start = handle >> _LENGTH_BITS
        body = binascii.b2a_base64(self._data[start : start + (handle & _LENGTH_MASK)], newline=False)
        return PREFIX + body.decode("ascii")


def check(text: str) -> str | None:
    """Why ``text`` is not a stored vector, or ``None`` when it is one."""
    if not text.startswith(PREFIX):
        return f"a stored vector starts with {PREFIX!r}"
    body = text[len(PREFIX) :]
    try:
        raw = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return "the part after 'i8:' must be padded base64"
    if base64.b64encode(raw).decode("ascii") != body:
        return "the base64 must be in its canonical padded form"
    if not 1 <= len(raw) <= MAX_DIMENSIONS:
        return f"a stored vector has 1 to {MAX_DIMENSIONS} dimensions, this one has {len(raw)}"
    if b"\x80" in raw:  # -128 is never produced: components are clamped to ±127
        return "a component of -128 cannot come from the encoder"
    return None


def dot(left: array[int], right: array[int]) -> int:
    """Integer dot product of two quantised vectors of equal length (0 when lengths differ)."""
    if len(left) != len(right):
        return 0
    return sum(a * b for a, b in zip(left, right, strict=True))

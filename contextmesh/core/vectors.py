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
"""

from __future__ import annotations

import base64
import binascii
import math
from array import array
from collections.abc import Sequence

from contextmesh.core.errors import InputError

__all__ = ["MAX_DIMENSIONS", "PREFIX", "check", "decode", "dot", "encode", "encode_bytes", "quantize"]

PREFIX = "i8:"
MAX_DIMENSIONS = 4096


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

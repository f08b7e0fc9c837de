"""Reading the float tensors of a ``.safetensors`` file, with nothing but the standard library.

The format: an 8-byte little-endian header length, a JSON header naming each tensor's ``dtype``,
``shape`` and ``data_offsets`` (begin, end) into the bytes that follow, then those bytes. A
sentence-embedding model ships its weights this way; reading it here means loading a model needs
neither PyTorch nor the ``safetensors`` package, and a file is checked before any of it is trusted.

Invariants:

1. Every refusal is an :class:`~contextmesh.core.errors.InputError` naming the file and the tensor,
   raised before anything is returned (a file is untrusted: fail closed).
2. Only ``F32`` tensors are returned; tensors of other types (``position_ids`` is ``I64``) are
   listed in the header and skipped, since a model's weights need none of them.
3. A tensor's byte range must lie inside the data section and match its shape exactly.
"""

from __future__ import annotations

import json
import math
import struct
import sys
from array import array
from dataclasses import dataclass
from pathlib import Path

from contextmesh.core.errors import InputError

__all__ = ["MAX_HEADER_BYTES", "Tensor", "read_tensors"]

MAX_HEADER_BYTES = 16 * 1024 * 1024  # a real header is a few kilobytes; refuse a hostile length early
_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


@dataclass(frozen=True)
class Tensor:
    """One float tensor: its shape and its values, row-major."""

    shape: tuple[int, ...]
    values: array[float]


def read_tensors(path: Path) -> dict[str, Tensor]:
    """The ``F32`` tensors of the file at ``path`` by name (see the module's invariants)."""
    where = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(where, type(exc).__name__, "a model's weights file must be readable") from None
    if len(raw) < 8:
        raise InputError(where, f"{len(raw)} bytes", "a safetensors file starts with an 8-byte header length")
    (length,) = struct.unpack("<Q", raw[:8])
    if length > min(MAX_HEADER_BYTES, len(raw) - 8):
        raise InputError(where, f"a header of {length} bytes", "the header fits in the file and in 16 MiB")
    try:
        header = json.loads(raw[8 : 8 + length])
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InputError(where, "a header that is not JSON", "a safetensors header is a JSON object") from None
    if not isinstance(header, dict):
        raise InputError(where, type(header).__name__, "a safetensors header is a JSON object")
    data = memoryview(raw)[8 + length :]
    return {
        name: tensor
        for name, entry in header.items()
        if name != "__metadata__" and (tensor := _tensor(f"{where}:{name}", entry, data)) is not None
    }


def _tensor(where: str, entry: object, data: memoryview) -> Tensor | None:
    if not isinstance(entry, dict):
        raise InputError(where, type(entry).__name__, "a tensor's entry is an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in _SIZES:
        raise InputError(f"{where}.dtype", repr(dtype), f"one of {', '.join(sorted(_SIZES))}")
    if not (isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise InputError(f"{where}.shape", repr(shape)[:60], "a list of non-negative integers")
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        and 0 <= offsets[0] <= offsets[1] <= len(data)
    ):
        raise InputError(f"{where}.data_offsets", repr(offsets)[:60], f"[begin, end] within the {len(data)} data bytes")
    begin, end = offsets
    if end - begin != math.prod(shape) * _SIZES[dtype]:
        raise InputError(
            where, f"{end - begin} bytes", f"shape {shape} of {dtype} needs {math.prod(shape) * _SIZES[dtype]}"
        )
    if dtype != "F32":
        return None
    values = array("f")
    values.frombytes(data[begin:end])
    if sys.byteorder == "big":  # the format is little-endian
        values.byteswap()
    return Tensor(tuple(shape), values)

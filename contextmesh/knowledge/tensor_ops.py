"""The few array operations a BERT-family encoder needs, over NumPy when it is installed, else plain Python.

:mod:`~contextmesh.knowledge.sentence_model` runs one forward pass written once against
:class:`Ops`. :class:`NumpyOps` (the ``embeddings`` extra brings NumPy) makes a real model fast
enough to embed a corpus; :class:`PythonOps` needs nothing beyond the standard library, so the
same loading and forward code runs, and is tested on a tiny model, where NumPy is absent (the core
install). Both compute in the model's own float32 weights; ``gelu`` is the exact (erf) form.

Invariant: each operation is a pure function of its inputs, so an embedding is the same on every
run on one machine. That needs one BLAS thread (OpenBLAS on two threads gives other bytes for
all-MiniLM-L6-v2): this module sets ``OPENBLAS_NUM_THREADS=1`` when it is first to import NumPy,
and ``pinned`` holds BLAS to one thread with threadpoolctl (the extra brings it) around each pass.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
from contextlib import AbstractContextManager, nullcontext
from operator import mul
from typing import Any, Protocol

from contextmesh.knowledge.safetensors_file import Tensor

__all__ = ["NumpyOps", "Ops", "PythonOps", "best_ops"]

Array = Any  # a backend's own 2-D array (a NumPy array, or a list of row lists)


class Ops(Protocol):
    """The operations of one forward pass; arrays are backend-specific."""

    name: str

    def matrix(self, tensor: Tensor) -> Array: ...
    def vector(self, tensor: Tensor) -> Array: ...
    def rows(self, table: Array, ids: list[int]) -> Array: ...
    def add(self, left: Array, right: Array) -> Array: ...
    def linear(self, x: Array, weight: Array, bias: Array) -> Array: ...
    def layer_norm(self, x: Array, gain: Array, bias: Array, eps: float) -> Array: ...
    def gelu(self, x: Array) -> Array: ...
    def attention(self, q: Array, k: Array, v: Array, heads: int) -> Array: ...
    def pooled(self, x: Array, mode: str) -> list[float]: ...
    def pinned(self) -> AbstractContextManager[object]: ...


class PythonOps:
    """Plain Python lists: slow, dependency-free (for tiny models and the core install)."""

    name = "python"

    def matrix(self, tensor: Tensor) -> Array:
        rows, cols = tensor.shape
        values = tensor.values.tolist()
        return [values[r * cols : (r + 1) * cols] for r in range(rows)]

    def vector(self, tensor: Tensor) -> Array:
        return tensor.values.tolist()

    def rows(self, table: Array, ids: list[int]) -> Array:
        return [list(table[i]) for i in ids]

    def add(self, left: Array, right: Array) -> Array:
        return [[a + b for a, b in zip(lr, rr, strict=True)] for lr, rr in zip(left, right, strict=True)]

    def linear(self, x: Array, weight: Array, bias: Array) -> Array:
        return [[b + sum(map(mul, row, w)) for w, b in zip(weight, bias, strict=True)] for row in x]

    def layer_norm(self, x: Array, gain: Array, bias: Array, eps: float) -> Array:
        out = []
        for row in x:
            mean = sum(row) / len(row)
            var = sum((v - mean) ** 2 for v in row) / len(row)
            scale = 1.0 / math.sqrt(var + eps)
            out.append([(v - mean) * scale * g + b for v, g, b in zip(row, gain, bias, strict=True)])
        return out

    def gelu(self, x: Array) -> Array:
        return [[0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in row] for row in x]

    def attention(self, q: Array, k: Array, v: Array, heads: int) -> Array:
        width = len(q[0]) // heads
        out: list[list[float]] = [[] for _ in q]
        for h in range(heads):
            cut = slice(h * width, (h + 1) * width)
            qh, kh, vh = [r[cut] for r in q], [r[cut] for r in k], [r[cut] for r in v]
            for i, qrow in enumerate(qh):
                scores = [sum(map(mul, qrow, krow)) / math.sqrt(width) for krow in kh]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                out[i].extend(
                    sum(w * vrow[j] for w, vrow in zip(weights, vh, strict=True)) / total for j in range(width)
                )
        return out

    def pooled(self, x: Array, mode: str) -> list[float]:
        if mode == "cls":
            return list(x[0])
        return [sum(column) / len(x) for column in zip(*x, strict=True)]

    def pinned(self) -> AbstractContextManager[object]:
        return nullcontext()


class NumpyOps:
    """NumPy float32 arrays, as the model's weights are stored."""

    name = "numpy"

    def __init__(self) -> None:
        if "numpy" not in sys.modules:
            # One BLAS thread: a sentence's matrices are small, so threads cost more than they give
            # (ten times slower on a loaded two-core machine), and one thread fixes the sum order.
            os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        import numpy  # noqa: PLC0415  (optional: the embeddings extra brings it)

        self.np = numpy
        try:  # NumPy imported before us keeps its threads: hold BLAS to one thread around each pass
            self._pool: Any = importlib.import_module("threadpoolctl").ThreadpoolController()
        except ImportError:
            self._pool = None

    def matrix(self, tensor: Tensor) -> Array:
        return self.np.frombuffer(tensor.values, dtype=self.np.float32).reshape(tensor.shape)

    def vector(self, tensor: Tensor) -> Array:
        return self.np.frombuffer(tensor.values, dtype=self.np.float32)

    def rows(self, table: Array, ids: list[int]) -> Array:
        return table[ids]

    def add(self, left: Array, right: Array) -> Array:
        return left + right

    def linear(self, x: Array, weight: Array, bias: Array) -> Array:
        return x @ weight.T + bias

    def layer_norm(self, x: Array, gain: Array, bias: Array, eps: float) -> Array:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / self.np.sqrt(var + eps) * gain + bias

    def gelu(self, x: Array) -> Array:
        return 0.5 * x * (1.0 + self._erf(x / math.sqrt(2.0)))

    def _erf(self, x: Array) -> Array:
        # Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7, below float32's resolution near 1).
        np = self.np
        sign = np.sign(x)
        a = np.abs(x)
        t = 1.0 / (1.0 + 0.3275911 * a)
        poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
        return sign * (1.0 - poly * np.exp(-a * a))

    def attention(self, q: Array, k: Array, v: Array, heads: int) -> Array:
        n, width = q.shape[0], q.shape[1] // heads
        qh, kh, vh = (m.reshape(n, heads, width).transpose(1, 0, 2) for m in (q, k, v))
        scores = qh @ kh.transpose(0, 2, 1) / math.sqrt(width)
        scores = self.np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        return (scores @ vh).transpose(1, 0, 2).reshape(n, heads * width)

    def pooled(self, x: Array, mode: str) -> list[float]:
        row = x[0] if mode == "cls" else x.mean(axis=0)
        return [float(v) for v in row]

    def pinned(self) -> AbstractContextManager[object]:
        """One BLAS thread for a forward pass: OpenBLAS on two threads sums in another order."""
        return self._pool.limit(limits=1, user_api="blas") if self._pool is not None else nullcontext()


def best_ops() -> Ops:
    """NumPy's operations when NumPy is installed, else plain Python's."""
    try:
        return NumpyOps()
    except ImportError:
        return PythonOps()

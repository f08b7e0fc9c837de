"""Embeddings: a protocol any model can implement, and a deterministic default that needs no download.

The default :class:`HashedEmbedder` hashes word stems and their character trigrams into a
fixed number of dimensions (CRC-32 picks the dimension and the sign), then stores the vector in
the compact ``i8:`` form of :mod:`contextmesh.core.vectors`. It knows nothing a model would learn, so it
matches surface forms, not meaning; plug a real model in through :class:`Embedder` for that.

:class:`VectorIndex` seeds walks without scanning every node: an inverted index from content stems
to the nodes whose labels hold them gathers candidates, and only those are scored by cosine.

Invariants:

1. ``HashedEmbedder.embed`` is a pure function of the text (CRC-32, no hash seed).
2. ``VectorIndex.search`` scores only nodes sharing at least one stem with the query.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterable
from typing import Protocol

from contextmesh.core import vectors
from contextmesh.knowledge.text import content_stems

__all__ = ["DEFAULT_DIMENSIONS", "Embedder", "HashedEmbedder", "VectorIndex", "cosine"]

DEFAULT_DIMENSIONS = 512
_SCALE = 127 * 127


class Embedder(Protocol):
    """Anything that turns text into a stored vector (``i8:`` text, see :mod:`contextmesh.core.vectors`)."""

    name: str
    dimensions: int

    def embed(self, text: str) -> str:
        """The stored vector of ``text``."""
        ...


class HashedEmbedder:
    """Hashed stem and character-trigram features: deterministic, offline, surface-level."""

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        self.name = f"hashed-{dimensions}"
        self.dimensions = dimensions

    def features(self, text: str) -> list[tuple[str, float]]:
        """The weighted features of ``text``: each stem (1.0) and its trigrams (0.4)."""
        out: list[tuple[str, float]] = []
        for token in content_stems(text):
            out.append(("w:" + token, 1.0))
            padded = f"#{token}#"
            out.extend(("c:" + padded[i : i + 3], 0.4) for i in range(len(padded) - 2))
        return out

    def embed(self, text: str) -> str:
        """The stored vector of ``text`` (all zeros when it has no content words)."""
        values = [0.0] * self.dimensions
        for feature, weight in self.features(text):
            code = zlib.crc32(feature.encode("utf-8"))
            values[code % self.dimensions] += weight if (code >> 16) & 1 else -weight
        return vectors.encode(values)


def cosine(left: array[int], right: array[int]) -> float:
    """Cosine similarity of two stored (unit, quantised) vectors, in [-1, 1]."""
    return vectors.dot(left, right) / _SCALE


class VectorIndex:
    """An inverted index from content stems to node ids, with the nodes' decoded vectors."""

    def __init__(self) -> None:
        self._postings: dict[str, list[str]] = {}
        self._vectors: dict[str, array[int]] = {}

    def __len__(self) -> int:
        return len(self._vectors)

    def add(self, node_id: str, text: str, embedding: str) -> None:
        """Index one node under the stems of ``text``."""
        self._vectors[node_id] = vectors.decode(embedding)
        for token in dict.fromkeys(content_stems(text)):
            self._postings.setdefault(token, []).append(node_id)

    def vector(self, node_id: str) -> array[int] | None:
        """The decoded vector of an indexed node."""
        return self._vectors.get(node_id)

    def candidates(self, stems: Iterable[str]) -> list[str]:
        """Nodes sharing at least one stem, in first-seen order."""
        seen: dict[str, None] = {}
        for token in stems:
            for node_id in self._postings.get(token, ()):
                seen.setdefault(node_id)
        return list(seen)

    def search(self, query_text: str, query_vector: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` best candidates by cosine (ties: first indexed first)."""
        query = vectors.decode(query_vector)
        scored = [
            (node_id, cosine(query, self._vectors[node_id])) for node_id in self.candidates(content_stems(query_text))
        ]
        order = {node_id: i for i, node_id in enumerate(self._vectors)}
        scored.sort(key=lambda item: (-item[1], order[item[0]]))
        return scored[:k]

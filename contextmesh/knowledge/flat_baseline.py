"""The flat baseline: top-k retrieval over the corpus chunks, what every walk is compared with.

A walk's token cost is reported beside what plain similarity retrieval would have sent for the same
question; this module is that comparison and nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextmesh.core import vectors
from contextmesh.knowledge.embed import Embedder, cosine
from contextmesh.knowledge.text import estimate_tokens

if TYPE_CHECKING:
    from contextmesh.knowledge.pipeline import Chunk

__all__ = ["FlatBaseline"]


class FlatBaseline:
    """Flat top-k retrieval over the corpus chunks with the same embedder: what a walk is compared with."""

    def __init__(self, chunks: list[Chunk], embedder: Embedder) -> None:
        self.embedder = embedder
        self.chunks = {chunk.key: chunk for chunk in chunks}
        # Flat retrieval ranks every chunk: it is the baseline, so it gets no index shortcut.
        self._vectors = {chunk.key: vectors.decode(embedder.embed(chunk.text)) for chunk in chunks}

    def tokens(self, question: str, k: int) -> int:
        """Tokens flat top-k would send: the k best chunks by similarity, words × 1.3 each."""
        query = vectors.decode(self.embedder.embed(question))
        ranked = sorted(self.chunks, key=lambda key: -cosine(query, self._vectors[key]))
        return sum(estimate_tokens(self.chunks[key].text) for key in ranked[:k])

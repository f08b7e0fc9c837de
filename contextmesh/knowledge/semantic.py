"""Semantic similarity between a question and the nodes a walk reached, from a real embedding model.

A walk ranks what it *reached*; this module only says how close in meaning each reached node's
label is to the question (:mod:`~contextmesh.knowledge.ranking` blends that with the lexical
evidence), so a node that wins on meaning still wins on the typed path that reached it.

The hashed default embedder measures word and trigram overlap, which BM25F already scores with
better weighting, so it contributes nothing here (``for_question`` returns ``None`` and no vector
is computed: the default's ranking and latency are unchanged). A model's vectors are the node's
stored embedding when its dimensions are the model's, else the label embedded on first use (a
graph built with the default and asked with a model), cached per label.

Invariant: a pure function of the embedder, the graph's labels and embeddings, and the question.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING

from contextmesh.core import vectors
from contextmesh.knowledge.embed import Embedder, HashedEmbedder, cosine

if TYPE_CHECKING:
    from contextmesh.core.graph import ContextGraph

__all__ = ["SemanticMatch"]


class SemanticMatch:
    """Cosine similarity of a question to graph nodes under one embedder (see the module docstring)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.active = not isinstance(embedder, HashedEmbedder)
        self._vectors: dict[str, tuple[str, array[int]]] = {}
        self._query: tuple[str, array[int]] | None = None

    def for_question(self, graph: ContextGraph, question: str) -> Callable[[str], float] | None:
        """``node id → cosine`` for ``question``, or ``None`` for an embedder without meaning."""
        if not self.active:
            return None
        if self._query is None or self._query[0] != question:  # an ambiguous question settles twice
            self._query = (question, vectors.decode(self.embedder.embed(question)))
        query = self._query[1]

        def similarity(node_id: str) -> float:
            return cosine(query, self._vector(graph, node_id))

        return similarity

    def _vector(self, graph: ContextGraph, node_id: str) -> array[int]:
        node = graph.node(node_id)
        cached = self._vectors.get(node_id)
        if cached is not None and cached[0] == node.label:
            return cached[1]
        stored = vectors.decode(node.embedding) if node.embedding is not None else None
        vector = stored if stored is not None and len(stored) == self.embedder.dimensions else None
        if vector is None:
            vector = vectors.decode(self.embedder.embed(node.label))
        self._vectors[node_id] = (node.label, vector)
        return vector

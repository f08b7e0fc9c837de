"""What a walk's score is made of: named features, their weights, and the weighted sum.

The features are computed by :func:`~contextmesh.knowledge.ranking.rank`; keeping their names and
the weights here lets a ranker be a weight vector, fitted (``bench/fit_ranking.py``) or set by hand
(ADR 0014, 0041), without touching the ranking code.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FEATURES", "SHAPE", "Weights", "score_of"]

# What a candidate's score is made of, one number each (:attr:`Candidate.features`); the score is
# their weighted sum with the weights of the same names (:meth:`Weights.linear`). ``lexical`` and
# ``closeness`` are the two shares of the confidence (their sum); ``hop`` is minus the edges past
# the first; ``intent``, ``node_type``, ``causal``, ``decision`` and ``evidence`` are 0 or 1.
FEATURES = (
    "lexical",
    "closeness",
    "other_end",
    "intent",
    "node_type",
    "causal",
    "hop",
    "semantic",
    "lexical_raw",
    "closeness_raw",
    "decision",
    "evidence",
)
SHAPE = slice(3, 7)  # intent, node_type, causal, hop: what the path and the node's kind add


@dataclass(frozen=True)
class Weights:
    """The blend; see the module docstring."""

    entity_terms: float = 1.0
    headline: float = 2.0
    context: float = 0.3
    lexical: float = 1.0
    closeness: float = 1.0
    intent: float = 0.4
    node_type: float = 0.4
    other_end: float = 0.6  # 0.6-0.8 a plateau on every dev set (ADR 0036); 0.2 before
    causal: float = 0.0  # off: a why answer need not say "because" (0 → 99/118 on dev, 0.05-0.2 → 98; ADR 0036)
    hop: float = 0.02
    unheld: float = 0.5
    semantic: float = 0.2
    semantic_floor: float = 0.4
    lexical_raw: float = 0.0
    closeness_raw: float = 0.0
    decision: float = 0.0
    evidence: float = 0.0

    def linear(self) -> tuple[float, ...]:
        """The weights of :data:`FEATURES`, in their order."""
        return tuple(float(getattr(self, name)) for name in FEATURES)


def score_of(features: tuple[float, ...], linear: tuple[float, ...]) -> float:
    """A candidate's score: its features weighted (:meth:`Weights.linear`), summed in order."""
    total = 0.0
    for value, weight in zip(features, linear, strict=True):
        total += weight * value
    return total

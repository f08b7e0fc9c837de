"""Fit the walk's ranking weights and its dead-end threshold on the development questions only.

    .venv/bin/python bench/fit_ranking.py [--folds 5] [--loss softmax|pairwise] [--l2 0.01] [--top 10]
                                          [--features lexical,closeness,other_end,intent,node_type,hop]

Every development question of every set (demo and water dev halves, the project's set,
demo-extra, groundstation; held-out questions are never loaded) is asked once with the hand-set
weights of ADR 0014 (:data:`HAND`, the weights the features are collected under, so the fit does
not depend on the weights the walker ships). For each question the script keeps the candidates the
walk ranked, with their features (:data:`~contextmesh.knowledge.ranking.FEATURES`), whether each
has fallen or is in doubt, and which are gold. It then *replays* the walk's choice for any weights
and threshold (order by score, skip what has fallen, only across the relation for a strict
relational question, prefer what is not in doubt, the confidence check) and checks the replay
against the real walk under the hand weights, printing how many questions agree.

The ranker is linear in the features: a softmax over each question's answerable candidates (the
probability of its golds) or pairwise logistic (each gold over each other candidate, averaged per
question), over the golds and the ``--top`` best other candidates, with an L2 penalty, fitted by
damped Newton steps in numpy — deterministic. The weights are rescaled so ``lexical`` is 1 (the
confidence's own scale, so the model-only ``semantic`` weight keeps its meaning; the order does not
change). The threshold is the confidence at which the replayed walk gets most development
questions right, answerable and unanswerable together (the middle of the best plateau, 0.01 grid).

**The honest estimate** is K-fold cross-validation by question (fold = a digest of the question's
corpus and id): weights and threshold fitted on K−1 folds, the held-back fold replayed with them,
beside the hand weights replayed on the same folds and the hand *procedure* (one weight at a time
over small grids, ADR 0014/0036) re-run on the K−1 folds. The hand weights were chosen on all of
these questions, so their row is an in-sample figure; the grid-search row is its cross-validated
counterpart. Questions the replay cannot model (an ambiguous acronym tries several readings; a
walk that dead-ends before ranking) keep their hand-weight outcome in every row. ADR 0041 records
the result: no fit beat the hand weights, so the walker ships them.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import answers

from contextmesh.knowledge import confidence, traverse
from contextmesh.knowledge.ranking import FEATURES, Weights, rank
from contextmesh.knowledge.standing import doubted, fallen

SETS = ("demo", "water", "project", "groundstation", "demo-extra")
HAND = Weights(
    lexical=1.0, closeness=1.0, other_end=0.6, intent=0.4, node_type=0.4, causal=0.0, hop=0.02, semantic=0.2,
    lexical_raw=0.0, closeness_raw=0.0, decision=0.0, evidence=0.0,
)  # fmt: skip
HAND_THRESHOLD = 0.20
FITTED = tuple(name for name in FEATURES if name != "semantic")  # the hashed embedder gives no meaning
GRID = tuple(round(0.05 + 0.01 * i, 2) for i in range(36))  # 0.05 … 0.40


@dataclass
class Case:
    """One development question as the replay needs it."""

    key: str
    answerable: bool
    actual: bool  # graded right under the hand weights
    features: np.ndarray | None = None  # (candidates × features); None: not replayable
    pool: np.ndarray | None = None  # may answer: standing, and across the relation when that is required
    doubt: np.ndarray | None = None
    sure: np.ndarray | None = None  # the confidence of each candidate
    tiebreak: np.ndarray | None = None  # (hops, graph order), the walk's tie-break
    gold: np.ndarray | None = None


def collect() -> list[Case]:
    """Ask every development question under the hand weights, keeping what each walk ranked."""
    calls: list[dict[str, Any]] = []

    def capture(graph: Any, index: Any, reached: Any, **kwargs: Any) -> list[Any]:
        ranked = rank(graph, index, reached, **kwargs)
        intent = kwargs["intent"]
        strict = any(e in confidence.STRICT_RELATIONS and e not in intent.leaning for e in intent.edges)
        rows = []
        for c in ranked:
            why = fallen(graph, c.node_id) if c.anchor is None and not c.crossed and not intent.past else None
            doubt = why is None and not intent.past and doubted(graph, c.node_id) is not None
            rows.append((c, why is not None, doubt, graph.seq(c.node_id)))
        calls.append({"rows": rows, "strict": strict})
        return ranked

    vars(traverse)["rank"] = capture
    vars(traverse)["Weights"] = lambda: HAND  # every walker, as_of ones too
    confidence.THRESHOLD = HAND_THRESHOLD
    load = answers._load
    answers._load = lambda path: [q for q in load(path) if q["split"] == "dev"]  # never a held-out question
    ask = answers._ask
    cases: list[Case] = []

    def asked(world: answers.World, question: dict[str, Any]) -> traverse.Walk:
        calls.clear()
        walk = ask(world, question)
        case = Case(str(question["id"]), bool(question["answerable"]), answers._grade_walk(world, question, walk))
        wanted: set[str] = set()
        for gold in question.get("gold") or []:
            wanted |= world.gold_ids(gold)
        if len(calls) == 1 and calls[0]["rows"]:
            _fill(case, calls[0], wanted)
        cases.append(case)
        return walk

    answers._ask = asked
    answers.run(SETS, "own")
    return cases


def _fill(case: Case, call: dict[str, Any], wanted: set[str]) -> None:
    rows = call["rows"]
    case.features = np.array([c.features for c, *_ in rows], dtype=np.float64)
    case.pool = np.array([not down and (c.crossed or not call["strict"]) for c, down, _, _ in rows])
    case.doubt = np.array([doubt for _, _, doubt, _ in rows])
    case.sure = np.array([round(c.confidence, 6) for c, *_ in rows])
    case.tiebreak = np.array([(c.hops, seq) for c, _, _, seq in rows], dtype=np.float64)
    case.gold = np.array([c.node_id in wanted for c, *_ in rows])


def replay(case: Case, weights: np.ndarray, threshold: float) -> bool:
    """Whether the walk would be right with these weights and this threshold."""
    if case.features is None:
        return case.actual
    assert case.pool is not None and case.doubt is not None and case.sure is not None
    assert case.tiebreak is not None and case.gold is not None
    picks = np.flatnonzero(case.pool)
    if picks.size == 0:
        return not case.answerable
    scores = case.features[picks] @ weights
    order = picks[np.lexsort((case.tiebreak[picks, 1], case.tiebreak[picks, 0], -scores))]
    clear = [i for i in order if not case.doubt[i]]
    best: int | None = None
    if clear and case.sure[clear[0]] >= threshold:
        best = clear[0]
    else:
        best = next((i for i in order if case.doubt[i] and case.sure[i] >= threshold), None)
    if best is None:
        return not case.answerable
    return case.answerable and bool(case.gold[best])


def accuracy(cases: list[Case], weights: np.ndarray, threshold: float) -> tuple[int, int, int, int]:
    """(answerable right, answerable, unanswerable dead-ended, unanswerable)."""
    right = [replay(c, weights, threshold) for c in cases]
    answerable = [r for r, c in zip(right, cases, strict=True) if c.answerable]
    unanswerable = [r for r, c in zip(right, cases, strict=True) if not c.answerable]
    return sum(answerable), len(answerable), sum(unanswerable), len(unanswerable)


def fit(
    cases: list[Case], l2: float, loss: str = "pairwise", top: int = 10, fitted: tuple[str, ...] = FITTED
) -> np.ndarray:
    """Pairwise logistic (gold over each other candidate, averaged per question) or a softmax over each
    question's pool, L2-penalised, by damped Newton steps; rescaled so ``lexical`` is 1.

    ``top`` (0: all) keeps, of each pool, the golds and the ``top`` best other candidates under the
    hand weights: the competitors the choice is actually between, not the far tail."""
    hand = np.array(HAND.linear())
    columns = [FEATURES.index(name) for name in fitted]
    lists = []
    for c in cases:
        if c.features is None or not c.answerable:
            continue
        assert c.pool is not None and c.gold is not None
        pool = np.flatnonzero(c.pool)
        if top:
            assert c.tiebreak is not None
            order = pool[np.lexsort((c.tiebreak[pool, 1], c.tiebreak[pool, 0], -(c.features[pool] @ hand)))]
            others = [i for i in order if not c.gold[i]][:top]
            pool = np.array(sorted([*np.flatnonzero(c.gold & c.pool), *others]), dtype=int)
        gold = c.gold[pool]
        if gold.any() and not gold.all():
            lists.append((c.features[pool][:, columns], gold))
    w = np.array([getattr(HAND, name) for name in fitted], dtype=np.float64)
    pairs = [
        (x[gold][:, None, :] - x[~gold][None, :, :]).reshape(-1, len(columns)) for x, gold in lists
    ]  # gold − other, one row per pair

    def pairwise(w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        loss, grad, hess = l2 * float(w @ w), 2.0 * l2 * w, 2.0 * l2 * np.eye(w.size)
        for d in pairs:
            margin = d @ w
            loss += float(np.logaddexp(0.0, -margin).mean())
            p = 1.0 / (1.0 + np.exp(margin))  # d loss / d (−margin)
            grad -= d.T @ p / len(d)
            hess += (d * (p * (1.0 - p))[:, None]).T @ d / len(d)
        return loss, grad, hess

    def softmax(w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        loss, grad, hess = l2 * float(w @ w), 2.0 * l2 * w, 2.0 * l2 * np.eye(w.size)
        for x, gold in lists:
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            q = np.where(gold, p, 0.0)
            q /= q.sum()
            loss += float(np.log(np.exp(s - s.max()).sum()) - np.log(np.exp(s[gold] - s.max()).sum()))
            grad += x.T @ (p - q)
            hess += x.T @ (np.diag(p) - np.outer(p, p)) @ x  # the all-candidates part: PSD, a safe step
        return loss, grad, hess

    objective = pairwise if loss == "pairwise" else softmax
    for _ in range(100):
        value, grad, hess = objective(w)
        step = np.linalg.solve(hess, grad)
        size = 1.0
        while size > 1e-6 and objective(w - size * step)[0] > value - 1e-4 * size * float(grad @ step):
            size /= 2.0
        w = w - size * step
        if float(np.abs(size * step).max()) < 1e-9:
            break
    full = np.zeros(len(FEATURES))
    full[columns] = w
    full[FEATURES.index("semantic")] = HAND.semantic * abs(w[0])
    return np.asarray(full / abs(w[0]), dtype=np.float64)


def threshold_for(cases: list[Case], weights: np.ndarray) -> float:
    """The middle of the widest-first plateau of grid thresholds with the most development questions right."""
    scores = [sum(accuracy(cases, weights, t)[::2]) for t in GRID]
    best = max(scores)
    first = scores.index(best)
    last = first
    while last + 1 < len(GRID) and scores[last + 1] == best:
        last += 1
    return GRID[(first + last) // 2]


# The hand procedure (ADR 0014, 0036): one weight at a time over a small grid, by development accuracy.
SEARCH = {
    "closeness": (0.5, 0.75, 1.0, 1.5, 2.0),
    "other_end": (0.2, 0.4, 0.6, 0.8, 1.0),
    "intent": (0.1, 0.2, 0.3, 0.4, 0.5, 0.6),
    "node_type": (0.1, 0.2, 0.3, 0.4, 0.5, 0.6),
    "hop": (0.0, 0.02, 0.05, 0.1, 0.15),
}
START = {"closeness": 1.0, "other_end": 0.2, "intent": 0.3, "node_type": 0.3, "hop": 0.05}  # grid middles


def grid_search(cases: list[Case]) -> np.ndarray:
    """The hand procedure replayed: two sweeps of one-weight-at-a-time grid search from the grids' middles,
    keeping the current value on a tie (right answerable and unanswerable questions, at the hand threshold)."""
    weights = np.array(HAND.linear())
    for name, value in START.items():
        weights[FEATURES.index(name)] = value
    for _ in range(2):
        for name, grid in SEARCH.items():
            column = FEATURES.index(name)
            best, best_value = sum(accuracy(cases, weights, HAND_THRESHOLD)[::2]), weights[column]
            for value in grid:
                weights[column] = value
                right = sum(accuracy(cases, weights, HAND_THRESHOLD)[::2])
                if right > best:
                    best, best_value = right, value
            weights[column] = best_value
    return weights


def fold_of(key: str, folds: int) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % folds


def cross_validate(cases: list[Case], folds: int, l2: float, loss: str, top: int, fitted: tuple[str, ...]) -> None:
    hand = np.array(HAND.linear())
    arms = ("hand", "hand, fitted threshold", "fitted", "fitted, hand threshold", "grid search (hand way)")
    totals = {name: np.zeros(4, dtype=int) for name in arms}
    for k in range(folds):
        train = [c for c in cases if fold_of(c.key, folds) != k]
        test = [c for c in cases if fold_of(c.key, folds) == k]
        weights = fit(train, l2, loss, top, fitted)
        totals["hand"] += accuracy(test, hand, HAND_THRESHOLD)
        totals["hand, fitted threshold"] += accuracy(test, hand, threshold_for(train, hand))
        totals["fitted"] += accuracy(test, weights, threshold_for(train, weights))
        totals["fitted, hand threshold"] += accuracy(test, weights, HAND_THRESHOLD)
        totals["grid search (hand way)"] += accuracy(test, grid_search(train), HAND_THRESHOLD)
    for name, (a, n, u, m) in totals.items():
        print(f"{folds}-fold CV, {name:22}: answerable {a}/{n}, unanswerable dead-ended {u}/{m}, all {a + u}/{n + m}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--l2", type=float, default=0.01)
    parser.add_argument("--loss", choices=("pairwise", "softmax"), default="softmax")
    parser.add_argument(
        "--features",
        default="lexical,closeness,other_end,intent,node_type,hop",
        help="the features fitted (the rest weigh 0)",
    )
    parser.add_argument("--top", type=int, default=10, help="competitors per question (0: the whole pool)")
    args = parser.parse_args(argv)
    started, cpu = time.perf_counter(), time.process_time()
    cases = collect()
    hand = np.array(HAND.linear())
    replayable = [c for c in cases if c.features is not None]
    agree = sum(replay(c, hand, HAND_THRESHOLD) == c.actual for c in replayable)
    print(f"development questions: {len(cases)}; replayable {len(replayable)}, replay agrees with the walk on {agree}")
    a, n, u, m = accuracy(cases, hand, HAND_THRESHOLD)
    print(f"hand weights, all dev: answerable {a}/{n}, unanswerable dead-ended {u}/{m}")
    fitted = tuple(name for name in args.features.split(",") if name)
    unknown = [name for name in fitted if name not in FITTED]
    if unknown or "lexical" not in fitted:
        parser.error(f"--features {args.features!r}: each must be one of {', '.join(FITTED)}, lexical among them")
    cross_validate(cases, args.folds, args.l2, args.loss, args.top, fitted)
    weights = fit(cases, args.l2, args.loss, args.top, fitted)
    threshold = threshold_for(cases, weights)
    a, n, u, m = accuracy(cases, weights, threshold)
    print(f"fitted on all dev (threshold {threshold}): answerable {a}/{n}, unanswerable dead-ended {u}/{m}")
    for name, value in zip(FEATURES, weights, strict=True):
        print(f"  {name:14} hand {getattr(HAND, name):6.3f}  fitted {value:8.4f}")
    print(f"threshold fitted for the hand weights: {threshold_for(cases, hand)} (shipped: {HAND_THRESHOLD})")
    print(f"wall {time.perf_counter() - started:.1f} s, CPU {time.process_time() - cpu:.1f} s")
    print("load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

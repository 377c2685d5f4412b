"""Ranking metrics over target-level relevance.

A query has one or more targets (symbols); a ranked list is reduced to, per
position, the index of the target it hits (or None). A target counts once,
at its first hit, so several chunks of one symbol (overloads) never inflate a score.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

METRIC_NAMES = ("MRR@10", "R@1", "R@5", "R@10", "nDCG@10")


def first_hits(hits: Sequence[int | None]) -> list[bool]:
    """Per rank: True when this rank is the first hit of some target."""
    seen: set[int] = set()
    flags: list[bool] = []
    for target in hits:
        fresh = target is not None and target not in seen
        if fresh:
            seen.add(target)
        flags.append(fresh)
    return flags


def reciprocal_rank(hits: Sequence[int | None], k: int = 10) -> float:
    for rank, target in enumerate(hits[:k], start=1):
        if target is not None:
            return 1.0 / rank
    return 0.0


def recall_at(hits: Sequence[int | None], n_targets: int, k: int) -> float:
    if n_targets <= 0:
        raise ValueError("a query needs at least one target")
    found = {t for t in hits[:k] if t is not None}
    return len(found) / n_targets


def ndcg_at(hits: Sequence[int | None], n_targets: int, k: int = 10) -> float:
    if n_targets <= 0:
        raise ValueError("a query needs at least one target")
    dcg = sum(1.0 / math.log2(rank + 1) for rank, fresh in enumerate(first_hits(hits[:k]), start=1) if fresh)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(n_targets, k) + 1))
    return dcg / ideal


@dataclass(frozen=True)
class QueryScore:
    mrr10: float
    r1: float
    r5: float
    r10: float
    ndcg10: float

    def values(self) -> tuple[float, ...]:
        return (self.mrr10, self.r1, self.r5, self.r10, self.ndcg10)


def score_query(hits: Sequence[int | None], n_targets: int) -> QueryScore:
    return QueryScore(
        mrr10=reciprocal_rank(hits, 10),
        r1=recall_at(hits, n_targets, 1),
        r5=recall_at(hits, n_targets, 5),
        r10=recall_at(hits, n_targets, 10),
        ndcg10=ndcg_at(hits, n_targets, 10),
    )


def mean_scores(scores: Iterable[QueryScore]) -> tuple[float, ...]:
    rows = [s.values() for s in scores]
    if not rows:
        return tuple(float("nan") for _ in METRIC_NAMES)
    return tuple(sum(col) / len(rows) for col in zip(*rows, strict=True))

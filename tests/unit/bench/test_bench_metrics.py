from __future__ import annotations

import math

import pytest
from bench.lib.metrics import (
    mean_scores,
    ndcg_at,
    recall_at,
    reciprocal_rank,
    score_query,
)


def test_reciprocal_rank_uses_first_hit_within_cutoff() -> None:
    assert reciprocal_rank([None, None, 0]) == pytest.approx(1 / 3)
    assert reciprocal_rank([None] * 10 + [0]) == 0.0
    assert reciprocal_rank([]) == 0.0


def test_recall_counts_each_target_once() -> None:
    hits = [0, 0, None, 1]
    assert recall_at(hits, 2, 1) == 0.5
    assert recall_at(hits, 2, 3) == 0.5
    assert recall_at(hits, 2, 5) == 1.0


def test_ndcg_ignores_repeated_hits_of_one_target() -> None:
    assert ndcg_at([0, 0, 0], 1) == 1.0
    assert ndcg_at([None, 0], 1) == pytest.approx(1 / math.log2(3))
    ideal_two = 1 + 1 / math.log2(3)
    assert ndcg_at([None, 0, 1], 2) == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / ideal_two)


def test_score_and_mean() -> None:
    first = score_query([0], 1)
    miss = score_query([None, None], 1)
    assert first.values() == (1.0, 1.0, 1.0, 1.0, 1.0)
    assert miss.values() == (0.0, 0.0, 0.0, 0.0, 0.0)
    assert mean_scores([first, miss]) == (0.5, 0.5, 0.5, 0.5, 0.5)


def test_a_query_without_targets_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one target"):
        score_query([None], 0)

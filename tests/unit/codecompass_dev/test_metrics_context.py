from __future__ import annotations

import math

import pytest

from codecompass.common.tokens import count_tokens
from codecompass_dev.evaluation.metrics import (
    ContextScore,
    percentile,
    recall_within_budget,
    result_text,
    result_token_cost,
    score_context,
    tokens_per_answer,
)


def test_result_text_is_a_header_line_then_the_source() -> None:
    text = result_text("src/a.ts", "A.run", "run() {}")
    assert text == "// src/a.ts > A.run\nrun() {}"
    assert result_token_cost("src/a.ts", "A.run", "run() {}") == count_tokens(text)


def test_budget_counts_a_result_only_when_it_fits_entirely() -> None:
    # Costs 300 + 200 = 500 fit a 500 budget exactly; the third result would end at 600.
    hits = [None, 0, 1]
    costs = [300, 200, 100]
    assert recall_within_budget(hits, costs, 2, 500) == 0.5
    assert recall_within_budget(hits, costs, 2, 499) == 0.0
    assert recall_within_budget(hits, costs, 2, 600) == 1.0


def test_budget_walk_stops_at_the_first_result_that_overflows() -> None:
    # A small target after a huge result is past the cut, even though it alone would fit.
    assert recall_within_budget([None, 0], [10_000, 5], 1, 2_000) == 0.0


def test_budget_counts_each_target_once() -> None:
    assert recall_within_budget([0, 0, 0], [1, 1, 1], 2, 100) == 0.5


def test_budget_argument_errors() -> None:
    with pytest.raises(ValueError, match="at least one target"):
        recall_within_budget([None], [1], 0, 10)
    with pytest.raises(ValueError, match="one cost per result"):
        recall_within_budget([None, 0], [1], 1, 10)


def test_tokens_per_answer_sums_the_top_ten() -> None:
    assert tokens_per_answer(list(range(1, 21))) == sum(range(1, 11))
    assert tokens_per_answer([7, 8]) == 15
    assert tokens_per_answer([]) == 0


def test_score_context_reports_every_budget() -> None:
    score = score_context([0, None], [400, 3_000], 1, budgets=(100, 500, 8_000))
    assert score == ContextScore(recall_by_budget=(0.0, 1.0, 1.0), answer_tokens=3_400)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 95) == 95.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([5.0], 95) == 5.0
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile([1.0], 101)

from __future__ import annotations

import math

import pytest

from codecompass_dev.evaluation.metrics import (
    FileTarget,
    RelevantFile,
    file_hit,
    mean_scores,
    ndcg_at,
    recall_at,
    reciprocal_rank,
    relevant_files,
    score_files,
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


# --- File level -----------------------------------------------------------------------------


def test_a_whole_file_target_is_hit_by_any_result_of_that_file() -> None:
    score = score_files([("src/a.ts", 40, 60), ("src/b.ts", 1, 9)], [FileTarget("src/b.ts")])
    assert score.values() == (pytest.approx(1 / math.log2(3)), 1.0)


def test_each_file_counts_once_however_many_of_its_chunks_come_first() -> None:
    # Members of one large file fill the top: the second relevant file is found at rank 4.
    results = [("big.ts", 1, 5), ("big.ts", 6, 9), ("big.ts", 10, 20), ("small.ts", 3, 4)]
    score = score_files(results, [FileTarget("big.ts"), FileTarget("small.ts")])
    ideal = 1 + 1 / math.log2(3)
    assert score.ndcg10 == pytest.approx((1 + 1 / math.log2(5)) / ideal)
    assert score.r10 == 1.0


def test_a_span_target_needs_an_overlapping_result_and_the_module_chunk_overlaps_it() -> None:
    target = [FileTarget("src/a.ts", 10, 20)]
    assert score_files([("src/a.ts", 30, 40)], target).values() == (0.0, 0.0)
    assert score_files([("src/a.ts", 20, 25)], target).values() == (1.0, 1.0)  # shares line 20
    assert score_files([("src/a.ts", 1, 21)], target).values() == (1.0, 1.0)  # covers it
    # `<module top level>` spans the file: it overlaps every symbol of the file.
    assert score_files([("src/a.ts", 1, 300)], target).values() == (1.0, 1.0)
    assert score_files([("src/b.ts", 10, 20)], target).values() == (0.0, 0.0)


def test_two_symbols_of_one_file_are_one_relevant_file_hit_by_either_span() -> None:
    targets = [FileTarget("a.ts", 1, 5), FileTarget("a.ts", 50, 60), FileTarget("b.ts", 3, 4)]
    assert relevant_files(targets) == [RelevantFile("a.ts", ((1, 5), (50, 60))), RelevantFile("b.ts", ((3, 4),))]
    score = score_files([("a.ts", 55, 56), ("a.ts", 2, 3), ("c.ts", 1, 9)], targets)
    # a.ts at rank 1 (its second span); its second hit adds nothing; b.ts never comes.
    assert score.ndcg10 == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert score.r10 == 0.5


def test_a_whole_file_target_makes_its_file_whole_whatever_else_names_it() -> None:
    targets = [FileTarget("a.ts", 1, 5), FileTarget("a.ts")]
    assert relevant_files(targets) == [RelevantFile("a.ts", ())]
    assert score_files([("a.ts", 90, 99)], targets).values() == (1.0, 1.0)


def test_file_ideal_is_over_at_most_ten_files_and_only_the_top_ten_count() -> None:
    targets = [FileTarget(f"f{i}.ts") for i in range(12)]
    results = [(f"f{i}.ts", 1, 2) for i in range(12)]
    assert score_files(results, targets).ndcg10 == pytest.approx(1.0)
    assert score_files(results, targets).r10 == pytest.approx(10 / 12)
    assert file_hit("f11.ts", 1, 2, relevant_files(targets)) == 11


def test_file_scores_need_a_target() -> None:
    with pytest.raises(ValueError, match="at least one target"):
        score_files([("a.ts", 1, 2)], [])

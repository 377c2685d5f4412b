"""Merging two searches' candidates (policy.merge): one per id, the higher score, best first."""

from __future__ import annotations

from codecompass.policy.merge import merge_results


def merged(first: list[tuple[str, float]], second: list[tuple[str, float]]) -> tuple[list[tuple[str, float]], int]:
    return merge_results(first, second, key=lambda c: c[0], score=lambda c: c[1])


def test_one_candidate_per_id_with_the_higher_score_best_first() -> None:
    results, added = merged([("a", 0.9), ("b", 0.5)], [("b", 0.7), ("c", 0.6), ("a", 0.2)])
    assert results == [("a", 0.9), ("b", 0.7), ("c", 0.6)] and added == 1


def test_a_tie_keeps_the_first_searchs_candidate_and_order() -> None:
    first = [("a", 0.5), ("b", 0.5)]
    results, added = merged(first, [("b", 0.5), ("a", 0.5)])
    assert results == first and results[0] is first[0] and added == 0
    assert merged([], []) == ([], 0)

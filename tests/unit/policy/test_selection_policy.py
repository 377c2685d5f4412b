"""Selection policy (policy.selection): what the gate keeps and when children merge. Pure values."""

from __future__ import annotations

from codecompass.policy.selection import (
    LOW_CONFIDENCE_RESULTS,
    MERGE_MIN_COVER,
    NOISE_FLOOR_SHARE,
    gate,
    merge_earned,
    relevance_as_sent,
)


def test_a_candidate_without_relevance_is_gated_on_its_score_clamped() -> None:
    assert relevance_as_sent(0.3, 0.9) == 0.3
    assert [relevance_as_sent(None, s) for s in (-0.5, 0.42, 3.0)] == [0.0, 0.42, 1.0]


def test_a_confident_answer_keeps_down_to_the_noise_floor_in_the_order_sent() -> None:
    floor = 0.5 * NOISE_FLOOR_SHARE
    assert gate([0.3, 0.8, floor, floor - 0.01, 0.6], 0.5) == [0, 1, 2, 4]


def test_a_low_confidence_answer_keeps_its_best_that_matched() -> None:
    assert LOW_CONFIDENCE_RESULTS == 2 and gate([0.4, 0.0, 0.3, 0.2, 0.1], 0.5) == [0, 2]
    assert gate([0.0, 0.0], 0.5) == [] and gate([], 0.5) == []


def test_children_merge_when_they_cover_enough_of_their_parent() -> None:
    assert merge_earned(MERGE_MIN_COVER) and merge_earned(1.0)
    assert not merge_earned(MERGE_MIN_COVER - 0.01)

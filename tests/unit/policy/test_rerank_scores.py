"""A rerank provider's answer as scores in [0, 1] (policy.rerank)."""

from __future__ import annotations

from codecompass.policy.rerank import model_score, scores_by_rank


def test_a_providers_score_is_clamped_to_the_unit_interval() -> None:
    assert [model_score(v) for v in (-0.2, 0, 0.37, 1, 3.5)] == [0.0, 0.0, 0.37, 1.0, 1.0]


def test_an_llms_picks_score_by_rank() -> None:
    assert scores_by_rank([7]) == {7: 1.0}
    assert scores_by_rank([]) == {}

"""The rerank blend (policy.blend), which the gateway applies to the rerank service's raw scores."""

from __future__ import annotations

import pytest

from codecompass.policy.blend import rerank_blend


def test_the_blend_weights_the_model_and_keeps_a_share_of_the_first_stage() -> None:
    assert rerank_blend(0.1, 1.0, 0.65) == pytest.approx(1.0 * 0.65 + 0.1 * 0.35)
    assert rerank_blend(0.9, 0.0, 0.65) == pytest.approx(0.9 * 0.35)


def test_an_unscored_candidate_keeps_its_first_stage_score() -> None:
    assert rerank_blend(0.5, None, 0.65) == 0.5

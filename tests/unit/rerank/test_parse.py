"""Seed 001's parsing table plus the messy answers real LLMs give."""

from __future__ import annotations

import pytest

from codecompass.policy.rerank import scores_by_rank
from codecompass.rerank.providers import RerankFailed, build_prompt, parse_indices


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[2, 0, 4]", [2, 0, 4]),
        ("[0, 99, 2]", [0, 2]),  # out of range dropped
        ("[2, 2, 0, 2]", [2, 0]),  # duplicates dropped, first position kept
        ("```json\n[3, 1]\n```", [3, 1]),  # markdown fences
        ("```\n[1]\n```", [1]),
        ("Here is the ranking: [4, 3] because snippet 4 defines it.", [4, 3]),
        ('[1, "x", null, 2.5, 3.0, true, -1, 0]', [1, 3, 0]),  # non-integers and negatives dropped
    ],
)
def test_valid_answers_become_clean_index_lists(content: str, expected: list[int]) -> None:
    assert parse_indices(content, 5) == expected


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('"2, 0, 4"', "invalid_response"),  # no JSON array: fall back
        ("2, 0, 4", "invalid_response"),
        ("[2, 0,", "invalid_response"),
        ("[2 0 4]", "invalid_response"),
        ("[]", "empty_ranking"),
        ("[99, 100]", "empty_ranking"),  # nothing valid left
        ('["a", "b"]', "empty_ranking"),
    ],
)
def test_unusable_answers_raise_with_a_reason(content: str, reason: str) -> None:
    with pytest.raises(RerankFailed) as caught:
        parse_indices(content, 5)
    assert caught.value.reason == reason


def test_rank_scores_descend_from_one() -> None:
    assert scores_by_rank([2, 0, 4, 1]) == {2: 1.0, 0: 0.75, 4: 0.5, 1: 0.25}


def test_prompt_numbers_snippets_and_states_the_maximum() -> None:
    prompt = build_prompt('how does "auth" work', ["def login(): ...", "class User: ..."], 5)
    assert "[0]\ndef login(): ..." in prompt and "[1]\nclass User: ..." in prompt
    assert "Maximum 5 snippets." in prompt and '"how does \\"auth\\" work"' in prompt

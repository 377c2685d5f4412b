"""A rerank provider's answer as scores in [0, 1]: a model's raw relevance clamped, an LLM's ordered
picks scored by rank. The rerank service's providers call these; the blend with the first stage is
`policy.blend`'s, in the gateway."""

from __future__ import annotations

from collections.abc import Sequence


def model_score(value: float) -> float:
    """A provider's relevance_score (Cohere, Voyage) in [0, 1]: whatever a provider sends outside it
    must not outweigh the blend's share of the first stage."""
    return min(1.0, max(0.0, float(value)))


def scores_by_rank(indices: Sequence[int]) -> dict[int, float]:
    """Rank i of n becomes 1 - i/n: the first pick scores 1, the last 1/n."""
    return {index: 1.0 - rank / len(indices) for rank, index in enumerate(indices)}
